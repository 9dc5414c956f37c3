/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service CPUs (daemon/service-cpus.h) on their own: which ones, against the
 * online CPUs and the ones this process may use; pinning a thread and seeing where it
 * may run; and the check before each tick that pins every thread back where it
 * belongs, or stops the work while no service CPU is online. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "migrator.h"
#include "service-cpus.h"
#include "test.h"
#include "tmptree.h"

static char tmpdir[] = "/tmp/test-service-cpus-XXXXXX";
static char sys_online[256], sys_offline[256];
static nb_cpumask allowed;     /* this process's CPUs at start */
static int first_cpu = -1, other_cpu = -1;

/* The log lines at notice level or above since the last clear: what an operator reads. */
static char logged[8192];

static void capture(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(logged);

        snprintf(logged + n, sizeof(logged) - n, "<%d>%s\n", level, msg);
}

/* The check with the migration workers as its one pool, as the manager hands it. */
static bool check_with(struct service_pins *s, const char *sys_root, struct migrator *mig) {
        struct service_pool pool = migrator_service_pool(mig);
        return service_cpus_check(s, sys_root, &pool, 1);
}

static void write_online(const char *root, const char *text) {
        tmptree_write_at(root, "devices/system/cpu/online", text);
}

TEST(resolve_against_online_and_allowed) {
        nb_cpumask want = {}, got = {};

        /* Empty: the lowest online CPU this process may use. */
        CHECK_INT(service_cpus_resolve(&want, sys_online, &got), 0);
        CHECK_INT(cpumask_weight(&got), 1);
        CHECK(cpumask_test(&got, (unsigned) first_cpu));
        /* One we may use: that one. */
        cpumask_set(&want, (unsigned) first_cpu);
        CHECK_INT(service_cpus_resolve(&want, sys_online, &got), 0);
        CHECK(cpumask_equal(&got, &want));
        /* None online: refused. */
        CHECK_INT(service_cpus_resolve(&want, sys_offline, &got), -EINVAL);
        /* A CPU that does not exist: refused. */
        want = (nb_cpumask) {};
        cpumask_set(&want, 4000);
        CHECK_INT(service_cpus_resolve(&want, sys_online, &got), -EINVAL);
}

TEST(pin_and_see) {
        nb_cpumask one = {};

        cpumask_set(&one, (unsigned) first_cpu);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &one), 0);
        CHECK(service_cpus_thread_within(pthread_self(), &one, true));
        CHECK(service_cpus_thread_within(pthread_self(), &allowed, false));
        if (other_cpu >= 0) {
                nb_cpumask other = {};
                cpumask_set(&other, (unsigned) other_cpu);
                CHECK(!service_cpus_thread_within(pthread_self(), &other, false));
        }
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &allowed), 0);
}

/* Someone (taskset, a cpuset change) puts the event loop on another CPU: the check
 * pins it back and counts it; with no service CPU online it says to stop. */
TEST(check_repins_and_stops_when_offline) {
        struct service_pins s = {};
        struct migrator *mig = NULL;
        nb_cpumask one = {}, other = {};

        if (other_cpu < 0)
                TEST_SKIP("one CPU: nowhere else to move a thread");
        cpumask_set(&one, (unsigned) first_cpu);
        cpumask_set(&other, (unsigned) other_cpu);
        s.service = s.online = one;
        CHECK_INT(migrator_new(&one, 0, 512, &mig), 0);
        if (!mig)
                return;
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &one), 0);
        CHECK(check_with(&s, sys_online, mig));
        CHECK_INT(s.repins, 0);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &other), 0);
        CHECK(check_with(&s, sys_online, mig));
        CHECK_INT(s.repins, 1);
        CHECK(service_cpus_thread_within(pthread_self(), &one, true));
        /* The service CPU goes offline: no work (and nothing pinned to nowhere). */
        CHECK(!check_with(&s, sys_offline, mig));
        CHECK(cpumask_weight(&s.online) == 0);
        /* Back online: work again. */
        CHECK(check_with(&s, sys_online, mig));
        migrator_free(mig);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &allowed), 0);
}

/* The stored tree tests/data/sys-cpus (CPUs 0-3 online), this process kept to its first
 * CPU for the while: each refusal names what it is against, and a list only partly
 * usable is cut to what is, with a warning. */
