/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The VM test helper for the migration executor (tests/vm/test-migrate.sh).
 *
 *   migrate-run target --size-mb N --node NODE [--thp] --out FILE
 *       maps N MiB (2 MiB aligned), THP on (--thp, MADV_HUGEPAGE) or off, first-touches
 *       it bound to NODE (mbind, then the policy is reset to default so that only the
 *       placement remains), writes "PID START END" (hex, no 0x) to FILE and waits
 *       to be killed.
 *   migrate-run query PID START END
 *       where the base pages of [START, END) are (move_pages query mode), as JSON:
 *       {"nodes": {"0": pages, ...}, "absent": pages}
 *   migrate-run move [--batch N] [--cpu C | --cpus LIST] [--rate MB_S] [--starttime-delta D]
 *                    [--kill-after-ms MS] [--page-size BYTES] [-v] PID START END TARGET
 *       one job through the migrator, on one worker pinned to CPU C (default 0), and
 *       its result as JSON: the per-class counts (base pages), "error", "cpu_ns",
 *       "wall_ns", "mb_s" (moved MiB per wall second), "workers", "parts". --cpus
 *       starts one worker per CPU of LIST (service_cpus) and splits the job among
 *       them as the manager does (job_split, parts of at least 64 MiB): the
 *       counts and cpu_ns are summed over the parts, wall_ns is from the start of
 *       migrator_run to its return. --starttime-delta adds D to the
 *       start time read from /proc (a job for a process that is not the sampled one);
 *       --kill-after-ms SIGKILLs the target from another thread while the job runs.
 * Exit status: 0 when the JSON was printed (the test judges the numbers), 1 on a
 * setup failure, 2 on bad arguments. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "cleanup.h"
#include "json.h"
#include "log.h"
#include "migrate.h"
#include "nodemask.h"
#include "parse.h"
#include "proc.h"

#define MB (UINT64_C(1) << 20)
#define THP_SIZE (2 * MB)
#define QUERY_CHUNK 4096
/* The manager's SPLIT_MIN_BYTES (daemon/manager-internal.h, which needs the whole
 * daemon): --cpus splits a job as the daemon would. */
#define SPLIT_MIN_BYTES (UINT64_C(64) << 20)

static int parse_hex_addr(const char *s, uint64_t *ret) {
        if (strncmp(s, "0x", 2) == 0)
                s += 2;
        return parse_hex_u64_n(s, strlen(s), ret);
}

static int read_starttime(pid_t pid, uint64_t *ret) {
        struct proc_stat st;
        int r = proc_read_stat("/proc", pid, &st);
        if (r < 0)
                return r;
        *ret = st.starttime;
        return 0;
}

static int cmd_target(int argc, char **argv) {
        uint64_t size_mb = 0;
        int node = -1;
        bool thp = false;
        const char *out = NULL;
        char *raw, *area, tmp[4096];
        unsigned long mask;
        size_t len;
        FILE *f;

        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--size-mb") == 0 && i + 1 < argc) {
                        if (parse_u64(argv[++i], 1, 1 << 20, &size_mb) < 0)
                                return 2;
                } else if (strcmp(argv[i], "--node") == 0 && i + 1 < argc) {
                        if (parse_int(argv[++i], 0, 63, &node) < 0)
                                return 2;
                } else if (strcmp(argv[i], "--thp") == 0)
                        thp = true;
                else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
                        out = argv[++i];
                else
                        return 2;
        }
        if (!size_mb || node < 0 || !out)
                return 2;
        len = size_mb * MB;

        raw = mmap(NULL, len + THP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        /* 2 MiB aligned, so that every 2 MiB of the region can be one THP. */
        area = (char *) (((uintptr_t) raw + THP_SIZE - 1) & ~(uintptr_t) (THP_SIZE - 1));
        if (madvise(area, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) < 0) {
                perror("madvise");
                return 1;
        }
        mask = 1UL << node;
        if (mbind(area, len, MPOL_BIND, &mask, sizeof(mask) * 8 + 1, 0) < 0) {
                perror("mbind");
                return 1;
        }
        memset(area, 0x5a, len);
        /* Leave only the placement: the executor must not depend on the VMA policy
         * (move_pages ignores it), and the test should not either. */
        if (mbind(area, len, MPOL_DEFAULT, NULL, 0, 0) < 0) {
                perror("mbind default");
                return 1;
        }
        snprintf(tmp, sizeof(tmp), "%s.tmp", out);
        f = fopen(tmp, "we");
        if (!f) {
                perror("fopen");
                return 1;
        }
        fprintf(f, "%d %" PRIx64 " %" PRIx64 "\n", (int) getpid(), (uint64_t) (uintptr_t) area,
                (uint64_t) (uintptr_t) area + len);
        if (fclose(f) != 0 || rename(tmp, out) < 0) {
                perror("write");
                return 1;
        }
        for (;;)
                pause();
}

