/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reads a tenant can make wait (tenant-reader.h): a small pool of threads, a queue,
 * and the calls whose deadline passed left to the thread that runs them. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "service-cpus.h"
#include "tenant-reader.h"

/* Resident bytes read per second of deadline beyond the base: the measured 100 GiB/s
 * (tenant-reader.h) six times slower. */
#define DEADLINE_BYTES_PER_S (UINT64_C(16) << 30)

enum { CALL_QUEUED, CALL_RUNNING, CALL_DONE, CALL_ABANDONED };

struct reader_thread {
        pthread_t thread;
        struct tenant_reader *tr;
        struct tenant_call *current;   /* the call it runs, NULL when idle */
};

struct tenant_reader {
        pthread_mutex_t lock;
        pthread_cond_t work_cond;      /* readers: a call is queued, or shut down */
        pthread_cond_t done_cond;      /* callers: a call finished */
        struct tenant_call *head, *tail;
        unsigned n_queued;
        struct reader_thread threads[TENANT_READER_THREADS_MAX];
        unsigned n_threads, n_idle;
        nb_cpumask cpus;
        unsigned deadline_cap_ms;      /* 0: none */
        bool shutdown;
        uint64_t calls, overruns, refused;
        /* While the event loop waits on a read, it still serves (tenant_reader_set_serve). */
        pthread_t serve_thread;
        void (*serve)(void *userdata);
        void *serve_userdata;
};

unsigned tenant_reader_deadline_ms(uint64_t resident_bytes) {
        uint64_t ms = TENANT_READ_DEADLINE_MS + resident_bytes / (DEADLINE_BYTES_PER_S / 1000);

        return ms < TENANT_READ_DEADLINE_MAX_MS ? (unsigned) ms : TENANT_READ_DEADLINE_MAX_MS;
}

static struct tenant_call *dequeue(struct tenant_reader *tr) {
        struct tenant_call *c = tr->head;

        tr->head = c->next;
        if (!tr->head)
                tr->tail = NULL;
        c->next = NULL;
        tr->n_queued--;
        return c;
}

static void unqueue(struct tenant_reader *tr, struct tenant_call *c) {
        struct tenant_call **p = &tr->head, *prev = NULL;

        for (; *p; prev = *p, p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        if (tr->tail == c)
                                tr->tail = prev;
                        c->next = NULL;
                        tr->n_queued--;
                        return;
                }
}

static void *reader_main(void *arg) {
        struct reader_thread *self = arg;
        struct tenant_reader *tr = self->tr;

        pthread_mutex_lock(&tr->lock);
        for (;;) {
                struct tenant_call *c;
                int r;

                while (!tr->shutdown && !tr->head)
                        pthread_cond_wait(&tr->work_cond, &tr->lock);
                if (tr->shutdown)
                        break;
                c = dequeue(tr);
                c->state = CALL_RUNNING;
                self->current = c;
                tr->n_idle--;
                pthread_mutex_unlock(&tr->lock);

                r = c->run(c);

                pthread_mutex_lock(&tr->lock);
                self->current = NULL;
                tr->n_idle++;
                if (c->state == CALL_ABANDONED) {
                        /* Its caller is long gone: the outputs are nobody's. */
                        pthread_mutex_unlock(&tr->lock);
                        c->release(c);
                        pthread_mutex_lock(&tr->lock);
                        continue;
                }
                c->result = r;
                c->state = CALL_DONE;
                pthread_cond_broadcast(&tr->done_cond);
        }
        pthread_mutex_unlock(&tr->lock);
        return NULL;
}

int tenant_reader_new(const nb_cpumask *cpus, unsigned deadline_cap_ms, struct tenant_reader **ret) {
        struct tenant_reader *tr = calloc(1, sizeof(*tr));
        pthread_condattr_t ca;

        if (!tr)
                return -ENOMEM;
        pthread_mutex_init(&tr->lock, NULL);
        pthread_cond_init(&tr->work_cond, NULL);
        /* The waits measure a deadline: not moved by a change of the wall clock. */
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&tr->done_cond, &ca);
        pthread_condattr_destroy(&ca);
        tr->cpus = *cpus;
        tr->deadline_cap_ms = deadline_cap_ms;
        *ret = tr;
        return 0;
}

