/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reads a tenant can make wait, on threads of their own, with a deadline.
 *
 * Reading /proc/PID/numa_maps, maps or smaps takes the process's mmap lock, and reading
 * its memory (process_vm_readv) faults its pages in: a tenant can make either wait for
 * good (a page of a FUSE file it serves and never answers, a lock it keeps busy). Such a
 * read runs here, on a reader thread, while its caller (the event loop, a worker) waits
 * at most the deadline. A call that overruns is left to its thread (it frees the call
 * when the read returns, if ever) and its owner gets no other read until then: one
 * stuck thread per owner at most, TENANT_READER_THREADS_MAX threads in all. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "nodemask.h"
#include "service-cpus.h"

/* Reader threads at most: the event loop and the workers each wait on one read at a
 * time; the rest is room for owners whose reads overran. */
#define TENANT_READER_THREADS_MAX 16u
/* How long a caller waits for one read: the numa_maps and smaps of a big process take
 * long to read honestly (a walk of its page tables: 41 ms for 4 GiB of 4 KiB pages,
 * measured on a 2-core EPYC VM), so the deadline grows with what it has resident, about
 * six times that rate, within bounds (tenant_reader_deadline_ms). */
#define TENANT_READ_DEADLINE_MS 2000u
#define TENANT_READ_DEADLINE_MAX_MS 10000u

/* The deadline for reading the files of a process with resident_bytes resident. */
unsigned tenant_reader_deadline_ms(uint64_t resident_bytes);

/* One read: embed it in a struct holding the read's inputs and outputs. */
struct tenant_call {
        int (*run)(struct tenant_call *c);      /* on a reader thread: 0 or -errno */
        void (*release)(struct tenant_call *c); /* frees the embedding struct and its outputs */
        uid_t owner;                            /* whose read it is (the opt-in's uid) */
        unsigned deadline_ms;                   /* 0: TENANT_READ_DEADLINE_MS */
        /* The reader's: */
        int result;
        int state;
        struct tenant_call *next;
};

struct tenant_reader_stats {
        uint64_t calls;       /* reads run */
        uint64_t overruns;    /* reads that passed their deadline */
        uint64_t refused;     /* reads not started: the owner has one that overran, or no thread free */
        unsigned threads;     /* reader threads now */
        unsigned stuck;       /* of them, in a read that overran */
};

struct tenant_reader;

/* A reader whose threads (started when first needed) run on `cpus`. deadline_cap_ms,
 * when not 0, shortens every call's deadline to at most that (tests). */
int tenant_reader_new(const nb_cpumask *cpus, unsigned deadline_cap_ms, struct tenant_reader **ret);
/* Stops the idle threads. One still in a read that overran cannot be stopped: the reader
 * is then left to it (a leak at exit, not a use after free). */
void tenant_reader_free(struct tenant_reader *tr);

/* Runs c->run on a reader thread and waits for it at most the deadline. Returns what
 * run returned (c is still the caller's); -ETIMEDOUT: the read overran, c is the
 * reader's now (released when run returns) and its owner gets -EBUSY until then;
 * -EBUSY: not started (the owner has a read that overran, or every thread is busy), c
 * is still the caller's. With tr NULL (tests, one-shot runs), runs c->run right here. */
int tenant_reader_call(struct tenant_reader *tr, struct tenant_call *c);

/* The calling thread (the event loop) runs serve(userdata) every 100 ms while it waits
 * on a read: the control socket and the watchdog are served whatever the read does. */
void tenant_reader_set_serve(struct tenant_reader *tr, void (*serve)(void *userdata), void *userdata);

/* Whether owner has a read that overran and has not returned. */
bool tenant_reader_owner_stuck(struct tenant_reader *tr, uid_t owner);

/* Pins every reader thread to `cpus` again (service_cpus_check). 0 or -errno. */
int tenant_reader_repin(struct tenant_reader *tr, const nb_cpumask *cpus);
/* Whether every reader thread may run on exactly `cpus` (exact) or some of them only. */
bool tenant_reader_pinned(struct tenant_reader *tr, const nb_cpumask *cpus, bool exact);
/* The reader threads as a pool for service_cpus_check(). */
struct service_pool tenant_reader_service_pool(struct tenant_reader *tr);

void tenant_reader_stats(struct tenant_reader *tr, struct tenant_reader_stats *ret);
