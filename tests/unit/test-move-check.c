/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check before each move call (daemon/move-check.h) on its own, without a tick:
 * a job planned for the stored process 3001 (tests/data/manager) in a fake /proc and
 * cgroup tree, and one change at a time since its scan: each is seen, and says why. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config.h"
#include "move-check.h"
#include "proc.h"
#include "proc-records.h"
#include "test.h"
#include "topology.h"

static char tmpdir[] = "/tmp/test-move-check-XXXXXX";
static char proc_root[256], cgroup_root[256];
static struct topology *topo;

/* A shell command, "@" in it standing for arg (a path of ours). */
static void sh(const char *cmd, const char *arg) {
        char out[4096];
        size_t o = 0;

        for (const char *c = cmd; *c && o + strlen(arg) + 1 < sizeof(out); c++)
                if (*c == '@') {
                        memcpy(out + o, arg, strlen(arg));
                        o += strlen(arg);
                } else
                        out[o++] = *c;
        out[o] = 0;
        if (system(out) != 0)
                abort();
}

/* A fresh copy of the process as it was scanned, in /app.slice (opted in). */
static void fresh_process(void) {
        sh("rm -rf '@/3001' && cp -r '" TEST_DATA_DIR "/manager/proc/3001' '@/3001' && "
           "echo 0::/app.slice > '@/3001/cgroup'", proc_root);
}

static void edit(const char *name, const char *what, const char *with) {
        char path[512], *text = NULL, *at, out[65536];
        size_t len = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/3001/%s", proc_root, name);
        f = fopen(path, "r");
        if (!f || getdelim(&text, &len, 0, f) < 0 || !(at = strstr(text, what)))
                abort();
        fclose(f);
        *at = 0;
        snprintf(out, sizeof(out), "%s%s%s", text, with, at + strlen(what));
        f = fopen(path, "w");
        fputs(out, f);
        fclose(f);
        free(text);
}

/* Runs the check of one job (the 32 MiB VMA to node 0) after change(); its verdict. */
static const char *verdict(void (*change)(void)) {
        struct nb_config cfg;
        struct move_check_env env;
        struct proc_stat st;
        struct proc_rec p = { .pid = 3001 };
        struct migrate_range range = { 0x7f3a00000000, 0x7f3a02000000, 4096 };
        struct migrate_job job = { .pid = 3001, .target_node = 0, .ranges = &range, .n_ranges = 1, .max_pages = 8192,
                                   .userdata = &p };
        const struct migrate_stop *stop = NULL;
        struct move_check *c = NULL;
        int r;

        fresh_process();
        if (proc_read_stat(proc_root, 3001, &st) < 0)
                abort();
        p.starttime = job.starttime = st.starttime;
        p.layout = st.layout;
        config_defaults(&cfg);
        free(cfg.cgroup_root);
        cfg.cgroup_root = strdup(cgroup_root);
        cfg.cgroups = calloc(1, sizeof(*cfg.cgroups));
        cfg.cgroups[0] = (struct cgroup_rule) { strdup("/app.slice"), CG_MODE_BALANCE };
        cfg.n_cgroups = 1;
        env = (struct move_check_env) { .cfg = &cfg, .topo = topo, .proc_root = proc_root,
                                        .sys_root = TEST_DATA_DIR "/sys/2n2c" };
        CHECK_INT(move_check_prepare(&env, &job, 1, &c), 0);
        config_done(&cfg);          /* prepared: the checks hold their own copy */
        CHECK(job.may_move == move_check_job && job.may_move_ctx);
        if (change)
                change();
        r = job.may_move(job.may_move_ctx, &job, &stop);
        move_check_free(c);
        if (r == 0)
                return "move";
        return stop ? stop->name : "?";
}

static void gone(void) {
        sh("rm -rf '@/3001'", proc_root);
}

static void leaves_the_cgroup(void) {
        sh("echo 0::/other.slice > '@/3001/cgroup'", proc_root);
}

static void binds_to_node_1(void) {
        edit("numa_maps", "7f3a00000000 default", "7f3a00000000 bind:1");
}

static void locks_it(void) {
        char path[512];
        FILE *f;

        edit("status", "VmLck:\t       0 kB", "VmLck:\t   32768 kB");
        snprintf(path, sizeof(path), "%s/3001/smaps", proc_root);
        f = fopen(path, "w");
        fputs("7f3a00000000-7f3a02000000 rw-p 00000000 00:00 0 \nSize: 32768 kB\nVmFlags: rd wr mr mw me lo ac \n", f);
        fclose(f);
}

static void reused(void) {
        /* Another process under the same pid: another start time. */
        edit("stat", " 5000 ", " 5001 ");
}

TEST(each_change_is_seen) {
        CHECK_STR(verdict(NULL), "move");
        CHECK_STR(verdict(gone), "exited");
        CHECK_STR(verdict(reused), "exited");
        CHECK_STR(verdict(leaves_the_cgroup), "cgroup-changed");
        CHECK_STR(verdict(binds_to_node_1), "policy-changed");
        CHECK_STR(verdict(locks_it), "locked");
}

static int intro(void) {
        if (!mkdtemp(tmpdir))
                return 1;
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        snprintf(cgroup_root, sizeof(cgroup_root), "%s/cg", tmpdir);
        sh("mkdir -p '@'", proc_root);
        sh("mkdir -p '@/app.slice' '@/other.slice'", cgroup_root);
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0;
}

static void outro(void) {
        topology_free(topo);
        sh("rm -rf '@'", tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