/* Called with tr->lock held. */
static bool stuck_locked(struct tenant_reader *tr, uid_t owner) {
        for (unsigned i = 0; i < tr->n_threads; i++) {
                struct tenant_call *c = tr->threads[i].current;

                if (c && c->state == CALL_ABANDONED && c->owner == owner)
                        return true;
        }
        return false;
}

static unsigned stuck_count_locked(struct tenant_reader *tr) {
        unsigned n = 0;

        for (unsigned i = 0; i < tr->n_threads; i++)
                n += tr->threads[i].current && tr->threads[i].current->state == CALL_ABANDONED;
        return n;
}

/* Called with tr->lock held: a thread free for one more queued call, started if
 * needed. Returns false when every thread is taken and no more may start. */
static bool thread_available(struct tenant_reader *tr) {
        struct reader_thread *t;
        pthread_attr_t attr;
        size_t size = 0;
        cpu_set_t *set;
        int r;

        if (tr->n_idle > tr->n_queued)
                return true;
        if (tr->n_threads >= TENANT_READER_THREADS_MAX)
                return false;
        t = &tr->threads[tr->n_threads];
        t->tr = tr;
        t->current = NULL;
        pthread_attr_init(&attr);
        /* Started from a worker, it would inherit that worker's one CPU: all of them. */
        set = service_cpus_cpuset_new(&tr->cpus, &size);
        if (set)
                pthread_attr_setaffinity_np(&attr, size, set);
        r = pthread_create(&t->thread, &attr, reader_main, t);
        pthread_attr_destroy(&attr);
        if (set)
                CPU_FREE(set);
        if (r != 0) {
                log_warning_errno(-r, "Cannot start a reader thread: %m");
                return false;
        }
        tr->n_threads++;
        tr->n_idle++;
        return true;
}

static unsigned call_deadline_ms(const struct tenant_reader *tr, const struct tenant_call *c) {
        unsigned ms = c->deadline_ms ? c->deadline_ms : TENANT_READ_DEADLINE_MS;

        return tr->deadline_cap_ms && ms > tr->deadline_cap_ms ? tr->deadline_cap_ms : ms;
}

/* Called with tr->lock held: until c is done or its deadline passed. The thread that
 * serves (the event loop) wakes every SERVE_EVERY_MS meanwhile to serve, unlocked. */
#define SERVE_EVERY_MS 100u
static void wait_call(struct tenant_reader *tr, struct tenant_call *c, unsigned deadline_ms) {
        bool serves = tr->serve && pthread_equal(pthread_self(), tr->serve_thread);
        uint64_t end = clock_now_ns(CLOCK_MONOTONIC) + (uint64_t) deadline_ms * NSEC_PER_MSEC;

        while (c->state == CALL_QUEUED || c->state == CALL_RUNNING) {
                uint64_t now = clock_now_ns(CLOCK_MONOTONIC), slice_end;
                struct timespec until;

                if (now >= end)
                        return;
                slice_end = serves && end - now > SERVE_EVERY_MS * NSEC_PER_MSEC ? now + SERVE_EVERY_MS * NSEC_PER_MSEC
                                                                                  : end;
                until = (struct timespec) { .tv_sec = (time_t) (slice_end / NSEC_PER_SEC),
                                            .tv_nsec = (long) (slice_end % NSEC_PER_SEC) };
                if (pthread_cond_timedwait(&tr->done_cond, &tr->lock, &until) == ETIMEDOUT && serves &&
                    slice_end < end && (c->state == CALL_QUEUED || c->state == CALL_RUNNING)) {
                        pthread_mutex_unlock(&tr->lock);
                        tr->serve(tr->serve_userdata);
                        pthread_mutex_lock(&tr->lock);
                }
        }
}

void tenant_reader_set_serve(struct tenant_reader *tr, void (*serve)(void *userdata), void *userdata) {
        if (!tr)
                return;
        pthread_mutex_lock(&tr->lock);
        tr->serve_thread = pthread_self();
        tr->serve = serve;
        tr->serve_userdata = userdata;
        pthread_mutex_unlock(&tr->lock);
}

