/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A tenant's files through the reader (daemon/tenant-files.h), against a proc tree
 * whose numa_maps is a FIFO nobody writes: opening it waits for good, like a read of a
 * process whose mmap lock its owner keeps. The caller gets -ETIMEDOUT at the deadline
 * with nothing returned, the owner's next read is refused at once, other owners read
 * their files, and when the read returns at last its thread frees what it read. */
#include <fcntl.h>
#include <string.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "clock.h"
#include "tenant-files.h"
#include "tenant-reader.h"
#include "test.h"
#include "tmptree.h"

static char root[] = "/tmp/test-tenant-reader-XXXXXX";

static const char numa_maps_line[] = "7f0000000000 default anon=4 dirty=4 active=0 N0=4 kernelpagesize_kB=4\n";

static int intro(void) {
        char p[256];

        if (!mkdtemp(root))
                return 1;
        for (int pid = 100; pid <= 102; pid++) {
                snprintf(p, sizeof(p), "%s/%d", root, pid);
                mkdir(p, 0755);
        }
        /* 100 and 101: waits for good; 102: an honest process. */
        snprintf(p, sizeof(p), "%s/100/numa_maps", root);
        mkfifo(p, 0600);
        snprintf(p, sizeof(p), "%s/101/numa_maps", root);
        mkfifo(p, 0600);
        tmptree_write_at(root, "102/numa_maps", numa_maps_line);
        tmptree_write_at(root, "102/maps", "7f0000000000-7f0000004000 rw-p 00000000 00:00 0\n");
        return 0;
}

static void outro(void) {
        tmptree_remove(root);
}

/* Lets a FIFO's reader go: open for writing (meets the waiting open) and close. */
static void release_fifo(int pid) {
        char p[256];
        int fd;

        snprintf(p, sizeof(p), "%s/%d/numa_maps", root, pid);
        fd = open(p, O_WRONLY);
        if (fd >= 0)
                close(fd);
}

static nb_cpumask all_cpus(void) {
        nb_cpumask m = {};
        cpu_set_t set;

        sched_getaffinity(0, sizeof(set), &set);
        for (unsigned c = 0; c < CPU_SETSIZE && c < NB_CPUS_MAX; c++)
                if (CPU_ISSET(c, &set))
                        cpumask_set(&m, c);
        return m;
}

static bool wait_not_stuck(struct tenant_reader *tr, uid_t owner) {
        for (int i = 0; i < 200; i++) {
                if (!tenant_reader_owner_stuck(tr, owner))
                        return true;
                usleep(10000);
        }
        return false;
}

TEST(deadline_quarantines_owner_not_others) {
        struct tenant_reader *tr = NULL;
        nb_cpumask cpus = all_cpus();
        struct tenant_proc stuck = { root, 100, 1000, 500 }, same_owner = { root, 102, 1000, 2000 },
                           other = { root, 102, 2000, 2000 };
        struct tenant_reader_stats st;
        struct numa_maps *maps = NULL;
        struct vma_range *ranges = NULL;
        size_t n = 0;
        uint64_t t;

        CHECK_INT(tenant_reader_new(&cpus, 0, &tr), 0);
        t = clock_now_ms();
        CHECK_INT(tenant_files_numa_maps(tr, &stuck, &maps), -ETIMEDOUT);
        t = clock_now_ms() - t;
        CHECK(t >= 490 && t < 3000);
        CHECK(maps == NULL);
        CHECK(tenant_reader_owner_stuck(tr, 1000));

        /* Its owner's next read, even of an honest process, is not started. */
        t = clock_now_ms();
        CHECK_INT(tenant_files_numa_maps(tr, &same_owner, &maps), -EBUSY);
        CHECK(clock_now_ms() - t < 500);
        /* Another owner is served, by another thread. */
        CHECK_INT(tenant_files_numa_maps(tr, &other, &maps), 0);
        CHECK(maps && maps->n_vmas == 1);
        numa_maps_free(maps);
        maps = NULL;
        CHECK_INT(tenant_files_maps(tr, &other, &ranges, &n), 0);
        CHECK_INT(n, 1);
        CHECK(ranges && ranges[0].end == UINT64_C(0x7f0000004000));
        free(ranges);

        tenant_reader_stats(tr, &st);
        CHECK_INT(st.overruns, 1);
        CHECK_INT(st.refused, 1);
        CHECK_INT(st.stuck, 1);
        CHECK_INT(st.threads, 2);

        /* The read returns at last: its thread frees it, the owner is served again. */
        release_fifo(100);
        CHECK(wait_not_stuck(tr, 1000));
        CHECK_INT(tenant_files_numa_maps(tr, &same_owner, &maps), 0);
        numa_maps_free(maps);
        tenant_reader_stats(tr, &st);
        CHECK_INT(st.stuck, 0);
        tenant_reader_free(tr);
}

TEST(no_reader_reads_here) {
        struct tenant_proc p = { root, 102, 0, 0 };
        struct numa_maps *maps = NULL;

        CHECK_INT(tenant_files_numa_maps(NULL, &p, &maps), 0);
        CHECK(maps && maps->n_vmas == 1);
        numa_maps_free(maps);
        p.pid = 103;     /* vanished */
        CHECK(tenant_files_numa_maps(NULL, &p, &maps) < 0);
}

TEST(code_bytes_of_a_process) {
        static const uint8_t text[64] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!?";
        struct tenant_reader *tr = NULL;
        nb_cpumask cpus = all_cpus();
        struct tenant_proc self = { root, getpid(), 0, 0 };
        uint8_t code[INSN_CODE_LEN] = {};
        uint64_t ip = (uint64_t) (uintptr_t) (text + 56);

        CHECK_INT(tenant_reader_new(&cpus, 0, &tr), 0);
        /* The INSN_CODE_LEN bytes before ip, as the decoder wants them. */
        CHECK_INT(tenant_files_code(tr, &self, ip, code), INSN_CODE_LEN);
        CHECK(memcmp(code, text + 56 - INSN_CODE_LEN, INSN_CODE_LEN) == 0);
        self.pid = 0x3fffffff;     /* no such process */
        CHECK(tenant_files_code(tr, &self, ip, code) < 0);
        tenant_reader_free(tr);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
