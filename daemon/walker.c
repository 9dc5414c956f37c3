/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The walker thread (walker.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "log.h"
#include "service-cpus.h"
#include "walker.h"

/* What a walk runs on: a copy, so that a reload never changes it under the thread. */
struct walk_config {
        char *root;
        struct cgroup_rule *rules;
        size_t n_rules;
        uint64_t interval_ms;
        uint64_t generation;
};

struct walker {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;       /* stop, a new configuration, or the selection taken */
        bool stop;
        struct walk_config cfg;    /* under lock */
        struct cgroup_selection ready;
        bool has_ready;
        uint64_t walks;
        bool failing;              /* the last walk failed (logged once) */
};

static void config_release(struct walk_config *c) {
        free(c->root);
        for (size_t i = 0; i < c->n_rules; i++)
                free(c->rules[i].path);
        free(c->rules);
        *c = (struct walk_config) {};
}

static int walk_config_copy(struct walk_config *dst, const char *root, const struct cgroup_rule *rules, size_t n_rules,
                       uint64_t interval_ms, uint64_t generation) {
        struct walk_config c = { .interval_ms = interval_ms, .generation = generation };

        c.root = strdup(root);
        c.rules = n_rules ? calloc(n_rules, sizeof(*c.rules)) : NULL;
        if (!c.root || (n_rules && !c.rules))
                goto oom;
        for (; c.n_rules < n_rules; c.n_rules++) {
                if (config_rule_copy(&c.rules[c.n_rules], &rules[c.n_rules]) < 0)
                        goto oom;
        }
        *dst = c;
        return 0;
oom:
        config_release(&c);
        return -ENOMEM;
}

static bool out_of_resources(int r) {
        return r == -EMFILE || r == -ENFILE || r == -ENOMEM;
}

/* Called with the lock held: the result of a walk on configuration generation. */
static void publish(struct walker *w, int r, struct cgroup_selection *sel, const char *root, uint64_t generation) {
        if (r < 0 && !w->failing)
                log_warning_errno(r, "Cannot walk the cgroup tree at %s: %m; %s", root,
                                  out_of_resources(r) ? "keeping the cgroups and processes already known"
                                                      : "nothing is selected until it can");
        else if (r >= 0 && w->failing)
                log_notice("The cgroup tree at %s can be walked again", root);
        w->failing = r < 0;
        if (generation != w->cfg.generation || out_of_resources(r)) {
                cgroup_selection_done(sel);
                return;
        }
        cgroup_selection_done(&w->ready);
        w->ready = *sel;   /* empty when the walk failed */
        *sel = (struct cgroup_selection) {};
        w->has_ready = true;
        w->walks++;
}

/* Waits interval_ms, and WALKER_DUTY times as long as the walk took if that is more,
 * then until the tick has taken the selection published last; or less if told to
 * stop or given a new configuration. A walk replacing one never taken would drop its
 * CPU time (the walk_ns in it) unattributed, and nobody needs it anyway. Called and
 * returns with the lock held. */
static void pause_between_walks(struct walker *w, uint64_t generation, uint64_t walk_ms) {
        uint64_t ms = w->cfg.interval_ms > WALKER_DUTY * walk_ms ? w->cfg.interval_ms : WALKER_DUTY * walk_ms;
        /* The condition waits on CLOCK_MONOTONIC (walker_new). */
        struct timespec until = clock_deadline_ts(CLOCK_MONOTONIC, ms * NSEC_PER_MSEC);

        while (!w->stop && generation == w->cfg.generation)
                if (pthread_cond_timedwait(&w->wake, &w->lock, &until) == ETIMEDOUT)
                        break;
        while (!w->stop && generation == w->cfg.generation && w->has_ready)
                pthread_cond_wait(&w->wake, &w->lock);
}

static void *walker_main(void *arg) {
        struct walker *w = arg;

        /* Below the tick and the workers on the same CPUs: a late walk only delays
         * what a change of the tree does. Failing that, it walks at their priority. */
        (void) setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid), WALKER_NICE);
        pthread_mutex_lock(&w->lock);
        while (!w->stop) {
                struct cgroup_selection sel = {};
                uint64_t generation = w->cfg.generation;
                struct walk_config c;
                int r = walk_config_copy(&c, w->cfg.root, w->cfg.rules, w->cfg.n_rules, w->cfg.interval_ms, generation);

                uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

                pthread_mutex_unlock(&w->lock);
                if (r >= 0)
                        r = cgroup_select(c.root, c.rules, c.n_rules, &sel);
                config_release(&c);
                pthread_mutex_lock(&w->lock);
                publish(w, r, &sel, w->cfg.root, generation);
                pause_between_walks(w, generation, (clock_now_ns(CLOCK_MONOTONIC) - t0) / NSEC_PER_MSEC);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int walker_new(const char *root, const struct cgroup_rule *rules, size_t n_rules, uint64_t interval_ms,
               struct walker **ret) {
        struct walker *w = calloc(1, sizeof(*w));
        pthread_condattr_t ca;
        sigset_t all, saved;
        int r;

        if (!w)
                return -ENOMEM;
        r = walk_config_copy(&w->cfg, root, rules, n_rules, interval_ms, 1);
        if (r < 0) {
                free(w);
                return r;
        }
        pthread_mutex_init(&w->lock, NULL);
        /* Timed waits on CLOCK_MONOTONIC: a change of the wall clock does not stretch them. */
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->wake, &ca);
        pthread_condattr_destroy(&ca);
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = -pthread_create(&w->thread, NULL, walker_main, w);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0) {
                pthread_cond_destroy(&w->wake);
                pthread_mutex_destroy(&w->lock);
                config_release(&w->cfg);
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

int walker_set_config(struct walker *w, const char *root, const struct cgroup_rule *rules, size_t n_rules,
                      uint64_t interval_ms) {
        struct walk_config c;
        int r;

        pthread_mutex_lock(&w->lock);
        r = walk_config_copy(&c, root, rules, n_rules, interval_ms, w->cfg.generation + 1);
        if (r >= 0) {
                config_release(&w->cfg);
                w->cfg = c;
                /* What was walked with the old configuration is not to be taken. */
                cgroup_selection_done(&w->ready);
                w->has_ready = false;
                pthread_cond_signal(&w->wake);
        }
        pthread_mutex_unlock(&w->lock);
        return r;
}

int walker_take(struct walker *w, struct cgroup_selection *ret) {
        int r = 0;

        pthread_mutex_lock(&w->lock);
        if (w->has_ready) {
                *ret = w->ready;
                w->ready = (struct cgroup_selection) {};
                w->has_ready = false;
                pthread_cond_signal(&w->wake);
                r = 1;
        }
        pthread_mutex_unlock(&w->lock);
        return r;
}

uint64_t walker_walks(struct walker *w) {
        uint64_t n;

        pthread_mutex_lock(&w->lock);
        n = w->walks;
        pthread_mutex_unlock(&w->lock);
        return n;
}

void walker_free(struct walker *w) {
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        cgroup_selection_done(&w->ready);
        config_release(&w->cfg);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

int walker_repin(struct walker *w, const nb_cpumask *cpus) {
        return service_cpus_pin_thread(w->thread, cpus);
}

bool walker_pinned(const struct walker *w, const nb_cpumask *cpus, bool exact) {
        return service_cpus_thread_within(w->thread, cpus, exact);
}

static int repin_pool(void *pool, const nb_cpumask *cpus) {
        return walker_repin(pool, cpus);
}

static bool pinned_pool(void *pool, const nb_cpumask *cpus, bool exact) {
        return walker_pinned(pool, cpus, exact);
}

struct service_pool walker_service_pool(struct walker *w) {
        return (struct service_pool) { "cgroup walker", repin_pool, pinned_pool, w };
}

/* --- what is wrong with the tree, logged once ------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return (x > y) - (x < y);
}

static uint64_t invalid_key(const struct walker_log *l, const struct cgroup_invalid *inv) {
        char key[PATH_MAX + 512];
        int n = snprintf(key, sizeof(key), "%s%c%s%c%s%c%s", inv->path, 0, inv->xattr, 0, inv->value, 0, inv->why);

        return siphash24(key, n < 0 ? 0 : (size_t) n < sizeof(key) ? (size_t) n : sizeof(key) - 1, l->invalid_key);
}

/* Each invalid setting is logged once while it stays (it is remembered by a keyed
 * hash for as long as the walk reports it: a setting fixed and broken again is news
 * again), and at most WALKER_INVALID_LOG_BURST new ones a minute, the rest counted in one
 * line a minute: a user who writes junk on 20,000 cgroups cannot flood the journal, nor make
 * the daemon log every tick (it remembered 1,024 settings, then logged the rest at
 * every tick). Out of memory, nothing new is logged this tick. */
static void log_invalid(struct walker_log *l, const struct cgroup_selection *sel) {
        _cleanup_free_ uint64_t *keys = NULL;
        size_t not_logged = 0;
        uint64_t now = clock_now_ms();

        if (sel->n_invalid == 0 || !(keys = calloc(sel->n_invalid, sizeof(*keys)))) {
                if (sel->n_invalid == 0) {
                        free(l->invalid_seen);
                        l->invalid_seen = NULL;
                        l->n_invalid_seen = 0;
                }
                return;
        }
        for (size_t i = 0; i < sel->n_invalid; i++) {
                const struct cgroup_invalid *inv = &sel->invalid[i];

                keys[i] = invalid_key(l, inv);
                if (l->n_invalid_seen &&
                    bsearch(&keys[i], l->invalid_seen, l->n_invalid_seen, sizeof(*keys), cmp_u64))
                        continue;
                if (log_ratelimit_ok(&l->invalid_log, now, NULL))
                        log_warning("cgroup=%s: %s=\"%s\": %s, treating as unset", inv->path, inv->xattr, inv->value,
                                    inv->why);
                else
                        not_logged++;
        }
        /* The count, too, once a minute at most (a user may change the values every
         * tick). */
        l->invalid_not_logged += not_logged;
        if (l->invalid_not_logged && log_ratelimit_ok(&l->invalid_count_log, now, NULL)) {
                log_warning("%" PRIu64 " more invalid cgroup setting(s) treated as unset, not logged one by one "
                            "(at most %u a minute)", l->invalid_not_logged, WALKER_INVALID_LOG_BURST);
                l->invalid_not_logged = 0;
        }
        qsort(keys, sel->n_invalid, sizeof(*keys), cmp_u64);
        free(l->invalid_seen);
        l->invalid_seen = TAKE_PTR(keys);
        l->n_invalid_seen = sel->n_invalid;
}

void walker_log_init(struct walker_log *l) {
        *l = (struct walker_log) {
                .invalid_log = LOG_RATELIMIT(60000, WALKER_INVALID_LOG_BURST),
                .invalid_count_log = LOG_RATELIMIT(60000, 1),
        };
        siphash_random_key(l->invalid_key);
}

void walker_log_selection(struct walker_log *l, const char *root, const struct cgroup_selection *sel) {
        log_invalid(l, sel);
        if (sel->truncated && !l->truncated_logged)
                log_warning("The cgroup tree under %s is deeper than %d levels or has more than %d cgroups: those "
                            "beyond a subtree's share of the walk were not looked at (numabalanced(8), LIMITS)",
                            root, CGROUP_WALK_MAX_DEPTH, CGROUP_WALK_MAX_CGROUPS);
        l->truncated_logged = sel->truncated;
}

void walker_log_short(struct walker_log *l, const char *root, int r) {
        if (r < 0 && !l->short_logged)
                log_warning_errno(r, "Cannot read the cgroup tree under %s: %m; keeping the processes and cgroups "
                                  "already known until it can", root);
        l->short_logged = r < 0;
}

void walker_log_done(struct walker_log *l) {
        free(l->invalid_seen);
        l->invalid_seen = NULL;
        l->n_invalid_seen = 0;
}
