/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check before moving shared pages (daemon/share-check.h), on real processes: a
 * memfd of 64 pages mapped by this process, two children forked after it touched them
 * (A writes pages 0-31, B 16-47) and a third that maps the second half at another
 * address and offset (C, pages 40-63). After fork() a child maps none of a shared
 * mapping's pages until it touches them. A page passes only when every process that maps
 * it is among the peers handed over; a peer whose start time does not match counts for
 * nothing; a peer whose cpuset does not allow the target holds everything back.
 * Copy-on-write: 16 anonymous private pages written before a fourth child (D) is
 * forked, which writes pages 8-11 (its own copies from then on): an anonymous object
 * is named by its address, the same in parent and child, its offset that address.
 * Reading page frames needs CAP_SYS_ADMIN: without it every page is held back
 * (frames-unreadable), which is checked too. */
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>
#include "pagesize.h"
#include "proc.h"
#include "share-check.h"
#include "test.h"

#define PAGES 64
#define COW_PAGES 16

static struct {
        int fd;
        char *mem;
        uint64_t ps;
        pid_t kids[4];
        struct share_peer self, a, b, c;
        bool frames;
        void *addrs[PAGES];
        char *cow;
        struct share_peer cow_self, d;
        void *cow_addrs[COW_PAGES];
} fx;

static uint64_t starttime_of(pid_t pid) {
        struct proc_stat st;

        return proc_read_stat("/proc", pid, &st) == 0 ? st.starttime : 0;
}

/* A child that touches pages [from, to) of the object, mapped at offset off (pages)
 * into a mapping of its own when off is not 0, says so and waits to be killed. */
static pid_t child(size_t from, size_t to, size_t off, struct share_peer *ret) {
        int p[2];
        char c = 0;
        pid_t pid;

        if (pipe(p) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                char *m = fx.mem;
                uint64_t start = (uint64_t) (uintptr_t) fx.mem;

                if (off) {
                        m = mmap(NULL, (PAGES - off) * fx.ps, PROT_READ | PROT_WRITE, MAP_SHARED, fx.fd, (off_t) (off * fx.ps));
                        if (m == MAP_FAILED)
                                _exit(1);
                        start = (uint64_t) (uintptr_t) m;
                }
                /* Written, not read: a read fault maps the pages around it too
                 * (fault_around_bytes), a write fault on a shared mapping only its own. */
                for (size_t i = from; i < to; i++)
                        *(volatile char *) (m + (i - off) * fx.ps) = 2;
                if (write(p[1], &start, sizeof(start)) != sizeof(start))
                        _exit(1);
                pause();
                _exit(0);
        }
        close(p[1]);
        if (pid > 0) {
                uint64_t start = 0;

                if (read(p[0], &start, sizeof(start)) != sizeof(start))
                        c = 1;
                *ret = (struct share_peer) { pid, starttime_of(pid), start, start + (PAGES - off) * fx.ps, off * fx.ps };
        }
        close(p[0]);
        return c ? -1 : pid;
}

