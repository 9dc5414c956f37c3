/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service CPUs: the only CPUs the daemon's threads run on. Which ones (the
 * configured list against the online CPUs and our own affinity), and the one helper
 * every pinning goes through. */
#pragma once
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include "nodemask.h"

/* Resolves the configured service CPUs against the online CPUs (read under sys_root)
 * and the ones this process may use: an empty list means the lowest-numbered online
 * CPU we may use; a list with no online CPU, or none we may use, is refused (logged,
 * -EINVAL). A list only partly usable is cut to what is usable, with a warning. */
int service_cpus_resolve(const nb_cpumask *configured, const char *sys_root, nb_cpumask *ret);

/* Pins the calling thread to the service CPUs, logging the outcome. Called by main
 * before any other thread exists: every thread created later inherits the mask, so no
 * work ever runs on a workload's CPU. Returns 0 or -errno (logged). */
int service_cpus_pin_process(const nb_cpumask *cpus);

/* A glibc cpu_set_t holding `cpus`, sized for NB_CPUS_MAX (its size in *ret_size),
 * for the affinity calls; NULL when out of memory. Free it with CPU_FREE(). */
cpu_set_t *service_cpus_cpuset_new(const nb_cpumask *cpus, size_t *ret_size);

/* Whether `thread` may run on exactly `cpus` now (exact), or on some of them and no
 * other (!exact). Someone else can change that: a cpuset change or a CPU coming
 * online resets the affinity of the cpuset's tasks, and taskset(1) needs no
 * cooperation. */
bool service_cpus_thread_within(pthread_t thread, const nb_cpumask *cpus, bool exact);

/* Pins `thread` (pthread_self() for the caller) to `cpus`. Returns 0, -EAGAIN when the
 * kernel kept it to fewer CPUs than asked (a CPU just back online that its cpuset has
 * not taken back yet), or -errno (-EINVAL: none of `cpus` usable now). */
int service_cpus_pin_thread(pthread_t thread, const nb_cpumask *cpus);

/* One pool of the daemon's threads besides the event loop (the cgroup walker, the
 * reader threads, the migration workers), as each pool's module describes it
 * (walker_service_pool(), ...) and the manager hands it to service_cpus_check(): this
 * module knows none of them, they call its pinning helpers. */
struct service_pool {
        const char *name;          /* for the log: "cgroup walker" */
        /* Pins the pool's threads to the online service CPUs `cpus` again. Returns how
         * many run away from a CPU of their own (the workers: their CPU offline), or
         * -errno. */
        int (*repin)(void *pool, const nb_cpumask *cpus);
        /* Whether its threads are where repin() pins them (exact), or on some of cpus
         * and nothing else (!exact). */
        bool (*pinned)(void *pool, const nb_cpumask *cpus, bool exact);
        void *pool;
};

/* Where the daemon's threads are pinned (service_cpus_check). */
struct service_pins {
        nb_cpumask service;          /* the service CPUs the workers were started on */
        nb_cpumask online;           /* of those, the ones every thread is pinned to */
        uint64_t repin_logged_ms;    /* when threads pinned by others were last logged */
        unsigned repin_failing;      /* checks in a row whose re-pinning did not hold */
        uint64_t repins;             /* re-pinnings of all threads: hotplug, cpuset, taskset, retries */
};

/* Before each tick: the calling thread (the event loop) and the pools[0..n) pinned to
 * the online service CPUs again if anything moved them. Returns whether work may go on
 * (every thread on some service CPU). */
bool service_cpus_check(struct service_pins *s, const char *sys_root, const struct service_pool *pools, size_t n);
