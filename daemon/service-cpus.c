/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which CPUs are the service CPUs, and pinning threads to them (service-cpus.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "service-cpus.h"
#include "topology.h"

cpu_set_t *cpu_set_new(const nb_cpumask *cpus, size_t *ret_size) {
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

bool cpus_thread_within(pthread_t thread, const nb_cpumask *cpus, bool exact) {
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

int cpus_pin_thread(pthread_t thread, const nb_cpumask *cpus) {
        size_t size;
        cpu_set_t *set = cpu_set_new(cpus, &size);
        int r;

        if (!set)
                return -ENOMEM;
        r = -pthread_setaffinity_np(thread, size, set);
        CPU_FREE(set);
        /* The kernel cuts the mask to the cpuset's CPUs, and a CPU just back online
         * rejoins the cpuset only when the kernel's hotplug work has run: a pin taken
         * before then holds fewer CPUs than asked. */
        if (r == 0 && !cpus_thread_within(thread, cpus, true))
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
        for (int tries = 0; (r = cpus_pin_thread(pthread_self(), cpus)) == -EAGAIN && tries < 10; tries++)
                usleep(50 * 1000);
        if (r < 0)
                return log_error_errno(r, "Failed to pin to the service CPUs %s: %m", s);
        log_info("Running on service CPUs %s", s);
        return 0;
}
