/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The software page-level source live on this machine's real CPU, through to the plan:
 * a process (this test) whose threads each work their own part of one buffer, thread
 * k pinned to CPU k % 2, sampled by daemon/sw-sampler; the samples go through the
 * two-sample rule (lib/page-agg) into plan_pages() with the stored 2n1m topology
 * (tests/data/sys/2n1m: CPU 0 on node 0, CPU 1 on node 1) and numa_maps saying the
 * whole buffer is on node 0. Asserted: every move targets node 1 and lies in the parts
 * of the threads on CPU 1, at least MIN_COVER_PCT of those parts are planned, and
 * nothing of the parts of the threads on CPU 0. With 2 threads (A, B: halves) and 4
 * (quarters: A and C on CPU 0, B and D on CPU 1). Needs x86-64 with Capstone, two
 * CPUs, and perf_event_open (root, or perf_event_paranoid <= 2; skipped otherwise
 * unless root, where a failure is a failure).
 *
 * Nothing here waits for a time and then asserts on what the time gave: a loaded
 * host gives the threads less CPU, so fewer samples a second. The cases sample until
 * the samples they assert on have landed (a bound on the wait only ends a stuck run),
 * and a sampler whose start-up check was starved of CPU is made again. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "numa_maps.h"
#include "page-agg.h"
#include "plan.h"
#include "split-workload.h"
#include "clock.h"
#include "sw-sampler.h"
#include "topology.h"
#include "test.h"

#define BUF_MB 8               /* 2,048 pages */
#define RATE 10000             /* samples per second of each thread's run time */
#define MIN_COVER_PCT 50
/* Samples per page of the CPU-1 threads' parts before the plan: with 4 a page holds the
 * two samples the rule wants with a probability of 91% (Poisson), far above
 * MIN_COVER_PCT; an idle host gives them in under a second. */
#define SAMPLES_PER_PAGE 4
/* Bounds on the wall-clock time of a case's sampling and of its tries at a sampler,
 * which only a starved run reaches. */
#define RUN_MAX_MS 5000
#define NEW_MAX_MS 2000

static struct topology *topo;

/* sw_sampler_new(), whose start-up check samples two threads for 200 ms and wants 50
 * decoded addresses of each: a test at nice 19 beside busy processes may not get that
 * much CPU in that time, and the source is rightly refused (-ENOTRECOVERABLE) though
 * every address it did decode was in place. Made again then, for NEW_MAX_MS at most,
 * and -EAGAIN if every try was starved. A check whose addresses landed in the wrong
 * half is a refusal of the CPU, returned at once. */
static int new_sampler(struct sw_sampler **ret) {
        const uint64_t start = clock_now_ms();
        struct sample_check c = {};
        unsigned tries = 0;
        int r = -ENOTRECOVERABLE;

        while (r == -ENOTRECOVERABLE && (tries == 0 || clock_now_ms() < start + NEW_MAX_MS)) {
                r = sw_sampler_new("/proc", topo, RATE, ret, &c);
                tries++;
                if (r == -ENOTRECOVERABLE && !sample_check_passed(&c, 0, 90))
                        return r;
        }
        if (r != -ENOTRECOVERABLE)
                return r;
        fprintf(stderr, "start-up check starved %u times in %" PRIu64 " ms: at last %" PRIu64 " and %" PRIu64
                " addresses\n", tries, clock_now_ms() - start, c.addresses[0], c.addresses[1]);
        return -EAGAIN;
}

#define SKIP_IF_NO_SAMPLER(r) do {                                                      \
        if ((r) == -EAGAIN)                                                             \
                TEST_SKIP("the host is too busy: the start-up check got too little CPU"); \
        if ((r) == -EOPNOTSUPP || ((r) < 0 && (r) != -ENOTRECOVERABLE && geteuid() != 0)) \
                TEST_SKIP("software sampling unavailable here: %s", strerror(-(r)));   \
        } while (0)

/* What the drains give: the samples of this process into agg, and how many landed in
 * the parts of the threads on CPU 1 (odd k) of the n parts of [lo, lo + bytes). */
struct landed {
        struct page_agg *agg;
        uint64_t lo, bytes;
        unsigned n;
        uint64_t on_cpu1;
};

static void on_sample(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        struct landed *l = userdata;

        if (tgid != getpid())
                return;
        (void) page_agg_add_counts(l->agg, addr, node, count);
        if (addr >= l->lo && addr < l->lo + l->bytes && (addr - l->lo) / (l->bytes / l->n) % 2 == 1)
                l->on_cpu1 += count;
}