TEST(resolve_against_stored_sys_cpus) {
        nb_cpumask want = {}, got = {}, one = {};
        char expect[256];
        int elsewhere = -1;

        if (first_cpu > 3)
                TEST_SKIP("this process may not run on any of CPUs 0-3 (sys-cpus' online CPUs)");
        elsewhere = first_cpu == 0 ? 1 : 0;
        cpumask_set(&one, (unsigned) first_cpu);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &one), 0);

        logged[0] = 0;
        CHECK_INT(service_cpus_resolve(&want, TEST_DATA_DIR "/sys-cpus", &got), 0);
        CHECK(cpumask_equal(&got, &one));
        CHECK_STR(logged, "");

        /* 0-3: online, but only the first CPU allowed: that one, said. */
        for (unsigned c = 0; c < 4; c++)
                cpumask_set(&want, c);
        CHECK_INT(service_cpus_resolve(&want, TEST_DATA_DIR "/sys-cpus", &got), 0);
        CHECK(cpumask_equal(&got, &one));
        snprintf(expect, sizeof(expect), "<4>service_cpus=0-3: only %d are online and allowed (online: 0-3, "
                 "allowed: %d), using those\n", first_cpu, first_cpu);
        CHECK_STR(logged, expect);

        /* Online, not allowed: refused. */
        logged[0] = 0;
        want = (nb_cpumask) {};
        cpumask_set(&want, (unsigned) elsewhere);
        got = (nb_cpumask) {};
        CHECK_INT(service_cpus_resolve(&want, TEST_DATA_DIR "/sys-cpus", &got), -EINVAL);
        CHECK_INT(cpumask_weight(&got), 0);      /* not written on a refusal */
        snprintf(expect, sizeof(expect), "<3>service_cpus=%d names no CPU this process may run on (allowed: %d), "
                 "refusing to start\n", elsewhere, first_cpu);
        CHECK_STR(logged, expect);

        /* Allowed or not, not online: refused, naming the online ones. */
        logged[0] = 0;
        want = (nb_cpumask) {};
        cpumask_set(&want, 7);
        CHECK_INT(service_cpus_resolve(&want, TEST_DATA_DIR "/sys-cpus", &got), -EINVAL);
        CHECK_STR(logged, "<3>service_cpus=7 names no online CPU (online: 0-3), refusing to start\n");

        CHECK_INT(service_cpus_pin_thread(pthread_self(), &allowed), 0);
}

/* No online file under sys_root: an error that names the file. */
TEST(resolve_without_online_file) {
        nb_cpumask want = {}, got;
        char root[512], expect[1024];

        snprintf(root, sizeof(root), "%s/nothing", tmpdir);
        logged[0] = 0;
        CHECK_INT(service_cpus_resolve(&want, root, &got), -ENOENT);
        snprintf(expect, sizeof(expect), "<3>Failed to read the online CPUs from %s/devices/system/cpu/online: "
                 "No such file or directory\n", root);
        CHECK_STR(logged, expect);
}

/* A mask with no CPU of this machine: -EINVAL, and the thread stays where it was. */
TEST(pin_to_nothing_usable) {
        nb_cpumask none = {}, far = {};

        cpumask_set(&far, 4000);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &far), -EINVAL);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &none), -EINVAL);
        CHECK(service_cpus_thread_within(pthread_self(), &allowed, true));
        CHECK(!service_cpus_thread_within(pthread_self(), &none, false));
        CHECK(!service_cpus_thread_within(pthread_self(), &far, false));
}

/* The glibc set the affinity calls take: sized for NB_CPUS_MAX, holding the mask. */
TEST(cpuset_for_the_affinity_calls) {
        nb_cpumask m = {};
        size_t size = 0;
        cpu_set_t *set;

        cpumask_set(&m, 0);
        cpumask_set(&m, 4000);
        set = service_cpus_cpuset_new(&m, &size);
        CHECK(set != NULL);
        if (!set)
                return;
        CHECK_INT(size, CPU_ALLOC_SIZE(NB_CPUS_MAX));
        CHECK_INT(CPU_COUNT_S(size, set), 2);
        CHECK(CPU_ISSET_S(0, size, set) && CPU_ISSET_S(4000, size, set));
        CPU_FREE(set);
}

/* The threads of this process but the calling one (the migrator's workers). */
static int others_to(const nb_cpumask *cpus) {
        size_t size;
        cpu_set_t *set = service_cpus_cpuset_new(cpus, &size);
        DIR *d = opendir("/proc/self/task");
        struct dirent *de;
        int n = 0;

        while (set && d && (de = readdir(d))) {
                pid_t tid = atoi(de->d_name);
                if (tid > 0 && tid != gettid() && sched_setaffinity(tid, size, set) == 0)
                        n++;
        }
        if (d)
                closedir(d);
        CPU_FREE(set);
        return n;
}

/* taskset on a migration worker: the check pins it back to its own CPU; said once a
 * minute at most (someone may keep doing it). */
