/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sampling slots shared among owners (sample-quota.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sample-quota.h"

void sample_quota_fill(const uint64_t *want, size_t n, uint64_t total, uint64_t *share) {
        size_t open = 0;
        uint64_t left = total;

        /* Rounds: each owner still wanting more gets an even part of what is left,
         * at most what it still wants; stops when nothing is left or nobody wants.
         * Each round satisfies an owner, or hands out all but less than one part per
         * owner, which the rounds after hand out one by one. */
        for (size_t i = 0; i < n; i++) {
                share[i] = 0;
                open += want[i] > 0;
        }
        while (left > 0 && open > 0) {
                /* What is left after the even parts waits for the next round (the
                 * owners a part satisfied leave room to the others); below one each,
                 * one each in order. */
                uint64_t part = left / open ? left / open : 1;
                size_t still = 0;

                for (size_t i = 0; i < n && left > 0; i++) {
                        uint64_t give = part;

                        if (share[i] >= want[i])
                                continue;
                        if (give > want[i] - share[i])
                                give = want[i] - share[i];
                        share[i] += give;
                        left -= give;
                        still += share[i] < want[i];
                }
                open = still;
        }
}

void sample_quota_init(struct sample_quota *q, uint64_t total) {
        *q = (struct sample_quota) { .total = total };
}

void sample_quota_done(struct sample_quota *q) {
        free(q->v);
        *q = (struct sample_quota) {};
}

static struct sample_quota_owner *find(const struct sample_quota *q, uid_t uid) {
        size_t lo = 0, hi = q->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (q->v[mid].uid == uid)
                        return &q->v[mid];
                if (q->v[mid].uid < uid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static struct sample_quota_owner *get(struct sample_quota *q, uid_t uid) {
        struct sample_quota_owner *o = find(q, uid);
        size_t at = 0;

        if (o)
                return o;
        if (q->n == q->cap) {
                size_t nc = q->cap ? q->cap * 2 : 8;
                struct sample_quota_owner *v = realloc(q->v, nc * sizeof(*v));
                if (!v)
                        return NULL;
                q->v = v;
                q->cap = nc;
        }
        while (at < q->n && q->v[at].uid < uid)
                at++;
        memmove(q->v + at + 1, q->v + at, (q->n - at) * sizeof(*q->v));
        q->v[at] = (struct sample_quota_owner) { .uid = uid };
        q->n++;
        return &q->v[at];
}

/* The shares again, and the owners that want and hold nothing and were never refused
 * forgotten (their count would say nothing). */
static void reshare(struct sample_quota *q) {
        uint64_t want[64], share[64], *w = want, *s = share;
        size_t k = 0;

        for (size_t i = 0; i < q->n; i++)
                if (q->v[i].want || q->v[i].held || q->v[i].refused)
                        q->v[k++] = q->v[i];
        q->n = k;
        if (q->n > 64) {
                w = malloc(q->n * sizeof(*w));
                s = malloc(q->n * sizeof(*s));
        }
        if (!w || !s) {
                /* Out of memory: nobody gains a slot until the next change. */
                for (size_t i = 0; i < q->n; i++)
                        q->v[i].share = q->v[i].held < q->v[i].want ? q->v[i].held : q->v[i].want;
        } else {
                for (size_t i = 0; i < q->n; i++)
                        w[i] = q->v[i].want;
                sample_quota_fill(w, q->n, q->total, s);
                for (size_t i = 0; i < q->n; i++)
                        q->v[i].share = s[i];
        }
        if (w != want)
                free(w);
        if (s != share)
                free(s);
}

int sample_quota_want(struct sample_quota *q, uid_t uid, uint64_t want) {
        struct sample_quota_owner *o = want ? get(q, uid) : find(q, uid);

        if (!o)
                return want ? -ENOMEM : 0;
        if (o->want == want)
                return 0;
        o->want = want;
        reshare(q);
        return 0;
}

uint64_t sample_quota_share(const struct sample_quota *q, uid_t uid) {
        const struct sample_quota_owner *o = find(q, uid);

        return o ? o->share : 0;
}

bool sample_quota_take(struct sample_quota *q, uid_t uid) {
        struct sample_quota_owner *o = find(q, uid);
        uint64_t held = 0;

        for (size_t i = 0; i < q->n; i++)
                held += q->v[i].held;
        if (o && o->held < o->share && held < q->total) {
                o->held++;
                return true;
        }
        sample_quota_refuse(q, uid, 1);
        return false;
}

void sample_quota_refuse(struct sample_quota *q, uid_t uid, uint64_t n) {
        struct sample_quota_owner *o = n ? get(q, uid) : NULL;

        if (o)
                o->refused += n;
        q->refused += n;
}

void sample_quota_give(struct sample_quota *q, uid_t uid, uint64_t n) {
        struct sample_quota_owner *o = find(q, uid);

        if (o)
                o->held = o->held > n ? o->held - n : 0;
}

uint64_t sample_quota_room(const struct sample_quota *q, uid_t uid) {
        const struct sample_quota_owner *o = find(q, uid);

        return o && o->share > o->held ? o->share - o->held : 0;
}

uint64_t sample_quota_excess(const struct sample_quota *q, uid_t uid) {
        const struct sample_quota_owner *o = find(q, uid);

        return o && o->held > o->share ? o->held - o->share : 0;
}

void sample_quota_slots_init(struct sample_quota_slots *s, uint64_t total, int (*hold)(void *userdata, uint32_t id, bool on),
                             void *userdata) {
        *s = (struct sample_quota_slots) { .hold = hold, .userdata = userdata };
        sample_quota_init(&s->quota, total);
}

void sample_quota_slots_done(struct sample_quota_slots *s) {
        sample_quota_done(&s->quota);
        free(s->v);
        s->v = NULL;
        s->n = s->cap = 0;
}

/* Where id is, or would be inserted. */
static size_t slot_at(const struct sample_quota_slots *s, uint32_t id) {
        size_t lo = 0, hi = s->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->v[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static struct sample_quota_slot *slot_find(const struct sample_quota_slots *s, uint32_t id) {
        size_t at = slot_at(s, id);

        return at < s->n && s->v[at].id == id ? &s->v[at] : NULL;
}

bool sample_quota_slots_held(const struct sample_quota_slots *s, uint32_t id) {
        const struct sample_quota_slot *e = slot_find(s, id);

        return e && e->held;
}

/* What owner wants now: its ids, counted as they come and go. */
static uint64_t owner_wants(const struct sample_quota_slots *s, uid_t owner) {
        const struct sample_quota_owner *o = find(&s->quota, owner);

        return o ? o->want : 0;
}

static void release(struct sample_quota_slots *s, struct sample_quota_slot *e, uint64_t now_ms) {
        (void) s->hold(s->userdata, e->id, false);
        e->held = false;
        e->waits_ms = now_ms;
        sample_quota_give(&s->quota, e->owner, 1);
}

/* owner's id held longest, NULL if none. */
static struct sample_quota_slot *oldest_held(struct sample_quota_slots *s, uid_t owner) {
        struct sample_quota_slot *best = NULL;

        for (size_t i = 0; i < s->n; i++)
                if (s->v[i].held && s->v[i].owner == owner && (!best || s->v[i].seq < best->seq))
                        best = &s->v[i];
        return best;
}

/* Whether no other id of e's owner has waited longer than e: the next turn is its. */
static bool first_in_line(const struct sample_quota_slots *s, const struct sample_quota_slot *e) {
        for (size_t i = 0; i < s->n; i++)
                if (!s->v[i].held && s->v[i].owner == e->owner && s->v[i].waits_ms < e->waits_ms)
                        return false;
        return true;
}

/* Every owner above its share gives back its ids held longest. */
static void trim(struct sample_quota_slots *s, uint64_t now_ms) {
        for (size_t k = 0; k < s->quota.n; k++) {
                uid_t owner = s->quota.v[k].uid;
                struct sample_quota_slot *e;

                for (uint64_t n = sample_quota_excess(&s->quota, owner); n > 0 && (e = oldest_held(s, owner)); n--)
                        release(s, e, now_ms);
        }
}

/* owner has one id more (delta 1) or fewer (-1). */
static int want_again(struct sample_quota_slots *s, uid_t owner, int delta, uint64_t now_ms) {
        uint64_t w = owner_wants(s, owner);
        int r = sample_quota_want(&s->quota, owner, delta > 0 ? w + 1 : w > 0 ? w - 1 : 0);

        trim(s, now_ms);
        return r;
}

int sample_quota_slots_ask(struct sample_quota_slots *s, uint32_t id, uid_t owner, uint64_t now_ms) {
        struct sample_quota_slot *e = slot_find(s, id);
        int r;

        if (e && e->owner != owner) {
                sample_quota_slots_forget(s, id, now_ms);
                e = NULL;
        }
        if (!e) {
                size_t at = slot_at(s, id);
                if (s->n == s->cap) {
                        size_t nc = s->cap ? s->cap * 2 : 64;
                        struct sample_quota_slot *v = realloc(s->v, nc * sizeof(*v));
                        if (!v)
                                return -ENOMEM;
                        s->v = v;
                        s->cap = nc;
                }
                memmove(s->v + at + 1, s->v + at, (s->n - at) * sizeof(*s->v));
                s->v[at] = (struct sample_quota_slot) { .id = id, .owner = owner, .waits_ms = now_ms };
                s->n++;
                r = want_again(s, owner, 1, now_ms);
                if (r < 0) {
                        memmove(s->v + at, s->v + at + 1, (s->n - at - 1) * sizeof(*s->v));
                        s->n--;
                        return r;
                }
                e = slot_find(s, id);
        }
        if (e->held)
                return 1;
        /* Its owner's share is full and id waits: the id held longest gives its turn,
         * if it had one (SAMPLE_TURN_MS), to id if no other waited longer (else to
         * that one, at its next ask: by the order they waited, no phase of the asks
         * can starve one). */
        if (sample_quota_excess(&s->quota, owner) == 0) {
                const struct sample_quota_owner *o = find(&s->quota, owner);
                struct sample_quota_slot *old = o && o->share > 0 && o->held == o->share ? oldest_held(s, owner) : NULL;
                if (old && old->since_ms + SAMPLE_TURN_MS <= now_ms && first_in_line(s, e)) {
                        release(s, old, now_ms);
                        sample_quota_refuse(&s->quota, owner, 1);   /* its turn, cut */
                }
        }
        if (!sample_quota_take(&s->quota, owner))
                return 0;
        r = s->hold(s->userdata, id, true);
        if (r < 0) {
                sample_quota_give(&s->quota, owner, 1);
                return r;
        }
        e->held = true;
        e->since_ms = now_ms;
        e->seq = ++s->seq;
        return 1;
}

void sample_quota_slots_forget(struct sample_quota_slots *s, uint32_t id, uint64_t now_ms) {
        size_t at = slot_at(s, id);
        uid_t owner;

        if (at >= s->n || s->v[at].id != id)
                return;
        owner = s->v[at].owner;
        if (s->v[at].held)
                release(s, &s->v[at], now_ms);
        memmove(s->v + at, s->v + at + 1, (s->n - at - 1) * sizeof(*s->v));
        s->n--;
        (void) want_again(s, owner, -1, now_ms);
}