/* The page-level plan from the samples in l->agg. */
static int plan_of(struct landed *l, struct plan *ret) {
        _cleanup_(numa_maps_freep) struct numa_maps *maps = NULL;
        struct page_decision d;
        struct plan_input in = {};
        struct plan_params pp = { .free_floor_pct = 5 };
        uint64_t end = l->lo + l->bytes, reserved[8] = {};
        const uint64_t cpu[3] = { 1, 1, 0 };
        char text[256];
        int r;

        CHECK_INT(page_agg_decide(l->agg, 2, &d), 0);
        printf("%u threads: %zu distinct pages sampled, %zu from several nodes\n", l->n, d.pages, d.shared);
        snprintf(text, sizeof(text), "%" PRIx64 " default anon=%" PRIu64 " dirty=%" PRIu64 " N0=%" PRIu64
                 " kernelpagesize_kB=4\n", l->lo, l->bytes / 4096, l->bytes / 4096, l->bytes / 4096);
        CHECK_INT(numa_maps_parse(text, strlen(text), &maps), 0);
        in = (struct plan_input) { .maps = maps, .vma_end = &end, .cpu_ns = cpu };
        nodemask_parse("0-1", &in.mems_allowed);
        r = plan_pages(topo, &in, &pp, &d, NULL, reserved, ret);
        page_agg_decision_done(&d);
        return r;
}

/* n threads over the buffer, sampled until the CPU-1 threads' parts have
 * SAMPLES_PER_PAGE samples a page or RUN_MAX_MS passed; returns the page-level plan
 * and, in *on_cpu1, the samples that landed in those parts. */
static int sample_and_plan(unsigned n, uint64_t buf, struct plan *ret, uint64_t *on_cpu1) {
        const size_t bytes = (size_t) BUF_MB << 20;
        const uint64_t want = (uint64_t) bytes / 2 / 4096 * SAMPLES_PER_PAGE;
        _cleanup_(page_agg_freep) struct page_agg *agg = NULL;
        struct sw_sampler *s = NULL;
        struct split_workload *w = NULL;
        static const int cpus[4] = { 0, 1, 0, 1 };
        struct landed l = { .lo = buf, .bytes = bytes, .n = n };
        uint64_t start;
        int r;

        r = new_sampler(&s);
        if (r < 0)
                return r;
        r = split_workload_start((const uint64_t *) (uintptr_t) buf, bytes, n, cpus, &w);
        if (r < 0) {
                sw_sampler_free(s);
                return r;
        }
        sw_sampler_span(s, getpid(), getuid(), true);
        CHECK_INT(page_agg_new(topo, 4096, &agg), 0);
        l.agg = agg;
        start = clock_now_ms();
        while (agg && clock_now_ms() < start + RUN_MAX_MS && l.on_cpu1 < want) {
                usleep(20 * 1000);
                sw_sampler_drain(s, on_sample, &l);
        }
        split_workload_stop(w);
        sw_sampler_free(s);
        printf("%u threads: %" PRIu64 " samples in the CPU-1 parts in %" PRIu64 " ms\n", n, l.on_cpu1,
               clock_now_ms() - start);
        *on_cpu1 = l.on_cpu1;
        return agg ? plan_of(&l, ret) : -ENOMEM;
}

static void check_plan(unsigned n) {
        const size_t bytes = (size_t) BUF_MB << 20, part = bytes / n;
        const uint64_t want = (uint64_t) bytes / 2 / 4096 * SAMPLES_PER_PAGE;
        uint64_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint64_t on_cpu1 = 0, wrong = 0, landed = 0;
        struct plan pl = {};
        int r;

        CHECK(buf != MAP_FAILED);
        if (buf == MAP_FAILED)
                return;
        madvise(buf, bytes, MADV_NOHUGEPAGE);
        memset(buf, 1, bytes);
        r = sample_and_plan(n, (uintptr_t) buf, &pl, &landed);
        if (r < 0)
                munmap(buf, bytes);
        SKIP_IF_NO_SAMPLER(r);
        CHECK_INT(r, 0);
        if (r < 0)
                return;
        for (size_t i = 0; i < pl.n_moves; i++) {
                const struct plan_move *mv = &pl.moves[i];
                for (uint64_t a = mv->start; a < mv->end; a += 4096) {
                        unsigned k = (unsigned) ((a - (uintptr_t) buf) / part);
                        if (mv->target == 1 && k % 2 == 1)
                                on_cpu1 += 4096;
                        else
                                wrong += 4096;
                }
        }
        printf("%u threads: %zu move(s), %" PRIu64 " KiB of the CPU-1 parts' %zu KiB to node 1, %" PRIu64
               " KiB elsewhere\n", n, pl.n_moves, on_cpu1 / 1024, bytes / 2 / 1024, wrong / 1024);
        plan_done(&pl);
        munmap(buf, bytes);
        CHECK_INT(wrong, 0);
        if (landed >= want) {
                CHECK(on_cpu1 * 100 >= bytes / 2 * MIN_COVER_PCT);
                return;
        }
        /* A host so loaded that the threads ran too little in RUN_MAX_MS: what was
         * planned is still checked above, how much is not. */
        if (!on_cpu1)
                TEST_SKIP("the host is too busy: %" PRIu64 " samples landed in %d ms, nothing planned", landed,
                          RUN_MAX_MS);
        printf("not asserted: %d%% of the CPU-1 parts planned, since only %" PRIu64 " of %" PRIu64 " samples "
               "landed there in %d ms\n", MIN_COVER_PCT, landed, want, RUN_MAX_MS);
}

