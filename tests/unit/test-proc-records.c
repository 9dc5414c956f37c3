/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The process records (daemon/proc-records.h) on a fake /proc: admission (ours, gone,
 * zombie, kernel thread, the daemon itself), a pid reused by another process, the
 * pidfds held only while wanted and within the descriptor reserve, the poll that
 * marks exited processes, and the sweep. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "proc-records.h"
#include "test.h"
#include "tmptree.h"

static char tmpdir[] = "/tmp/test-proc-records-XXXXXX";
static char proc_root[256];

/* /proc/PID/stat with the given state, flags and start time. */
static void fake_stat(int pid, const char *comm, char state, unsigned long flags, uint64_t starttime) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%d", proc_root, pid);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
        f = fopen(path, "w");
        if (!f)
                abort();
        fprintf(f, "%d (%s) %c 1 1 1 0 -1 %lu 0 0 0 0 0 0 0 0 20 0 1 0 %" PRIu64
                " 1000 10 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 4 5 6 7 8 9 10 0\n",
                pid, comm, state, flags, starttime);
        fclose(f);
}

static void gone(int pid) {
        char path[512];

        snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
        unlink(path);
}

static const struct cg_rec cg_all = { .path = "/db.slice", .mode = CG_MODE_BALANCE, .covers_uid = CGROUP_COVERS_ALL };

/* A pipe as the pidfd: readable (exited) once its write end is closed. */
static int write_ends[64];
static int fake_pidfd(pid_t pid) {
        int p[2];

        if (pipe(p) < 0)
                return -errno;
        write_ends[pid % 64] = p[1];
        return p[0];
}

TEST(admit_new_then_known) {
        struct proc_records r;
        struct proc_rec *p, *again;
        bool is_new;

        proc_records_init(&r);
        fake_stat(100, "postgres", 'S', 0, 5000);
        p = proc_records_admit(&r, proc_root, &cg_all, 100, 1000, &is_new);
        CHECK(p && is_new);
        CHECK(p && p->pid == 100 && p->starttime == 5000 && strcmp(p->comm, "postgres") == 0);
        /* Due at once: its schedule (scan.c's) starts at zero. */
        CHECK(p && p->pidfd == -1 && p->sched.next_scan_ms <= 1000 && p->reason == _REASON_MAX);
        again = proc_records_admit(&r, proc_root, &cg_all, 100, 1000, &is_new);
        CHECK(again == p && !is_new);
        CHECK(proc_records_find(&r, 100) == p);
        CHECK(proc_records_find(&r, 101) == NULL);
        proc_records_done(&r);
}

TEST(admit_refuses_what_is_not_ours) {
        struct proc_records r;
        bool is_new = true;

        proc_records_init(&r);
        fake_stat(200, "zombie", 'Z', 0, 1);
        fake_stat(201, "kworker/0:1", 'I', 0x00200000, 1);      /* PF_KTHREAD */
        fake_stat((int) getpid(), "numabalanced", 'S', 0, 1);
        CHECK(proc_records_admit(&r, proc_root, &cg_all, 200, 0, &is_new) == NULL);
        CHECK(proc_records_admit(&r, proc_root, &cg_all, 201, 0, &is_new) == NULL);
        CHECK(proc_records_admit(&r, proc_root, &cg_all, 202, 0, &is_new) == NULL);   /* no such process */
        CHECK(proc_records_admit(&r, proc_root, &cg_all, getpid(), 0, &is_new) == NULL);
        CHECK(!is_new);
        CHECK_INT(r.n, 0);
        proc_records_done(&r);
}

/* A pid reused by another process (another start time) is a new record, once the old
 * one is due (without a pidfd it is re-identified then). */