static int cmd_query(int argc, char **argv) {
        uint64_t start, end, absent = 0, per_node[64] = {};
        void *addrs[QUERY_CHUNK];
        int status[QUERY_CHUNK], pid;
        struct json j;

        if (argc != 3 || parse_int(argv[0], 1, INT32_MAX, &pid) < 0 || parse_hex_addr(argv[1], &start) < 0 ||
            parse_hex_addr(argv[2], &end) < 0 || end < start)
                return 2;
        for (uint64_t a = start; a < end;) {
                size_t n = 0;
                for (; n < QUERY_CHUNK && a < end; n++, a += 4096)
                        addrs[n] = (void *) (uintptr_t) a;
                if (move_pages(pid, n, addrs, NULL, status, 0) < 0) {
                        perror("move_pages");
                        return 1;
                }
                for (size_t i = 0; i < n; i++) {
                        if (status[i] >= 0 && status[i] < 64)
                                per_node[status[i]]++;
                        else
                                absent++;
                }
        }
        json_init(&j, stdout, false);
        json_object_begin(&j);
        json_key(&j, "nodes");
        json_object_begin(&j);
        for (int n = 0; n < 64; n++)
                if (per_node[n]) {
                        char key[8];
                        snprintf(key, sizeof(key), "%d", n);
                        json_key(&j, key);
                        json_u64(&j, per_node[n]);
                }
        json_object_end(&j);
        json_key(&j, "absent");
        json_u64(&j, absent);
        json_object_end(&j);
        json_finish(&j);
        return 0;
}

struct killer {
        pid_t pid;
        uint64_t after_ms;
};

