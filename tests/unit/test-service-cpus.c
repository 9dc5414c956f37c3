/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service CPUs (daemon/service-cpus.h) on their own: which ones, against the
 * online CPUs and the ones this process may use; pinning a thread and seeing where it
 * may run; and the check before each tick that pins every thread back where it
 * belongs, or stops the work while no service CPU is online. */
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

static char tmpdir[] = "/tmp/test-service-cpus-XXXXXX";
static char sys_online[256], sys_offline[256];
static nb_cpumask allowed;     /* this process's CPUs at start */
static int first_cpu = -1, other_cpu = -1;

static void write_online(const char *root, const char *text) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/devices", root);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/devices/system", root);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/devices/system/cpu", root);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/devices/system/cpu/online", root);
        f = fopen(path, "w");
        if (!f)
                abort();
        fputs(text, f);
        fclose(f);
}

TEST(resolve_against_online_and_allowed) {
        nb_cpumask want = {}, got;

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
        CHECK(service_cpus_check(&s, sys_online, NULL, mig));
        CHECK_INT(s.repins, 0);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &other), 0);
        CHECK(service_cpus_check(&s, sys_online, NULL, mig));
        CHECK_INT(s.repins, 1);
        CHECK(service_cpus_thread_within(pthread_self(), &one, true));
        /* The service CPU goes offline: no work (and nothing pinned to nowhere). */
        CHECK(!service_cpus_check(&s, sys_offline, NULL, mig));
        CHECK(cpumask_weight(&s.online) == 0);
        /* Back online: work again. */
        CHECK(service_cpus_check(&s, sys_online, NULL, mig));
        migrator_free(mig);
        CHECK_INT(service_cpus_pin_thread(pthread_self(), &allowed), 0);
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
        snprintf(text, sizeof(text), "%d%s%d\n", first_cpu, other_cpu >= 0 ? "," : "", other_cpu >= 0 ? other_cpu : 0);
        write_online(sys_online, other_cpu >= 0 ? text : "0\n");
        /* Every CPU but the first. */
        snprintf(text, sizeof(text), "%d\n", first_cpu + 1);
        write_online(sys_offline, text);
        log_set_max_level(LOG_LVL_ERR);
        return 0;
}

static void outro(void) {
        char cmd[512];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