TEST(check_repins_a_worker) {
        struct service_pins s = {};
        struct migrator *mig = NULL;
        nb_cpumask one = {}, other = {};

        if (other_cpu < 0)
                TEST_SKIP("one CPU: nowhere else to move a thread");
        cpumask_set(&one, (unsigned) first_cpu);
        cpumask_set(&other, (unsigned) other_cpu);
        s.service = s.online = one;
        CHECK_INT(migrator_new(&one, 0, 512, &mig), 0);
        if (!mig)
                return;
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &one), 0);
        CHECK(migrator_pinned(mig, &one, true));
        logged[0] = 0;
        CHECK_INT(others_to(&other), 1);
        CHECK(!migrator_pinned(mig, &one, true));
        CHECK(check_with(&s, sys_online, mig));
        CHECK_INT(s.repins, 1);
        CHECK(migrator_pinned(mig, &one, true));
        CHECK_MSG(strstr(logged, "<4>The daemon's threads were allowed on other CPUs than the service CPUs"),
                  "logged: %s", logged);
        /* Again at once: pinned back again, not said again. */
        logged[0] = 0;
        CHECK_INT(others_to(&other), 1);
        CHECK(check_with(&s, sys_online, mig));
        CHECK_INT(s.repins, 2);
        CHECK(migrator_pinned(mig, &one, true));
        CHECK_STR(logged, "");
        /* Nothing moved: nothing done. */
        CHECK(check_with(&s, sys_online, mig));
        CHECK_INT(s.repins, 2);
        migrator_free(mig);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &allowed), 0);
}

/* The online CPUs cannot be read: as before (work if there was work), nothing re-pinned. */
TEST(check_cannot_read_online) {
        struct service_pins s = {};
        struct migrator *mig = NULL;
        nb_cpumask one = {};
        char root[512];

        snprintf(root, sizeof(root), "%s/nothing", tmpdir);
        cpumask_set(&one, (unsigned) first_cpu);
        s.service = s.online = one;
        CHECK_INT(migrator_new(&one, 0, 512, &mig), 0);
        if (!mig)
                return;
        CHECK(check_with(&s, root, mig));
        CHECK_INT(s.repins, 0);
        s.online = (nb_cpumask) {};
        CHECK(!check_with(&s, root, mig));
        CHECK_INT(s.repins, 0);
        migrator_free(mig);
}

static int intro(void) {
        cpu_set_t set;
        char text[64];

        if (!mkdtemp(tmpdir) || sched_getaffinity(0, sizeof(set), &set) < 0)
                return 1;
        for (int c = 0; c < CPU_SETSIZE && c < NB_CPUS_MAX; c++)
                if (CPU_ISSET(c, &set)) {
                        cpumask_set(&allowed, (unsigned) c);
                        if (first_cpu < 0)
                                first_cpu = c;
                        else if (other_cpu < 0)
                                other_cpu = c;
                }
        if (first_cpu < 0)
                return 1;
        snprintf(sys_online, sizeof(sys_online), "%s/on", tmpdir);
        snprintf(sys_offline, sizeof(sys_offline), "%s/off", tmpdir);
        mkdir(sys_online, 0755);
        mkdir(sys_offline, 0755);
        /* The first two CPUs we may use, or the only one. */
        if (other_cpu >= 0)
                snprintf(text, sizeof(text), "%d,%d\n", first_cpu, other_cpu);
        else
                snprintf(text, sizeof(text), "%d\n", first_cpu);
        write_online(sys_online, text);
        /* Every CPU but the first. */
        snprintf(text, sizeof(text), "%d\n", first_cpu + 1);
        write_online(sys_offline, text);
        log_set_max_level(LOG_LVL_NOTICE);
        log_set_sink(capture);
        return 0;
}

static void outro(void) {
        tmptree_remove(tmpdir);
}

/* The check knows a pool only by what it is handed: pinned where it belongs, it is
 * not pinned again; moved, it is, and a failure of its pin is the check's. */
struct fake_pool {
        bool in_place;
        int repin_result;
        unsigned repins;
};

static int fake_repin(void *pool, const nb_cpumask *cpus) {
        struct fake_pool *f = pool;
        f->repins++;
        f->in_place = f->repin_result >= 0;
        return f->repin_result;
}

static bool fake_pinned(void *pool, const nb_cpumask *cpus, bool exact) {
        return ((struct fake_pool *) pool)->in_place;
}

TEST(pools_handed_over) {
        struct fake_pool f = { .in_place = true };
        struct service_pool pool = { "fake pool", fake_repin, fake_pinned, &f };
        struct service_pins s = {};
        nb_cpumask one = {};

        if (first_cpu < 0)
                TEST_SKIP("no CPU of this process's affinity is online");
        cpumask_set(&one, (unsigned) first_cpu);
        s.service = s.online = one;
        CHECK(service_cpus_pin_thread(pthread_self(), &one) == 0);
        CHECK(service_cpus_check(&s, sys_online, &pool, 1));
        CHECK_INT(f.repins, 0);
        f.in_place = false;
        CHECK(service_cpus_check(&s, sys_online, &pool, 1));
        CHECK_INT(f.repins, 1);
        /* A pin that does not hold: tried, and no work while the pool may be elsewhere. */
        f.in_place = false;
        f.repin_result = -EINVAL;
        CHECK(!service_cpus_check(&s, sys_online, &pool, 1));
        CHECK_INT(f.repins, 2);
        CHECK(service_cpus_pin_thread(pthread_self(), &allowed) == 0);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
