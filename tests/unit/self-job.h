/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Migration jobs on the test process itself, targeting node 0, where all its memory
 * already is: they run without root and without a second node (test-executor.c,
 * test-migrator.c). Moving pages between nodes is tests/vm/test-migrate.py's. */
#pragma once
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "executor.h"
#include "pagesize.h"
#include "proc.h"
#include "test.h"

#define MB (UINT64_C(1) << 20)
/* The area: 8 MiB touched, then 1 MiB reserved but never touched. */
#define TOUCHED (8 * MB)
#define UNTOUCHED MB

static inline uint64_t self_starttime(void) {
        struct proc_stat st;
        return proc_read_stat("/proc", getpid(), &st) < 0 ? 0 : st.starttime;
}

/* The area, mapped and touched on first use; NULL (a failed check) if it cannot be.
 * It starts one base page past a 2 MiB boundary, always: the executor takes the
 * ragged head page by page and the whole 2 MiB chunks huge page first, and which of
 * the two a job begins with decides what its first batch counts. Where mmap() put it
 * used to decide, and one run in 512 (ASLR put the area on a 2 MiB boundary) failed
 * a_change_is_seen_at_the_next_batch_with_nothing_to_move. */
static inline char *self_area(void) {
        static char *area;

        if (!area) {
                char *m = mmap(NULL, TOUCHED + UNTOUCHED + 2 * MB, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;
                CHECK(m != MAP_FAILED);
                if (m == MAP_FAILED)
                        return NULL;
                a = (char *) (((uintptr_t) m + 2 * MB - 1) & ~(uintptr_t) (2 * MB - 1)) + page_size();
                /* No THP here: every base page is its own page. */
                madvise(a, TOUCHED + UNTOUCHED, MADV_NOHUGEPAGE);
                memset(a, 1, TOUCHED);
                area = a;
        }
        return area;
}

/* A job over the area and a hole (below mmap_min_addr: never mapped, -EFAULT in the
 * query, not counted). rg holds two ranges. */
static inline void setup_self_job(struct migrate_job *job, struct migrate_range *rg, char *area) {
        uint64_t ps = page_size();

        *job = (struct migrate_job) {
                .pid = getpid(),
                .pidfd = -1,
                .starttime = self_starttime(),
                .target_node = 0,
                .ranges = rg,
                .n_ranges = 2,
                .cgroup = "/test.slice",
        };
        rg[0] = (struct migrate_range) { (uintptr_t) area, (uintptr_t) area + TOUCHED + UNTOUCHED, ps };
        rg[1] = (struct migrate_range) { ps, ps + MB, ps };
}

static inline uint64_t job_total(const struct migrate_job *j) {
        uint64_t t = 0;
        for (unsigned c = 0; c < _MIG_CLASS_MAX; c++)
                t += j->pages[c];
        return t;
}

/* A pid that no process has any more (reaped). */
static inline pid_t dead_pid(void) {
        pid_t pid = fork();
        if (pid == 0)
                _exit(0);
        waitpid(pid, NULL, 0);
        return pid;
}
