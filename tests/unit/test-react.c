/* SPDX-License-Identifier: GPL-2.0-or-later */
/* React scans (daemon/react.h) without a manager: records in a fake /proc, a scripted
 * source whose node-change events come through a pipe, and hooks that count what the
 * pass asks of the tick's machinery. When a node change schedules a react scan (and
 * when it does not), that one event pending at a time cannot postpone it, that the
 * pass scans only the due processes the last tick saw in an opted-in cgroup and that
 * still exist, that a pass refused by its hooks touches nothing, and that the event
 * and the timer reach the pass through the event loop. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "clock.h"
#include "config.h"
#include "react.h"
#include "test.h"
#include "topology.h"

static char tmpdir[] = "/tmp/test-react-XXXXXX";
static char proc_root[256];
static struct topology *topo;
static int events[2] = { -1, -1 };     /* the source's ring buffer: (pid, node) pairs */
static unsigned n_samples;

static int scripted_sample(const struct node_time_source *s, const char *root, pid_t pid, const struct topology *t,
                           struct node_time_state *st, uint64_t *ns_by_node) {
        n_samples++;
        return 1;
}

static int scripted_events_fd(const struct node_time_source *s) {
        return events[0];
}

static int scripted_consume(const struct node_time_source *s, void (*cb)(void *userdata, pid_t tgid, int node),
                            void *userdata) {
        int ev[2], n = 0;

        while (read(events[0], ev, sizeof(ev)) == sizeof(ev)) {
                cb(userdata, ev[0], ev[1]);
                n++;
        }
        return n;
}

static const struct node_time_source scripted = {
        .name = "test", .sample = scripted_sample, .events_fd = scripted_events_fd, .events_consume = scripted_consume,
};

/* What the pass asked of the hooks. */
static unsigned n_begun, n_ended;
static pid_t scanned[8];
static size_t n_scanned;
static bool refuse;             /* begin says no scan may run now */
static int pass_state;

static void *hook_begin(void *userdata) {
        n_begun++;
        return refuse ? NULL : &pass_state;
}

static void hook_scan(void *userdata, void *pass, struct proc_rec *p, uint64_t now) {
        if (pass == &pass_state && n_scanned < 8)
                scanned[n_scanned++] = p->pid;
}

static void hook_end(void *userdata, void *pass, uint64_t now) {
        n_ended += pass == &pass_state;
}

static void fake_stat(int pid, uint64_t starttime) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%d", proc_root, pid);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
        f = fopen(path, "w");
        if (!f)
                abort();
        fprintf(f, "%d (app) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %" PRIu64
                " 1000 10 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 4 5 6 7 8 9 10 0\n",
                pid, starttime);
        fclose(f);
}

struct fixture {
        struct nb_config cfg;
        struct cg_rec cg;
        struct proc_rec p[4];      /* pids 100, 200, 300, 400 */
        struct proc_rec *v[4];
        struct proc_records procs;
        struct cost_ledger cost;
        struct counters counters;
        struct react r;
};

static void fixture_start(struct fixture *f) {
        memset(f, 0, sizeof(*f));
        config_defaults(&f->cfg);
        f->cfg.react_ms = 20;
        f->cfg.scan_min_ms = 1000;
        f->cg = (struct cg_rec) { .path = "/app.slice", .mode = CG_MODE_BALANCE, .seen = true };
        f->counters.tick = 5;
        for (int i = 0; i < 4; i++) {
                f->p[i] = (struct proc_rec) { .pid = 100 * (i + 1), .starttime = 7, .pidfd = -1, .cg = &f->cg,
                                              .seen_tick = 5 };
                f->p[i].pl.primed = true;
                f->p[i].sched.next_scan_ms = clock_now_ms() + 60000;
                f->p[i].sched.interval_ms = 8000;
                f->v[i] = &f->p[i];
                fake_stat(f->p[i].pid, 7);
        }
        f->procs = (struct proc_records) { .v = f->v, .n = 4 };
        react_init(&f->r, &(struct react_hooks) { .begin = hook_begin, .scan = hook_scan, .end = hook_end });
        react_set_env(&f->r, &(struct react_env) {
                .cfg = &f->cfg, .proc_root = proc_root, .topo = topo, .source = &scripted, .procs = &f->procs,
                .cost = &f->cost, .counters = &f->counters,
        });
        n_samples = n_begun = n_ended = 0;
        n_scanned = 0;
        refuse = false;
}

static void fixture_done(struct fixture *f) {
        react_done(&f->r);
        cost_ledger_done(&f->cost);
        config_done(&f->cfg);
}