/* D: forked after the copy-on-write pages were written; writes pages 8-11 of them. */
static pid_t cow_child(void) {
        int p[2];
        char c = 0;
        pid_t pid;

        if (pipe(p) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                for (size_t i = 8; i < 12; i++)
                        *(volatile char *) (fx.cow + i * fx.ps) = 3;
                if (write(p[1], &c, 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(p[1]);
        if (pid > 0 && read(p[0], &c, 1) != 1)
                pid = -1;
        close(p[0]);
        if (pid > 0)
                fx.d = (struct share_peer) { pid, starttime_of(pid), fx.cow_self.start, fx.cow_self.end,
                                             fx.cow_self.pgoff };
        return pid;
}

static bool frames_readable(void) {
        int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        uint64_t e = 0;
        bool ok = fd >= 0 && pread(fd, &e, sizeof(e), (off_t) ((uintptr_t) fx.mem / fx.ps * 8)) == sizeof(e) &&
                  (e & ((UINT64_C(1) << 55) - 1)) != 0;

        if (fd >= 0)
                close(fd);
        return ok && access("/proc/kpagecount", R_OK) == 0;
}

static int intro(void) {
        fx.ps = page_size();
        fx.fd = memfd_create("test-share-check", MFD_CLOEXEC);
        if (fx.fd < 0 || ftruncate(fx.fd, (off_t) (PAGES * fx.ps)) < 0)
                return 1;
        fx.mem = mmap(NULL, PAGES * fx.ps, PROT_READ | PROT_WRITE, MAP_SHARED, fx.fd, 0);
        if (fx.mem == MAP_FAILED)
                return 1;
        for (size_t i = 0; i < PAGES; i++) {
                fx.mem[i * fx.ps] = 1;
                fx.addrs[i] = fx.mem + i * fx.ps;
        }
        fx.self = (struct share_peer) { getpid(), starttime_of(getpid()), (uint64_t) (uintptr_t) fx.mem,
                                        (uint64_t) (uintptr_t) fx.mem + PAGES * fx.ps, 0 };
        fx.kids[0] = child(0, 32, 0, &fx.a);
        fx.kids[1] = child(16, 48, 0, &fx.b);
        fx.kids[2] = child(40, 64, 32, &fx.c);
        if (fx.kids[0] < 0 || fx.kids[1] < 0 || fx.kids[2] < 0)
                return 1;
        fx.cow = mmap(NULL, COW_PAGES * fx.ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fx.cow == MAP_FAILED)
                return 1;
        (void) madvise(fx.cow, COW_PAGES * fx.ps, MADV_NOHUGEPAGE);
        for (size_t i = 0; i < COW_PAGES; i++) {
                fx.cow[i * fx.ps] = 1;
                fx.cow_addrs[i] = fx.cow + i * fx.ps;
        }
        fx.cow_self = (struct share_peer) { getpid(), starttime_of(getpid()), (uint64_t) (uintptr_t) fx.cow,
                                            (uint64_t) (uintptr_t) fx.cow + COW_PAGES * fx.ps,
                                            (uint64_t) (uintptr_t) fx.cow };
        fx.kids[3] = cow_child();
        if (fx.kids[3] < 0)
                return 1;
        fx.frames = frames_readable();
        printf("# page frames %s\n", fx.frames ? "readable: every check runs" : "not readable (no CAP_SYS_ADMIN)");
        return 0;
}

static void outro(void) {
        for (int i = 0; i < 4; i++)
                if (fx.kids[i] > 0) {
                        kill(fx.kids[i], SIGKILL);
                        waitpid(fx.kids[i], NULL, 0);
                }
}

/* Checks the 64 pages against peers, to node 0 (every cpuset here allows it). */
static size_t check(const struct share_peer *peers, size_t n, bool *ok, uint64_t *fails) {
        struct share_check c = { peers, n, fx.self.start, 0 };

        return share_check_pages("/proc", &c, getpid(), 0, fx.addrs, PAGES, ok, fails);
}

static bool ok_range(const bool *ok, size_t from, size_t to, bool want) {
        for (size_t i = from; i < to; i++)
                if (ok[i] != want)
                        return false;
        return true;
}

TEST(every_mapper_a_member) {
        struct share_peer peers[] = { fx.self, fx.a, fx.b, fx.c };
        bool ok[PAGES];
        uint64_t fails[_SHARE_FAIL_MAX] = {};

        if (!fx.frames) {
                CHECK_INT(check(peers, 4, ok, fails), 0);
                CHECK_INT(fails[SHARE_FAIL_FRAMES], PAGES);
                return;
        }
        CHECK_INT(check(peers, 4, ok, fails), PAGES);
        CHECK(ok_range(ok, 0, PAGES, true));
}

/* B is not handed over: the pages it maps (16-47) are held back, mapped outside. */
TEST(outsider_held_back) {
        struct share_peer peers[] = { fx.self, fx.a, fx.c };
        bool ok[PAGES];
        uint64_t fails[_SHARE_FAIL_MAX] = {};

        if (!fx.frames)
                TEST_SKIP("page frames are not readable");
        CHECK_INT(check(peers, 3, ok, fails), 32);
        CHECK(ok_range(ok, 0, 16, true));
        CHECK(ok_range(ok, 16, 48, false));
        CHECK(ok_range(ok, 48, PAGES, true));
        CHECK_INT(fails[SHARE_FAIL_OUTSIDE], 32);
}

/* C maps the second half at another address and offset: without it, its pages 40-63
 * are held back; the translation finds them when it is handed over (above). */
TEST(other_offset_counted) {
        struct share_peer peers[] = { fx.self, fx.a, fx.b };
        bool ok[PAGES];
        uint64_t fails[_SHARE_FAIL_MAX] = {};

        if (!fx.frames)
                TEST_SKIP("page frames are not readable");
        CHECK_INT(check(peers, 3, ok, fails), 40);
        CHECK(ok_range(ok, 0, 40, true));
        CHECK(ok_range(ok, 40, PAGES, false));
}

/* A peer that is not the process the group was built from (another start time: its
 * pid reused) counts for nothing: A's pages are held back. */
TEST(other_life_not_counted) {
        struct share_peer a = fx.a, peers[4] = { fx.self, a, fx.b, fx.c };
        bool ok[PAGES];
        uint64_t fails[_SHARE_FAIL_MAX] = {};

        peers[1].starttime++;
        if (!fx.frames)
                TEST_SKIP("page frames are not readable");
        CHECK_INT(check(peers, 4, ok, fails), 32);
        CHECK(ok_range(ok, 0, 32, false));
        CHECK(ok_range(ok, 32, PAGES, true));
}

/* A member whose cpuset does not allow the target holds every page back. */
TEST(member_disallows_target) {
        struct share_peer peers[] = { fx.self, fx.a, fx.b, fx.c };
        struct share_check c = { peers, 4, fx.self.start, 0 };
        struct proc_status st;
        bool ok[PAGES];
        uint64_t fails[_SHARE_FAIL_MAX] = {};
        int target = 0;

        CHECK_INT(proc_read_status("/proc", fx.a.pid, &st), 0);
        while (target < NB_NODES_MAX - 1 && nodemask_test(&st.mems_allowed, (unsigned) target))
                target++;
        CHECK_INT(share_check_pages("/proc", &c, getpid(), target, fx.addrs, PAGES, ok, fails), 0);
        CHECK_INT(fails[SHARE_FAIL_MEMBER], PAGES);
        CHECK(ok_range(ok, 0, PAGES, false));
}

/* Copy-on-write since fork(): with D a member, every page passes (those both map, and
 * each one's own copies); without it, the pages D still shares (0-7, 12-15) are held
 * back and this process's own copies of 8-11 pass. */
TEST(copy_on_write_pages) {
        struct share_peer peers[] = { fx.cow_self, fx.d };
        struct share_check c = { peers, 2, fx.cow_self.start, fx.cow_self.pgoff };
        bool ok[COW_PAGES];
        uint64_t fails[_SHARE_FAIL_MAX] = {};

        if (!fx.frames)
                TEST_SKIP("page frames are not readable");
        CHECK_INT(share_check_pages("/proc", &c, getpid(), 0, fx.cow_addrs, COW_PAGES, ok, fails), COW_PAGES);
        c.n_peers = 1;
        memset(fails, 0, sizeof(fails));
        CHECK_INT(share_check_pages("/proc", &c, getpid(), 0, fx.cow_addrs, COW_PAGES, ok, fails), 4);
        CHECK(ok_range(ok, 0, 8, false));
        CHECK(ok_range(ok, 8, 12, true));
        CHECK(ok_range(ok, 12, COW_PAGES, false));
        CHECK_INT(fails[SHARE_FAIL_OUTSIDE], 12);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
