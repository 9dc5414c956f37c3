/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The worker pool (migrator.h): pinned threads, the job queue of one run, and the
 * budget they share. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "cleanup.h"
#include "clock.h"
#include "log.h"
#include "pagesize.h"
#include "move-budget.h"
#include "service-cpus.h"
#include "migrator.h"

/* A throttled worker sleeps in slices this long so that migrator_cancel() (SIGTERM)
 * is noticed quickly even under a very low budget. */
#define THROTTLE_SLEEP_SLICE_NS (50 * NSEC_PER_MSEC)
/* How often migrator_run() asks its should_stop callback. */
#define POLL_STOP_NS (100 * NSEC_PER_MSEC)

enum { JOB_PENDING, JOB_RUNNING, JOB_DONE };

struct worker {
        pthread_t thread;
        struct migrator *m;
        int cpu;                   /* its own CPU */
};

struct migrator {
        bool (*should_stop)(void *ctx);
        void *should_stop_ctx;
        pthread_mutex_t lock;
        pthread_cond_t work_cond;  /* workers: a job may be available, or shut down */
        pthread_cond_t done_cond;  /* migrator_run: a job finished */
        struct worker *workers;
        unsigned n_workers;
        bool shutdown;
        uint64_t batch_pages;      /* base pages per move call (move_budget_call_pages()) */

        /* The current run (migrator_run is not reentrant). */
        struct migrate_job *jobs;
        uint8_t *state;
        size_t n_jobs, n_done, first_pending;
        uint64_t run_start_ns;     /* CLOCK_MONOTONIC; 0: no run under way */
        uint64_t run_budget_ns;    /* 0: unbounded */
        uint64_t runs_cut;

        /* cancel: for good (SIGTERM). run_cancel: what the jobs and the throttle look
         * at; set with cancel, and by the budget for the current run only. */
        volatile int cancel;
        volatile int run_cancel;

        pthread_mutex_t tb_lock;   /* separate: throttling must not wait behind job picking */
        struct move_budget budget; /* bytes and move calls a second, under tb_lock */
};

/* Called with m->lock held. The first pending job. Jobs of one process may run side
 * by side: move_pages(2) takes the mmap lock for reading, one address at a time, so
 * the parts of a split job copy in parallel (job_split). */
static size_t pick_job(struct migrator *m) {
        while (m->first_pending < m->n_jobs && m->state[m->first_pending] != JOB_PENDING)
                m->first_pending++;
        return m->first_pending < m->n_jobs ? m->first_pending : SIZE_MAX;
}

/* Sleeps wait ns in slices, unless the migrator is cancelled meanwhile. */
static int throttle_sleep(struct migrator *m, uint64_t wait) {
        while (wait > 0) {
                uint64_t slice = wait < THROTTLE_SLEEP_SLICE_NS ? wait : THROTTLE_SLEEP_SLICE_NS;
                struct timespec ts = { .tv_sec = (time_t) (slice / NSEC_PER_SEC),
                                       .tv_nsec = (long) (slice % NSEC_PER_SEC) };
                if (__atomic_load_n(&m->run_cancel, __ATOMIC_RELAXED))
                        return -ECANCELED;
                nanosleep(&ts, NULL);
                wait -= slice;
        }
        return 0;
}

/* The executor's throttle: books the bytes in the shared bucket, then sleeps off any
 * debt outside the lock, so the other workers can book their own wait meanwhile. */
static int migrator_throttle(void *ctx, uint64_t bytes, uint64_t busy_since) {
        struct migrator *m = ctx;
        uint64_t wait;

        pthread_mutex_lock(&m->tb_lock);
        wait = move_budget_take_bytes(&m->budget, bytes, busy_since, clock_now_ns(CLOCK_MONOTONIC));
        pthread_mutex_unlock(&m->tb_lock);
        return throttle_sleep(m, wait);
}