TEST(two_threads_halves) {
        check_plan(2);
}

TEST(four_threads_quarters) {
        check_plan(4);
}

/* What the decoding thread found of itself: its tid, CapEff and CapPrm from its own
 * /proc/self/task/TID/status, read by the kernel's account, not the code's. */
struct decoder_seen {
        pid_t tid;
        uint64_t eff, prm;
        bool read;
};

static bool status_caps(pid_t tid, uint64_t *eff, uint64_t *prm) {
        char path[64], line[256];
        FILE *f;
        int got = 0;

        snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int) tid);
        f = fopen(path, "re");
        if (!f)
                return false;
        while (fgets(line, sizeof(line), f)) {
                got += sscanf(line, "CapEff: %" SCNx64, eff) == 1;
                got += sscanf(line, "CapPrm: %" SCNx64, prm) == 1;
        }
        fclose(f);
        return got == 2;
}

static void on_decoder(void *userdata) {
        struct decoder_seen *seen = userdata;

        seen->tid = gettid();
        seen->read = status_caps(seen->tid, &seen->eff, &seen->prm);
}

static void count_sample(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        (void) tgid;
        (void) addr;
        (void) node;
        *(uint64_t *) userdata += count;
}

/* The bytes of sampled code are parsed by Capstone on a thread that holds no
 * capability, while the thread that drains (the daemon's event loop) keeps its own. */
TEST(decoded_without_capabilities) {
        const size_t bytes = (size_t) 1 << 20;
        uint64_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        static const int cpus[2] = { 0, 1 };
        struct decoder_seen seen = {};
        struct split_workload *w = NULL;
        struct sw_sampler *s = NULL;
        uint64_t main_eff = 0, main_prm = 0, addresses = 0, decode_ns;
        int r;

        CHECK(buf != MAP_FAILED);
        if (buf == MAP_FAILED)
                return;
        memset(buf, 1, bytes);
        r = new_sampler(&s);
        if (r < 0)
                munmap(buf, bytes);
        SKIP_IF_NO_SAMPLER(r);
        CHECK_INT(r, 0);
        if (r < 0)
                return;
        sw_sampler_set_decode_hook(s, on_decoder, &seen);
        CHECK_INT(split_workload_start(buf, bytes, 2, cpus, &w), 0);
        sw_sampler_span(s, getpid(), getuid(), true);
        /* Until a decoding thread ran and an address came of it (RUN_MAX_MS at most). */
        for (uint64_t start = clock_now_ms(); clock_now_ms() < start + RUN_MAX_MS && !(seen.tid && addresses);) {
                usleep(20 * 1000);
                sw_sampler_drain(s, count_sample, &addresses);
        }
        split_workload_stop(w);
        if (!seen.tid) {
                sw_sampler_free(s);
                munmap(buf, bytes);
                TEST_SKIP("the host is too busy: no sample to decode in %d ms", RUN_MAX_MS);
        }
        /* The decoding threads' CPU time, for the tick to charge: taken once. */
        decode_ns = sw_sampler_take_cpu_ns(s);
        CHECK(decode_ns > 0);
        CHECK_INT(sw_sampler_take_cpu_ns(s), 0);
        sw_sampler_free(s);
        munmap(buf, bytes);
        CHECK(status_caps(gettid(), &main_eff, &main_prm));
        printf("decoding thread %d: CapEff %016" PRIx64 " CapPrm %016" PRIx64 "; draining thread %d: CapEff %016"
               PRIx64 "; %" PRIu64 " addresses, decoding threads' CPU %" PRIu64 " us\n", (int) seen.tid, seen.eff,
               seen.prm, (int) gettid(), main_eff, addresses, decode_ns / 1000);
        CHECK(seen.tid > 0 && seen.tid != gettid());
        CHECK(seen.read);
        CHECK(addresses > 0);
        if (main_eff == 0) {
                printf("not asserted: the decoding thread's empty CapEff, since this test runs without "
                       "capabilities (not root) and so has none to drop\n");
                return;
        }
        CHECK_INT(seen.eff, 0);
        CHECK_INT(seen.prm, 0);
        CHECK(main_eff != 0);   /* the draining thread kept its own */
}

