/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which CPUs are the service CPUs, and pinning threads to them (service-cpus.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "service-cpus.h"
#include "clock.h"
#include "topology.h"

cpu_set_t *service_cpus_cpuset_new(const nb_cpumask *cpus, size_t *ret_size) {
        size_t size = CPU_ALLOC_SIZE(NB_CPUS_MAX);
        cpu_set_t *set = CPU_ALLOC(NB_CPUS_MAX);

        if (!set)
                return NULL;
        CPU_ZERO_S(size, set);
        CPUMASK_FOREACH(c, cpus)
                CPU_SET_S((size_t) c, size, set);
        *ret_size = size;
        return set;
}

/* The CPUs `thread` may run on now, in *ret. Returns 0 or -errno. */
static int thread_cpus(pthread_t thread, nb_cpumask *ret) {
        size_t size = CPU_ALLOC_SIZE(NB_CPUS_MAX);
        cpu_set_t *set = CPU_ALLOC(NB_CPUS_MAX);
        nb_cpumask m = {};
        int r;

        if (!set)
                return -ENOMEM;
        r = pthread_getaffinity_np(thread, size, set);
        for (unsigned c = 0; r == 0 && c < NB_CPUS_MAX; c++)
                if (CPU_ISSET_S(c, size, set))
                        cpumask_set(&m, c);
        CPU_FREE(set);
        if (r != 0)
                return -r;
        *ret = m;
        return 0;
}

bool service_cpus_thread_within(pthread_t thread, const nb_cpumask *cpus, bool exact) {
        nb_cpumask got;

        if (thread_cpus(thread, &got) < 0)
                return false;
        if (exact)
                return memcmp(&got, cpus, sizeof(got)) == 0;
        for (size_t i = 0; i < ELEMENTSOF(got.w); i++)
                if (got.w[i] & ~cpus->w[i])
                        return false;
        return cpumask_weight(&got) > 0;
}

int service_cpus_pin_thread(pthread_t thread, const nb_cpumask *cpus) {
        size_t size;
        cpu_set_t *set = service_cpus_cpuset_new(cpus, &size);
        int r;

        if (!set)
                return -ENOMEM;
        r = -pthread_setaffinity_np(thread, size, set);
        CPU_FREE(set);
        /* The kernel cuts the mask to the cpuset's CPUs, and a CPU just back online
         * rejoins the cpuset only when the kernel's hotplug work has run: a pin taken
         * before then holds fewer CPUs than asked. */
        if (r == 0 && !service_cpus_thread_within(thread, cpus, true))
                r = -EAGAIN;
        return r;
}

/* The CPUs this process may run on now (cpuset, the unit's CPUAffinity=, taskset). */
static int allowed_cpus(nb_cpumask *ret) {
        size_t size = CPU_ALLOC_SIZE(NB_CPUS_MAX);
        cpu_set_t *set = CPU_ALLOC(NB_CPUS_MAX);
        nb_cpumask m = {};
        int r;

        if (!set)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = pthread_getaffinity_np(pthread_self(), size, set);
        if (r != 0) {
                CPU_FREE(set);
                return log_error_errno(-r, "Failed to get the CPU affinity: %m");
        }
        for (unsigned c = 0; c < NB_CPUS_MAX; c++)
                if (CPU_ISSET_S(c, size, set))
                        cpumask_set(&m, c);
        CPU_FREE(set);
        *ret = m;
        return 0;
}

/* No list configured: the lowest-numbered CPU that is online and allowed. */
static int first_usable(const nb_cpumask *online, const nb_cpumask *allowed, const char *online_s,
                        const char *allowed_s, nb_cpumask *ret) {
        nb_cpumask use;
        int c;

        cpumask_and(&use, online, allowed);
        c = cpumask_next(&use, 0);
        if (c < 0)
                return log_error_errno(-EINVAL, "No online CPU (online: %s) is allowed to this process (allowed: %s), "
                                       "refusing to start", online_s, allowed_s);
        *ret = (nb_cpumask) {};
        cpumask_set(ret, (unsigned) c);
        return 0;
}

int service_cpus_resolve(const nb_cpumask *configured, const char *sys_root, nb_cpumask *ret) {
        char want_s[CPUMASK_STRMAX], online_s[CPUMASK_STRMAX], allowed_s[CPUMASK_STRMAX], use_s[CPUMASK_STRMAX];
        nb_cpumask online, allowed, want, use;
        int r;

        r = topology_read_online_cpus(sys_root, &online);
        if (r < 0)
                return log_error_errno(r, "Failed to read the online CPUs from %s/devices/system/cpu/online: %m", sys_root);
        r = allowed_cpus(&allowed);
        if (r < 0)
                return r;
        cpumask_format(&online, online_s, sizeof(online_s));
        cpumask_format(&allowed, allowed_s, sizeof(allowed_s));
        if (cpumask_weight(configured) == 0)
                return first_usable(&online, &allowed, online_s, allowed_s, ret);

        cpumask_format(configured, want_s, sizeof(want_s));
        cpumask_and(&want, configured, &online);
        if (cpumask_weight(&want) == 0)
                return log_error_errno(-EINVAL, "service_cpus=%s names no online CPU (online: %s), refusing to start",
                                       want_s, online_s);
        cpumask_and(&use, &want, &allowed);
        if (cpumask_weight(&use) == 0)
                return log_error_errno(-EINVAL, "service_cpus=%s names no CPU this process may run on (allowed: %s), "
                                       "refusing to start", want_s, allowed_s);
        if (!cpumask_equal(&use, configured)) {
                cpumask_format(&use, use_s, sizeof(use_s));
                log_warning("service_cpus=%s: only %s are online and allowed (online: %s, allowed: %s), using those",
                            want_s, use_s, online_s, allowed_s);
        }
        *ret = use;
        return 0;
}

int service_cpus_pin_process(const nb_cpumask *cpus) {
        char s[CPUMASK_STRMAX];
        int r;

        cpumask_format(cpus, s, sizeof(s));
        /* A CPU just back online may not be in the cpuset yet (cpus_pin_thread). */
        for (int tries = 0; (r = service_cpus_pin_thread(pthread_self(), cpus)) == -EAGAIN && tries < 10; tries++)
                usleep(50 * 1000);
        if (r < 0)
                return log_error_errno(r, "Failed to pin to the service CPUs %s: %m", s);
        log_info("Running on service CPUs %s", s);
        return 0;
}

/* ---- keeping every thread pinned --------------------------------------------- */

/* Pins the event-loop thread and every pool to the online service CPUs `now`. Returns
 * how many threads are away from a CPU of their own (workers), or -errno when a pin did
 * not hold (logged at debug: the caller tries again on the next tick). */
static int repin(const struct service_pool *pools, size_t n, const nb_cpumask *now) {
        int r, first = 0, away = 0;

        /* Every thread, whatever failed before it: none left where others put it. */
        r = service_cpus_pin_thread(pthread_self(), now);
        if (r < 0)
                first = log_debug_errno(r, "Failed to pin the event loop to the service CPUs: %m");
        for (size_t i = 0; i < n; i++) {
                r = pools[i].repin(pools[i].pool, now);
                if (r < 0 && !first)
                        first = log_debug_errno(r, "Failed to pin the %s to the service CPUs: %m", pools[i].name);
                else if (r > 0)
                        away += r;
        }
        return first < 0 ? first : away;
}

/* Whether every thread is pinned where repin(pools, n, now) pins it (exact), or at
 * least to some of the online service CPUs `now` and nothing else (!exact). */
static bool pinned(const struct service_pool *pools, size_t n, const nb_cpumask *now, bool exact) {
        if (!service_cpus_thread_within(pthread_self(), now, exact))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!pools[i].pinned(pools[i].pool, now, exact))
                        return false;
        return true;
}

