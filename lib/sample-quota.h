/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sampling slots shared among owners: the software sampler's thread slots and the
 * BPF memory sampler's watched processes are bounded for the whole host, and were
 * taken first come, first served (one user's 256 threads took every slot). Each
 * owner (cg_rec.turn_uid: docs/RULES.md, "Owners") that wants slots now gets a share
 * of them, max-min fair: owners wanting less than an even share get what they want,
 * the rest is split evenly among the others. With n owners wanting, each gets at least
 * total / n (or all it wants). What an owner was refused is counted per owner.
 *
 * The caller says what each owner wants (sample_quota_want), takes a slot for an owner
 * only within its share (sample_quota_take), gives slots back (sample_quota_give), and
 * gives up an owner's slots held past its share when shares shrink (a new owner came:
 * sample_quota_excess). Pure: no clock, no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sample_quota_owner {
        uid_t uid;
        uint64_t want, held;
        uint64_t share;            /* from want, at the last change */
        uint64_t refused;          /* slots asked for beyond its share, since the start */
};

struct sample_quota {
        uint64_t total;
        struct sample_quota_owner *v;  /* sorted by uid; an owner stays once it was refused */
        size_t n, cap;
        uint64_t refused;          /* all owners' */
};

/* Max-min fair shares of total among n wants (each share at most its want, the shares
 * summing to min(total, sum of wants)), into share[]. */
void sample_quota_fill(const uint64_t *want, size_t n, uint64_t total, uint64_t *share);

void sample_quota_init(struct sample_quota *q, uint64_t total);
void sample_quota_done(struct sample_quota *q);
/* uid wants want slots now (all it could use, held ones included). -ENOMEM. */
int sample_quota_want(struct sample_quota *q, uid_t uid, uint64_t want);
uint64_t sample_quota_share(const struct sample_quota *q, uid_t uid);
/* One slot for uid if its share has room (true); else counted as refused. */
bool sample_quota_take(struct sample_quota *q, uid_t uid);
/* Counts n refusals of uid that the caller decided without asking (its waiting ones). */
void sample_quota_refuse(struct sample_quota *q, uid_t uid, uint64_t n);
void sample_quota_give(struct sample_quota *q, uid_t uid, uint64_t n);
/* Slots uid may still take within its share. */
uint64_t sample_quota_room(const struct sample_quota *q, uid_t uid);
/* Slots uid holds beyond its share now. */
uint64_t sample_quota_excess(const struct sample_quota *q, uid_t uid);

/* How long a slot is kept, at least, while others of its owner wait: long enough for
 * several scans' samples (scan_min_ms is 1 s by default), short enough that each of a
 * few hundred waiting processes or threads gets a turn within the hour. */
#define SAMPLE_TURN_MS 10000

/* A set of ids (processes) that each want one slot, for a bounded table the caller
 * fills (the BPF memory sampler's watched processes): sample_quota_slots_ask() holds a slot
 * for id when its owner's share has room; when it has none and id waits, the owner's
 * id held longest gives its slot to id once it held it SAMPLE_TURN_MS and no other
 * of the owner's ids waited longer (its turn is over: each of the owner's ids gets
 * turns, in the order they waited), and when shares shrink the owners above theirs give back
 * their ids held longest. hold(userdata, id, on) is the caller's start (on) or stop;
 * a start that fails leaves id waiting. */
struct sample_quota_slot {
        uint32_t id;
        uid_t owner;
        bool held;
        uint64_t since_ms;         /* when it was last given its slot */
        uint64_t waits_ms;         /* when it last started waiting for one */
        uint64_t seq;              /* and in which order */
};

struct sample_quota_slots {
        struct sample_quota quota;
        struct sample_quota_slot *v;     /* sorted by id */
        size_t n, cap;
        uint64_t seq;
        int (*hold)(void *userdata, uint32_t id, bool on);
        void *userdata;
};

void sample_quota_slots_init(struct sample_quota_slots *s, uint64_t total, int (*hold)(void *userdata, uint32_t id, bool on),
                             void *userdata);
void sample_quota_slots_done(struct sample_quota_slots *s);
/* id of owner wants its slot (again), now_ms (CLOCK_MONOTONIC): returns 1 when held
 * now, 0 when it waits (counted as refused), -errno (-ENOMEM, or hold's error). */
int sample_quota_slots_ask(struct sample_quota_slots *s, uint32_t id, uid_t owner, uint64_t now_ms);
/* id wants no slot any more (its slot, if held, is stopped). */
void sample_quota_slots_forget(struct sample_quota_slots *s, uint32_t id, uint64_t now_ms);
bool sample_quota_slots_held(const struct sample_quota_slots *s, uint32_t id);