/* The executor's call gate: one token of the calls bucket per move call. */
static int migrator_call_gate(void *ctx) {
        struct migrator *m = ctx;
        uint64_t wait;

        pthread_mutex_lock(&m->tb_lock);
        wait = move_budget_take_call(&m->budget, clock_now_ns(CLOCK_MONOTONIC));
        pthread_mutex_unlock(&m->tb_lock);
        return throttle_sleep(m, wait);
}

static void *worker_main(void *arg) {
        struct worker *w = arg;
        struct migrator *m = w->m;

        pthread_mutex_lock(&m->lock);
        for (;;) {
                struct migrate_job *job;
                uint64_t batch;
                size_t i = SIZE_MAX;

                while (!m->shutdown && (i = pick_job(m)) == SIZE_MAX)
                        pthread_cond_wait(&m->work_cond, &m->lock);
                if (m->shutdown)
                        break;
                m->state[i] = JOB_RUNNING;
                job = &m->jobs[i];
                batch = m->batch_pages;
                pthread_mutex_unlock(&m->lock);

                /* A run cut by its budget may have left a debt in the bucket: paid
                 * before the next batch of anyone, or every cut would let a batch
                 * through unpaid. Cancelled meanwhile, the job stops at once. */
                (void) migrator_throttle(m, 0, clock_now_ns(CLOCK_MONOTONIC));
                job->call_gate = migrator_call_gate;
                job->call_gate_ctx = m;
                (void) executor_run_job(job, batch, &m->run_cancel, migrator_throttle, m);

                pthread_mutex_lock(&m->lock);
                m->state[i] = JOB_DONE;
                m->n_done++;
                if (m->n_done == m->n_jobs)
                        pthread_cond_signal(&m->done_cond);
        }
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

/* Starts the next worker, pinned to cpu. Returns 0 or -errno (logged by the caller). */
static int start_worker(struct migrator *m, int cpu) {
        struct worker *w = &m->workers[m->n_workers];
        nb_cpumask own = {};
        pthread_attr_t attr;
        size_t setsize;
        cpu_set_t *set;
        int r;

        cpumask_set(&own, (unsigned) cpu);
        set = service_cpus_cpuset_new(&own, &setsize);
        if (!set)
                return -ENOMEM;
        w->m = m;
        w->cpu = cpu;
        /* Pinned at creation (glibc applies the affinity before the thread runs any
         * code): a worker never runs on a CPU that is not a service CPU. An offline or
         * unknown CPU fails here with EINVAL. */
        pthread_attr_init(&attr);
        r = pthread_attr_setaffinity_np(&attr, setsize, set);
        if (r == 0)
                r = pthread_create(&w->thread, &attr, worker_main, w);
        pthread_attr_destroy(&attr);
        CPU_FREE(set);
        if (r != 0)
                return -r;
        m->n_workers++;
        return 0;
}

int migrator_new(const nb_cpumask *service_cpus, uint64_t rate_limit_mb_s, uint64_t batch_pages,
                 struct migrator **ret) {
        struct migrator *m;
        sigset_t all, saved;
        unsigned n_cpus;

        if (!service_cpus || !ret)
                return -EINVAL;
        n_cpus = cpumask_weight(service_cpus);
        if (n_cpus == 0)
                return log_error_errno(-EINVAL, "No service CPUs for the migration workers");

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->workers = calloc(n_cpus, sizeof(*m->workers));
        if (!m->workers) {
                free(m);
                return -ENOMEM;
        }
        pthread_mutex_init(&m->lock, NULL);
        pthread_mutex_init(&m->tb_lock, NULL);
        pthread_cond_init(&m->work_cond, NULL);
        pthread_cond_init(&m->done_cond, NULL);
        move_budget_init(&m->budget, rate_limit_mb_s, 0, clock_now_ns(CLOCK_MONOTONIC));
        m->batch_pages = move_budget_call_pages(&m->budget, batch_pages, executor_pmd_size());

        /* Workers inherit this mask: signals are the main thread's business. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        CPUMASK_FOREACH(cpu, service_cpus) {
                int r = start_worker(m, cpu);
                if (r < 0)
                        log_warning_errno(r, "Failed to start a migration worker pinned to CPU %d, skipping: %m", cpu);
        }
        pthread_sigmask(SIG_SETMASK, &saved, NULL);

        if (m->n_workers == 0) {
                migrator_free(m);
                return log_error_errno(-EINVAL, "No migration worker could be pinned to any service CPU");
        }
        log_debug("Started %u migration worker(s)", m->n_workers);
        *ret = m;
        return 0;
}

void migrator_set_limits(struct migrator *m, uint64_t rate_limit_mb_s, uint64_t batch_pages) {
        uint64_t pages;

        pthread_mutex_lock(&m->tb_lock);
        move_budget_set_rate(&m->budget, rate_limit_mb_s, clock_now_ns(CLOCK_MONOTONIC));
        pages = move_budget_call_pages(&m->budget, batch_pages, executor_pmd_size());
        pthread_mutex_unlock(&m->tb_lock);
        pthread_mutex_lock(&m->lock);
        m->batch_pages = pages;
        pthread_mutex_unlock(&m->lock);
}

void migrator_set_call_rate(struct migrator *m, uint64_t calls_per_s) {
        pthread_mutex_lock(&m->tb_lock);
        move_budget_set_call_rate(&m->budget, calls_per_s, clock_now_ns(CLOCK_MONOTONIC));
        pthread_mutex_unlock(&m->tb_lock);
}

/* Called with m->lock held: ends the run under way once it has lasted its budget. */
static void check_budget(struct migrator *m) {
        uint64_t elapsed = clock_now_ns(CLOCK_MONOTONIC) - m->run_start_ns;

        if (!move_budget_run_spent(m->run_budget_ns, elapsed) || __atomic_load_n(&m->run_cancel, __ATOMIC_RELAXED))
                return;
        __atomic_store_n(&m->run_cancel, 1, __ATOMIC_RELAXED);
        m->runs_cut++;
        log_debug("Migration run cut at its budget of %" PRIu64 " ms, %zu of %zu job(s) done: the rest at the next tick",
                  m->run_budget_ns / NSEC_PER_MSEC, m->n_done, m->n_jobs);
}

/* Called with m->lock held: waits up to POLL_STOP_NS for a job to finish, then asks
 * should_stop. The callback runs unlocked: it may do real work (the daemon serves its
 * control socket there), and the workers must not wait on the lock to report a
 * finished job meanwhile. */
static void wait_done_or_poll(struct migrator *m) {
        struct timespec ts = clock_deadline_ts(CLOCK_REALTIME, POLL_STOP_NS);

        pthread_cond_timedwait(&m->done_cond, &m->lock, &ts);
        if (m->should_stop) {
                bool stop;

                pthread_mutex_unlock(&m->lock);
                stop = m->should_stop(m->should_stop_ctx);
                pthread_mutex_lock(&m->lock);
                if (stop)
                        migrator_cancel(m);
        }
        check_budget(m);
}

int migrator_run(struct migrator *m, struct migrate_job *jobs, size_t n_jobs) {
        _cleanup_free_ uint8_t *state = NULL;

        if (!m || (n_jobs > 0 && !jobs))
                return -EINVAL;
        if (n_jobs == 0)
                return 0;
        state = calloc(n_jobs, sizeof(*state));     /* all JOB_PENDING */
        if (!state)
                return -ENOMEM;

        pthread_mutex_lock(&m->lock);
        if (m->jobs) {
                pthread_mutex_unlock(&m->lock);
                return -EBUSY;
        }
        m->jobs = jobs;
        m->state = state;
        m->n_jobs = n_jobs;
        m->n_done = 0;
        m->first_pending = 0;
        m->run_start_ns = clock_now_ns(CLOCK_MONOTONIC);
        /* A budget cut ends with its run; a cancel for good does not. */
        __atomic_store_n(&m->run_cancel, __atomic_load_n(&m->cancel, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        pthread_cond_broadcast(&m->work_cond);
        /* Wake up now and then to ask whether to stop: the caller's event loop cannot
         * see a SIGTERM while it waits here. */
        while (m->n_done < m->n_jobs)
                wait_done_or_poll(m);
        m->jobs = NULL;
        m->state = NULL;
        m->n_jobs = 0;
        m->run_start_ns = 0;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

void migrator_set_run_budget(struct migrator *m, uint64_t budget_ns) {
        pthread_mutex_lock(&m->lock);
        m->run_budget_ns = budget_ns;
        pthread_mutex_unlock(&m->lock);
}

uint64_t migrator_run_elapsed_ns(const struct migrator *m) {
        /* Written by migrator_run() on this very thread: no lock needed. */
        return m && m->run_start_ns ? clock_now_ns(CLOCK_MONOTONIC) - m->run_start_ns : 0;
}

uint64_t migrator_runs_cut(const struct migrator *m) {
        return m ? m->runs_cut : 0;
}

void migrator_set_should_stop(struct migrator *m, bool (*should_stop)(void *ctx), void *ctx) {
        pthread_mutex_lock(&m->lock);
        m->should_stop = should_stop;
        m->should_stop_ctx = ctx;
        pthread_mutex_unlock(&m->lock);
}

void migrator_cancel(struct migrator *m) {
        /* Sticky: a migrator that was told to stop does not start new batches any more. */
        if (m) {
                __atomic_store_n(&m->cancel, 1, __ATOMIC_RELAXED);
                __atomic_store_n(&m->run_cancel, 1, __ATOMIC_RELAXED);
        }
}

void migrator_free(struct migrator *m) {
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        m->shutdown = true;
        pthread_cond_broadcast(&m->work_cond);
        pthread_mutex_unlock(&m->lock);
        for (unsigned w = 0; w < m->n_workers; w++)
                pthread_join(m->workers[w].thread, NULL);
        pthread_cond_destroy(&m->work_cond);
        pthread_cond_destroy(&m->done_cond);
        pthread_mutex_destroy(&m->lock);
        pthread_mutex_destroy(&m->tb_lock);
        free(m->workers);
        free(m);
}

unsigned migrator_n_workers(const struct migrator *m) {
        return m ? m->n_workers : 0;
}

/* The CPUs worker w belongs on while `online` service CPUs are: its own CPU when
 * that is online, else any of them. */
static nb_cpumask worker_cpus(const struct worker *w, const nb_cpumask *online) {
        nb_cpumask own = {};

        if (!cpumask_test(online, (unsigned) w->cpu))
                return *online;
        cpumask_set(&own, (unsigned) w->cpu);
        return own;
}

int migrator_repin(struct migrator *m, const nb_cpumask *online) {
        int away = 0;

        for (unsigned i = 0; i < m->n_workers; i++) {
                struct worker *w = &m->workers[i];
                nb_cpumask cpus = worker_cpus(w, online);
                int r;

                away += !cpumask_test(online, (unsigned) w->cpu);
                r = service_cpus_pin_thread(w->thread, &cpus);
                if (r < 0)
                        return r;
        }
        return away;
}

bool migrator_pinned(const struct migrator *m, const nb_cpumask *online, bool exact) {
        for (unsigned i = 0; i < m->n_workers; i++) {
                nb_cpumask cpus = exact ? worker_cpus(&m->workers[i], online) : *online;

                if (!service_cpus_thread_within(m->workers[i].thread, &cpus, exact))
                        return false;
        }
        return true;
}

static int repin_pool(void *pool, const nb_cpumask *cpus) {
        return migrator_repin(pool, cpus);
}

static bool pinned_pool(void *pool, const nb_cpumask *cpus, bool exact) {
        return migrator_pinned(pool, cpus, exact);
}

struct service_pool migrator_service_pool(struct migrator *m) {
        return (struct service_pool) { "migration workers", repin_pool, pinned_pool, m };
}