/* A node change: the process's window restarts, its scan comes react_ms later (its
 * back-off restarted), or scan_min_ms after its last scan if that is later; another
 * change while it is pending changes nothing. An unknown pid, a cgroup off, or
 * react_ms = 0: counted, nothing scheduled. */
TEST(a_node_change_schedules_one_react_scan) {
        struct fixture f;
        uint64_t before = clock_now_ms(), due;

        fixture_start(&f);
        react_node_changed(&f.r, 100, 1);
        due = f.p[0].sched.react_due_ms;
        CHECK(due >= before + 20 && due <= clock_now_ms() + 20);
        CHECK(f.p[0].sched.next_scan_ms == due && f.p[0].sched.interval_ms == 0);
        CHECK_INT(n_samples, 1);
        react_node_changed(&f.r, 100, 0);
        CHECK_INT(f.p[0].sched.react_due_ms, due);
        CHECK_INT(n_samples, 1);

        f.p[1].last_scan_ms = clock_now_ms();
        react_node_changed(&f.r, 200, 1);
        CHECK(f.p[1].sched.react_due_ms >= f.p[1].last_scan_ms + 1000);

        react_node_changed(&f.r, 999, 1);
        f.cg.mode = CG_MODE_OFF;
        react_node_changed(&f.r, 300, 1);
        f.cg.mode = CG_MODE_BALANCE;
        f.cfg.react_ms = 0;
        react_node_changed(&f.r, 400, 1);
        CHECK(f.p[2].sched.react_due_ms == 0 && f.p[3].sched.react_due_ms == 0);
        CHECK_INT(f.counters.node_events, 6);
        CHECK_INT(n_samples, 2);
        fixture_done(&f);
}

/* Four due processes: 100 is scanned; 200 was not seen by the last tick, 300 has
 * gone (its stat), 400's cgroup was not selected: dropped, not scanned. A process due
 * later stays pending. A pass its hooks refuse touches nothing. */
TEST(the_pass_scans_the_due_processes_still_watched) {
        struct fixture f;
        struct cg_rec unseen;
        char path[512];

        fixture_start(&f);
        unseen = f.cg;
        unseen.seen = false;
        for (int i = 0; i < 4; i++)
                f.p[i].sched.react_due_ms = clock_now_ms() - 1;
        refuse = true;
        react_pass(&f.r);
        CHECK(n_begun == 1 && n_ended == 0 && n_scanned == 0 && f.p[0].sched.react_due_ms != 0);

        refuse = false;
        f.p[1].seen_tick = 4;
        snprintf(path, sizeof(path), "%s/300/stat", proc_root);
        unlink(path);
        f.p[3].cg = &unseen;
        react_pass(&f.r);
        CHECK(n_begun == 2 && n_ended == 1);
        CHECK(n_scanned == 1 && scanned[0] == 100);
        for (int i = 0; i < 4; i++)
                CHECK_INT(f.p[i].sched.react_due_ms, 0);
        CHECK_INT(f.counters.react_scans, 1);

        f.p[0].sched.react_due_ms = clock_now_ms() + 60000;
        react_pass(&f.r);
        CHECK(n_scanned == 1 && f.p[0].sched.react_due_ms != 0);
        fixture_done(&f);
}

/* Through the event loop: the source's event is read when its descriptor is
 * readable, and the timer it arms runs the pass react_ms later, then goes off. */
TEST(the_event_and_the_timer_reach_the_pass) {
        struct fixture f;
        int ev[2] = { 100, 1 };
        sd_event *e = NULL;
        int enabled = -1;

        fixture_start(&f);
        if (sd_event_new(&e) < 0)
                TEST_FAIL("sd_event_new");
        react_start(&f.r, e);
        CHECK(f.r.timer && f.r.events);
        CHECK(write(events[1], ev, sizeof(ev)) == sizeof(ev));
        for (int i = 0; i < 50 && n_ended == 0; i++)
                (void) sd_event_run(e, 100 * 1000);
        CHECK_INT(f.counters.node_events, 1);
        CHECK(n_scanned == 1 && scanned[0] == 100 && f.p[0].sched.react_due_ms == 0);
        CHECK(sd_event_source_get_enabled(f.r.timer, &enabled) >= 0 && enabled == SD_EVENT_OFF);
        react_stop(&f.r);
        CHECK(sd_event_source_get_enabled(f.r.events, &enabled) >= 0 && enabled == SD_EVENT_OFF);
        fixture_done(&f);
        sd_event_unref(e);
}

static int intro(void) {
        if (!mkdtemp(tmpdir) || pipe2(events, O_NONBLOCK | O_CLOEXEC) < 0)
                return 1;
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        mkdir(proc_root, 0755);
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0;
}

static void outro(void) {
        char cmd[512];

        topology_free(topo);
        close(events[0]);
        close(events[1]);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