/* A process of n threads (its main one and n - 1 more), all waiting; their tids. */
static void *wait_forever(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

static pid_t threads_process(unsigned n, pid_t *tids) {
        int p[2];
        pid_t pid;

        if (pipe(p) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                close(p[0]);
                for (unsigned i = 1; i < n; i++) {
                        pthread_t th;
                        if (pthread_create(&th, NULL, wait_forever, NULL) != 0)
                                _exit(1);
                }
                if (write(p[1], "x", 1) < 0)
                        _exit(1);
                wait_forever(NULL);
        }
        close(p[1]);
        if (pid > 0) {
                char c;
                char dir[64];
                DIR *d;
                struct dirent *e;
                unsigned k = 0;

                if (read(p[0], &c, 1) != 1)
                        pid = -1;
                snprintf(dir, sizeof(dir), "/proc/%d/task", (int) pid);
                d = pid > 0 ? opendir(dir) : NULL;
                while (d && (e = readdir(d)))
                        if (e->d_name[0] != '.' && k < n)
                                tids[k++] = atoi(e->d_name);
                if (d)
                        closedir(d);
        }
        close(p[0]);
        return pid;
}

static unsigned sampled_of(const struct sw_sampler *s, const pid_t *tids, unsigned n) {
        unsigned k = 0;

        for (unsigned i = 0; i < n; i++)
                k += sw_sampler_sampling(s, tids[i]);
        return k;
}

/* One owner's process with 12 threads takes all 8 slots while alone; another owner's
 * process of 3 threads arriving gets its 3 and the first keeps 5; over the first's
 * later scans its threads take turns, each one sampled at some point; what the first
 * was refused is counted against it, the second was refused nothing. */
TEST(thread_slots_shared_by_owner) {
        pid_t ta[12] = {}, tb[3] = {};
        bool ever[12] = {}, all = true;
        struct sw_sampler *s = NULL;
        const struct sample_quota *q;
        pid_t a, b;
        int r;

        r = new_sampler(&s);
        SKIP_IF_NO_SAMPLER(r);
        CHECK_INT(r, 0);
        if (r < 0)
                return;
        sw_sampler_set_slots(s, 8, 100);
        a = threads_process(12, ta);
        b = threads_process(3, tb);
        CHECK(a > 0 && b > 0);
        sw_sampler_span(s, a, 1000, true);
        CHECK_INT(sampled_of(s, ta, 12), 8);
        sw_sampler_span(s, b, 2000, true);
        CHECK_INT(sampled_of(s, tb, 3), 3);
        CHECK_INT(sampled_of(s, ta, 12), 5);
        for (int round = 0; round < 12; round++) {
                usleep(120 * 1000);
                sw_sampler_span(s, a, 1000, true);
                sw_sampler_span(s, b, 2000, true);
                CHECK_INT(sampled_of(s, ta, 12), 5);
                CHECK_INT(sampled_of(s, tb, 3), 3);
                for (unsigned i = 0; i < 12; i++)
                        ever[i] |= sw_sampler_sampling(s, ta[i]);
        }
        for (unsigned i = 0; i < 12; i++)
                all &= ever[i];
        CHECK(all);
        q = sw_sampler_quota(s);
        CHECK_INT(q->n, 2);
        printf("uid %u: share %" PRIu64 ", refused %" PRIu64 "; uid %u: share %" PRIu64 ", refused %" PRIu64 "\n",
               (unsigned) q->v[0].uid, q->v[0].share, q->v[0].refused, (unsigned) q->v[1].uid, q->v[1].share,
               q->v[1].refused);
        CHECK(q->v[0].refused > 0);
        CHECK_INT(q->v[1].refused, 0);
        /* The second leaves: the first takes the whole table again at its next scan. */
        sw_sampler_forget(s, b);
        sw_sampler_span(s, a, 1000, true);
        CHECK_INT(sampled_of(s, ta, 12), 8);
        sw_sampler_free(s);
        kill(a, SIGKILL);
        kill(b, SIGKILL);
        waitpid(a, NULL, 0);
        waitpid(b, NULL, 0);
}

static int intro(void) {
        char path[512];

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                fprintf(stderr, "one CPU online: the threads cannot run on two\n");
                return 77;
        }
        snprintf(path, sizeof(path), "%s/sys/2n1m", TEST_DATA_DIR);
        if (topology_read(path, &topo) < 0) {
                fprintf(stderr, "cannot read %s\n", path);
                return 1;
        }
        return 0;
}

static void outro(void) {
        topology_free(topo);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