static void *killer_main(void *arg) {
        struct killer *k = arg;
        struct timespec ts = { .tv_sec = (time_t) (k->after_ms / 1000),
                               .tv_nsec = (long) (k->after_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
        kill(k->pid, SIGKILL);
        fprintf(stderr, "migrate-run: killed %d after %" PRIu64 " ms\n", (int) k->pid, k->after_ms);
        return NULL;
}

static uint64_t monotonic_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

static int cmd_move(int argc, char **argv) {
        uint64_t batch = 0, rate = 0, delta = 0, kill_after = 0, page_size = 4096, start, end, t0;
        int cpu = 0, pid, target, r, i;
        struct migrator *m = NULL;
        struct migrate_range range;
        struct migrate_job job, *parts = NULL;
        size_t n_parts = 0;
        unsigned workers;
        nb_cpumask cpus = {};
        bool cpu_list = false;
        struct killer k;
        pthread_t killer_thread;
        struct json j;

        for (i = 0; i < argc && argv[i][0] == '-'; i++) {
                const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (strcmp(o, "-v") == 0) {
                        log_set_max_level(LOG_LVL_DEBUG);
                        continue;
                }
                if (!v)
                        return 2;
                i++;
                if (strcmp(o, "--batch") == 0)
                        r = parse_u64(v, 1, UINT64_C(1) << 20, &batch);
                else if (strcmp(o, "--cpu") == 0)
                        r = parse_int(v, 0, NB_CPUS_MAX - 1, &cpu);
                else if (strcmp(o, "--cpus") == 0) {
                        r = cpumask_parse(v, &cpus);
                        if (r >= 0 && cpumask_weight(&cpus) == 0)
                                r = -EINVAL;
                        cpu_list = true;
                } else if (strcmp(o, "--rate") == 0)
                        r = parse_u64(v, 0, UINT64_C(1) << 30, &rate);
                else if (strcmp(o, "--starttime-delta") == 0)
                        r = parse_u64(v, 0, UINT64_C(1) << 40, &delta);
                else if (strcmp(o, "--kill-after-ms") == 0)
                        r = parse_u64(v, 1, 3600000, &kill_after);
                else if (strcmp(o, "--page-size") == 0)
                        r = parse_u64(v, 4096, UINT64_C(1) << 30, &page_size);
                else
                        r = -EINVAL;
                if (r < 0) {
                        fprintf(stderr, "bad option %s %s\n", o, v);
                        return 2;
                }
        }
        if (argc - i != 4 || parse_int(argv[i], 1, INT32_MAX, &pid) < 0 ||
            parse_hex_addr(argv[i + 1], &start) < 0 || parse_hex_addr(argv[i + 2], &end) < 0 ||
            parse_int(argv[i + 3], 0, NB_NODES_MAX - 1, &target) < 0)
                return 2;

        range = (struct migrate_range) { start, end, page_size };
        job = (struct migrate_job) {
                .pid = pid, .pidfd = -1, .target_node = target,
                .ranges = &range, .n_ranges = 1, .cgroup = "/vm-test",
        };
        r = read_starttime(pid, &job.starttime);
        if (r < 0) {
                fprintf(stderr, "starttime of %d: %s\n", pid, strerror(-r));
                return 1;
        }
        job.starttime += delta;

        if (!cpu_list)
                cpumask_set(&cpus, (unsigned) cpu);
        r = migrator_new(&cpus, rate, batch, &m);
        if (r < 0)
                return 1;
        workers = migrator_n_workers(m);
        if (workers > 1) {
                r = job_split(&job, workers, SPLIT_MIN_BYTES, &parts, &n_parts);
                if (r < 0) {
                        fprintf(stderr, "job_split: %s\n", strerror(-r));
                        migrator_free(m);
                        return 1;
                }
        }
        if (kill_after) {
                k = (struct killer) { pid, kill_after };
                if (pthread_create(&killer_thread, NULL, killer_main, &k) != 0)
                        return 1;
        }
        t0 = monotonic_ns();
        r = parts ? migrator_run(m, parts, n_parts) : migrator_run(m, &job, 1);
        if (parts) {
                /* One result, as if the job had not been split; the wall time is the
                 * whole run's, since the parts overlap. */
                job.wall_ns = monotonic_ns() - t0;
                for (size_t p = 0; p < n_parts; p++) {
                        for (unsigned c = 0; c < _MIG_CLASS_MAX; c++)
                                job.pages[c] += parts[p].pages[c];
                        job.cpu_ns += parts[p].cpu_ns;
                        if (!job.error)
                                job.error = parts[p].error;
                        free(parts[p].ranges);
                }
                free(parts);
        }
        if (kill_after)
                pthread_join(killer_thread, NULL);
        migrator_free(m);
        if (r < 0)
                return 1;

        json_init(&j, stdout, false);
        json_object_begin(&j);
        json_key(&j, "pid");
        json_i64(&j, pid);
        for (unsigned c = 0; c < _MIG_CLASS_MAX; c++) {
                json_key(&j, executor_class_name(c));
                json_u64(&j, job.pages[c]);
        }
        json_key(&j, "error");
        json_i64(&j, job.error);
        json_key(&j, "cpu_ns");
        json_u64(&j, job.cpu_ns);
        json_key(&j, "wall_ns");
        json_u64(&j, job.wall_ns);
        json_key(&j, "workers");
        json_u64(&j, workers);
        json_key(&j, "parts");
        json_u64(&j, n_parts ? n_parts : 1);
        json_key(&j, "mb_s");
        json_double(&j, job.wall_ns ? (double) job.pages[MIG_MOVED] * 4096 / MB / ((double) job.wall_ns / 1e9) : 0);
        json_object_end(&j);
        json_finish(&j);
        return 0;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: migrate-run target|query|move ...\n");
                return 2;
        }
        if (strcmp(argv[1], "target") == 0)
                return cmd_target(argc - 2, argv + 2);
        if (strcmp(argv[1], "query") == 0)
                return cmd_query(argc - 2, argv + 2);
        if (strcmp(argv[1], "move") == 0)
                return cmd_move(argc - 2, argv + 2);
        fprintf(stderr, "unknown command %s\n", argv[1]);
        return 2;
}