int tenant_reader_call(struct tenant_reader *tr, struct tenant_call *c) {
        int r;

        if (!c || !c->run || !c->release)
                return -EINVAL;
        if (!tr)
                return c->run(c);

        pthread_mutex_lock(&tr->lock);
        if (tr->shutdown || stuck_locked(tr, c->owner) || !thread_available(tr)) {
                tr->refused++;
                pthread_mutex_unlock(&tr->lock);
                return -EBUSY;
        }
        c->state = CALL_QUEUED;
        c->next = NULL;
        if (tr->tail)
                tr->tail->next = c;
        else
                tr->head = c;
        tr->tail = c;
        tr->n_queued++;
        tr->calls++;
        pthread_cond_signal(&tr->work_cond);

        wait_call(tr, c, call_deadline_ms(tr, c));
        switch (c->state) {
        case CALL_DONE:
                r = c->result;
                break;
        case CALL_QUEUED:      /* never started: the other reads were slow, not this one */
                unqueue(tr, c);
                tr->refused++;
                r = -EBUSY;
                break;
        default:               /* running: left to its thread */
                c->state = CALL_ABANDONED;
                tr->overruns++;
                r = -ETIMEDOUT;
                break;
        }
        pthread_mutex_unlock(&tr->lock);
        return r;
}

bool tenant_reader_owner_stuck(struct tenant_reader *tr, uid_t owner) {
        bool stuck;

        if (!tr)
                return false;
        pthread_mutex_lock(&tr->lock);
        stuck = stuck_locked(tr, owner);
        pthread_mutex_unlock(&tr->lock);
        return stuck;
}

int tenant_reader_repin(struct tenant_reader *tr, const nb_cpumask *cpus) {
        int r = 0;

        if (!tr)
                return 0;
        pthread_mutex_lock(&tr->lock);
        tr->cpus = *cpus;
        for (unsigned i = 0; i < tr->n_threads && r == 0; i++)
                r = service_cpus_pin_thread(tr->threads[i].thread, cpus);
        pthread_mutex_unlock(&tr->lock);
        return r;
}

bool tenant_reader_pinned(struct tenant_reader *tr, const nb_cpumask *cpus, bool exact) {
        bool ok = true;

        if (!tr)
                return true;
        pthread_mutex_lock(&tr->lock);
        for (unsigned i = 0; i < tr->n_threads && ok; i++)
                ok = service_cpus_thread_within(tr->threads[i].thread, cpus, exact);
        pthread_mutex_unlock(&tr->lock);
        return ok;
}

static int repin_pool(void *pool, const nb_cpumask *cpus) {
        return tenant_reader_repin(pool, cpus);
}

static bool pinned_pool(void *pool, const nb_cpumask *cpus, bool exact) {
        return tenant_reader_pinned(pool, cpus, exact);
}

struct service_pool tenant_reader_service_pool(struct tenant_reader *tr) {
        return (struct service_pool) { "reader threads", repin_pool, pinned_pool, tr };
}

void tenant_reader_stats(struct tenant_reader *tr, struct tenant_reader_stats *ret) {
        *ret = (struct tenant_reader_stats) {};
        if (!tr)
                return;
        pthread_mutex_lock(&tr->lock);
        ret->calls = tr->calls;
        ret->overruns = tr->overruns;
        ret->refused = tr->refused;
        ret->threads = tr->n_threads;
        ret->stuck = stuck_count_locked(tr);
        pthread_mutex_unlock(&tr->lock);
}

void tenant_reader_free(struct tenant_reader *tr) {
        bool busy[TENANT_READER_THREADS_MAX];
        unsigned n, stuck;

        if (!tr)
                return;
        pthread_mutex_lock(&tr->lock);
        tr->shutdown = true;
        pthread_cond_broadcast(&tr->work_cond);
        /* Nobody calls any more: a thread in a read is in one that overran. */
        n = tr->n_threads;
        for (unsigned i = 0; i < n; i++)
                busy[i] = tr->threads[i].current;
        stuck = stuck_count_locked(tr);
        pthread_mutex_unlock(&tr->lock);
        for (unsigned i = 0; i < n; i++) {
                if (busy[i])
                        pthread_detach(tr->threads[i].thread);
                else
                        pthread_join(tr->threads[i].thread, NULL);
        }
        if (stuck) {
                log_debug("%u reader thread(s) still in a read that overran: left to it", stuck);
                return;
        }
        pthread_cond_destroy(&tr->work_cond);
        pthread_cond_destroy(&tr->done_cond);
        pthread_mutex_destroy(&tr->lock);
        free(tr);
}
