/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Records the software page-level source's samples of the split workload on this
 * machine's real CPU, for the TCG guests to replay ([sample] pmu = replay): the guests
 * cannot produce them (their timer samples do not follow the accesses).
 *
 *   sw-record THREADS BUFFER_MB MS RATE > tests/data/sw/splitN.samples
 *
 * THREADS threads each read random words of their own part of the buffer, thread k
 * pinned to CPU k % 2; daemon/sw-sampler samples them at RATE per second of run time
 * for MS, its node lookup on the stored 2n1m topology (CPU 0 on node 0, CPU 1 on
 * node 1). Output: "# ..." header lines, then one "NODE 0xOFFSET" line per sample (the
 * page's offset in the buffer), in the order taken, and "# run_ms A B..." (each thread's
 * time on a CPU). tests/vm/scenarios/106-replay.py turns them into
 * "TGID CPU ADDR" lines for its own process. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "split-workload.h"
#include "sw-sampler.h"
#include "topology.h"

static uint64_t lo, hi, n_out;

static void emit(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        (void) userdata;
        /* One line per sample: a page sampled twice within a drain is counted twice. */
        for (uint64_t i = 0; i < count && tgid == getpid() && addr >= lo && addr < hi; i++) {
                printf("%u 0x%" PRIx64 "\n", node, addr - lo);
                n_out++;
        }
}

/* The time thread tid of this process has run, from its schedstat (0 if unknown). */
static uint64_t run_ns(pid_t tid) {
        char path[64];
        unsigned long long ns = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int) tid);
        f = fopen(path, "r");
        if (f) {
                if (fscanf(f, "%llu", &ns) != 1)
                        ns = 0;
                fclose(f);
        }
        return ns;
}

int main(int argc, char **argv) {
        unsigned n = argc > 1 ? (unsigned) atoi(argv[1]) : 2, mb = argc > 2 ? (unsigned) atoi(argv[2]) : 8,
                 ms = argc > 3 ? (unsigned) atoi(argv[3]) : 1000;
        uint64_t rate = argc > 4 ? strtoull(argv[4], NULL, 10) : 5000;
        const size_t bytes = (size_t) mb << 20;
        struct topology *t = NULL;
        struct sw_sampler *s = NULL;
        struct sample_check c;
        struct split_workload *w = NULL;
        int cpus[SPLIT_THREADS_MAX];
        uint64_t *buf;
        int r;

        if (n < 1 || n > SPLIT_THREADS_MAX || mb < 1) {
                fprintf(stderr, "usage: sw-record THREADS(1-8) BUFFER_MB MS RATE\n");
                return 2;
        }
        if (topology_read(TEST_DATA_DIR "/sys/2n1m", &t) < 0)
                return 2;
        buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED)
                return 2;
        madvise(buf, bytes, MADV_NOHUGEPAGE);
        memset(buf, 1, bytes);
        lo = (uintptr_t) buf;
        hi = lo + bytes;
        r = sw_sampler_new("/proc", t, rate, &s, &c);
        if (r < 0) {
                fprintf(stderr, "sw-record: the software source is refused here: %s\n", strerror(-r));
                return 1;
        }
        for (unsigned k = 0; k < n; k++)
                cpus[k] = (int) (k % 2);
        r = split_workload_start(buf, bytes, n, cpus, &w);
        if (r < 0) {
                fprintf(stderr, "sw-record: cannot start the threads: %s\n", strerror(-r));
                return 1;
        }
        sw_sampler_span(s, getpid(), getuid(), true);
        printf("# sw-record %u %u %u %" PRIu64 ": %u thread(s), thread k on CPU k %% 2 (node k %% 2), each "
               "reading its own 1/%u of %u MiB\n# node offset\n", n, mb, ms, rate, n, n, mb);
        for (unsigned waited = 0; waited < ms; waited += 20) {
                usleep(20 * 1000);
                sw_sampler_drain(s, emit, NULL);
        }
        /* Each thread's time on a CPU: the rate is per second of run time, so a replay
         * at another rate needs it (bench/bench.py's Replayer). */
        printf("# run_ms");
        for (unsigned k = 0; k < n; k++)
                printf(" %" PRIu64, run_ns(split_workload_tid(w, k)) / 1000000);
        printf("\n");
        split_workload_stop(w);
        sw_sampler_drain(s, emit, NULL);
        fprintf(stderr, "sw-record: %" PRIu64 " samples in the buffer\n", n_out);
        sw_sampler_free(s);
        topology_free(t);
        return 0;
}