TEST(reused_pid_is_a_new_process) {
        struct proc_records r;
        struct proc_rec *old, *p;
        bool is_new;

        proc_records_init(&r);
        fake_stat(300, "first", 'S', 0, 100);
        old = proc_records_admit(&r, proc_root, &cg_all, 300, 0, &is_new);
        CHECK(old && is_new);
        if (!old)
                return;
        old->seen_tick = 1;
        old->sched.next_scan_ms = 5000;
        fake_stat(300, "second", 'S', 0, 200);
        /* Not due: the record stands as it was. */
        CHECK(proc_records_admit(&r, proc_root, &cg_all, 300, 1000, &is_new) == old && !is_new);
        /* Due: re-identified. */
        p = proc_records_admit(&r, proc_root, &cg_all, 300, 6000, &is_new);
        CHECK(p && p != old && is_new && p->starttime == 200 && strcmp(p->comm, "second") == 0);
        CHECK_INT(old->seen_tick, 0);
        CHECK_INT(r.n, 2);
        if (p)
                p->seen_tick = 2;
        CHECK(proc_records_current(&r, 300, 2));
        proc_records_sweep(&r, 2);
        CHECK_INT(r.n, 1);
        CHECK(proc_records_find(&r, 300) == p);
        proc_records_done(&r);
}

/* A pidfd while wanted, closed when not; a process without one is checked by stat;
 * the poll marks an exited one; none past the reserve below the descriptor limit. */
TEST(pidfds_while_balanced) {
        struct proc_records r;
        struct proc_rec *p;
        bool is_new;

        proc_records_init(&r);
        r.open_pidfd = fake_pidfd;
        fake_stat(400, "worker", 'S', 0, 7);
        p = proc_records_admit(&r, proc_root, &cg_all, 400, 0, &is_new);
        CHECK(p != NULL);
        if (!p)
                return;
        proc_records_update_pidfd(&r, proc_root, p, true);
        CHECK(p->pidfd >= 0);
        CHECK_INT(r.n_pidfds, 1);
        proc_records_poll_exited(&r);
        CHECK(!p->exited);
        /* Alive with a pidfd: not read again (its stat may go away). */
        gone(400);
        CHECK(proc_records_admit(&r, proc_root, &cg_all, 400, 0, &is_new) == p);
        close(write_ends[400 % 64]);
        proc_records_poll_exited(&r);
        CHECK(p->exited);
        /* Exited: read again, and it is gone. */
        CHECK(proc_records_admit(&r, proc_root, &cg_all, 400, 0, &is_new) == NULL);
        proc_records_update_pidfd(&r, proc_root, p, false);
        CHECK_INT(p->pidfd, -1);
        CHECK_INT(r.n_pidfds, 0);
        /* At the reserve: none. */
        fake_stat(401, "worker", 'S', 0, 8);
        p = proc_records_admit(&r, proc_root, &cg_all, 401, 0, &is_new);
        r.fd_limit = PIDFD_RESERVE;
        if (p)
                proc_records_update_pidfd(&r, proc_root, p, true);
        CHECK(p && p->pidfd == -1);
        /* A pidfd for a process whose start time is not the record's: refused. */
        r.fd_limit = 1024;
        if (p) {
                fake_stat(401, "worker", 'S', 0, 9);
                proc_records_update_pidfd(&r, proc_root, p, true);
                CHECK(p->pidfd == -1);
        }
        proc_records_done(&r);
        CHECK_INT(r.n_pidfds, 0);
}

/* Sorted by pid whatever the order they come in; the sweep keeps the seen. */
TEST(sorted_and_swept) {
        struct proc_records r;
        static const int pids[] = { 509, 501, 507, 503, 505 };
        bool is_new;

        proc_records_init(&r);
        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                struct proc_rec *p;

                fake_stat(pids[i], "p", 'S', 0, 1);
                p = proc_records_admit(&r, proc_root, &cg_all, pids[i], 0, &is_new);
                if (p)
                        p->seen_tick = pids[i] % 4 == 1 ? 3 : 2;
        }
        CHECK_INT(r.n, 5);
        for (size_t i = 1; i < r.n; i++)
                CHECK(r.v[i - 1]->pid < r.v[i]->pid);
        proc_records_sweep(&r, 3);
        CHECK_INT(r.n, 3);
        CHECK(proc_records_find(&r, 501) && proc_records_find(&r, 505) && proc_records_find(&r, 509));
        CHECK(!proc_records_find(&r, 503) && !proc_records_find(&r, 507));
        proc_records_done(&r);
}

static int intro(void) {
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        mkdir(proc_root, 0755);
        return 0;
}

static void outro(void) {
        tmptree_remove(tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