/* The daemon's work must run on the service CPUs only, and others can change where
 * its threads may run: a service CPU going offline lets the threads pinned to it run
 * anywhere; a CPU coming online, or a change of the daemon's cpuset, resets every
 * thread to the cpuset's CPUs; taskset(1) needs no cooperation. So each tick reads
 * the online service CPUs and each thread's affinity (a few syscalls), and on any
 * difference pins them all again: the event loop and the walker to the online service
 * CPUs (the reader threads too), each worker to its own CPU when that is online. A CPU back online joins the
 * cpuset only a moment later (deferred work in the kernel), and a pin taken before
 * then holds fewer CPUs than asked: it is taken again on the next tick. With no
 * service CPU online the tick does nothing: returns false. */
#define REPIN_LOG_MS 60000
#define REPIN_FAILING_LOG 4     /* ticks: 2 s */

bool service_cpus_check(struct service_pins *s, const char *sys_root, const struct service_pool *pools, size_t n) {
        nb_cpumask online, now = {};
        char all[256], cur[256];
        bool changed;
        int r;

        if (topology_read_online_cpus(sys_root, &online) < 0)
                return cpumask_weight(&s->online) > 0;   /* cannot tell: as before */
        for (size_t i = 0; i < ELEMENTSOF(now.w); i++)
                now.w[i] = s->service.w[i] & online.w[i];
        changed = memcmp(&now, &s->online, sizeof(now)) != 0;
        if (cpumask_weight(&now) == 0) {
                if (changed)
                        log_error("All service CPUs (%s) are offline: not scanning or moving anything until one is "
                                  "back (the daemon's work must not run on the workload's CPUs)",
                                  (cpumask_format(&s->service, all, sizeof(all)), all));
                s->online = now;
                return false;
        }
        if (!changed && pinned(pools, n, &now, true))
                return true;
        r = repin(pools, n, &now);
        s->repins++;
        if (r < 0) {
                /* Tried again next tick. Work goes on where every thread is on some of
                 * the service CPUs (a CPU back online and not yet in the cpuset, or a
                 * cpuset that keeps one of them for good); none where a thread may be
                 * elsewhere. A CPU back online makes this happen for a tick or two:
                 * said only when it lasts. */
                bool safe = pinned(pools, n, &now, false);

                cpumask_format(&now, cur, sizeof(cur));
                if (++s->repin_failing == REPIN_FAILING_LOG && safe)
                        log_warning_errno(r, "Cannot pin the daemon's threads to all of service CPUs %s: %m; working "
                                          "on those they have (is the daemon's cpuset without some of them?)", cur);
                else if (s->repin_failing == REPIN_FAILING_LOG)
                        log_error_errno(r, "Cannot pin the daemon's threads to service CPUs %s: %m; not scanning or "
                                        "moving anything until they can be (is the daemon's cpuset without them?)",
                                        cur);
                return safe;
        }
        if (s->repin_failing >= REPIN_FAILING_LOG)
                log_notice("The daemon's threads are pinned to service CPUs again: working");
        s->repin_failing = 0;
        cpumask_format(&s->service, all, sizeof(all));
        cpumask_format(&now, cur, sizeof(cur));
        if (changed && cpumask_weight(&now) < cpumask_weight(&s->service))
                log_warning("Service CPUs %s: only %s online, working on %s (%d worker(s) away from their own CPU)",
                            all, cur, cur, r);
        else if (changed)
                log_notice("Service CPUs %s all online again: each worker back on its own CPU", all);
        else if (!s->repin_logged_ms || clock_now_ms() - s->repin_logged_ms >= REPIN_LOG_MS) {
                /* At most once a minute: someone may keep doing it. */
                s->repin_logged_ms = clock_now_ms();
                log_warning("The daemon's threads were allowed on other CPUs than the service CPUs (a cpuset "
                            "change, or taskset): pinned to service CPUs %s again", cur);
        }
        s->online = now;
        return true;
}
