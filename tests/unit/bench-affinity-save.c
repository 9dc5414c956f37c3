/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Times the affinity keeper's save (daemon/affinity-store.c) of AFFINITY_THREADS_MAX
 * (65,536) records: 64 processes of 1,024 threads, with plain masks (0-63 placed on
 * 0-31) and with masks a tenant fragmented (every other CPU of 0-319, or of 0-511,
 * placed on every other CPU of 0-127: the second makes a file bigger than the reader's
 * 64 MiB). Not a test: built with `ninja -C build tests/bench-affinity-save`, run by
 * hand, `bench-affinity-save [DIR]` (default /run; the daemon's /run is a tmpfs). It
 * includes affinity-store.c to reach its static format_list(). Each save is timed 7 times (wall and
 * the thread's CPU time, CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID).
 * With --check (the unit test affinity-save), no timing: the writer's CPU lists are
 * cpumask_format()'s, 65,536 records of fragmented masks are read back as written, and
 * a file bigger than the reader's 64 MiB is not written. */
#include "../../daemon/affinity-store.c"
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

static double now_ms(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static void run(const char *dir, const char *name, const nb_cpumask *orig, const nb_cpumask *placed) {
        char path[256];
        struct affinity_store store, *k = &store;
        double wall[7], cpu[7];
        struct stat st;
        int r = 0;

        snprintf(path, sizeof(path), "%s/bench-affinity-%d/affinity", dir, (int) getpid());
        if (affinity_store_init(k, path) < 0)
                exit(1);
        for (pid_t p = 0; p < 64; p++) {
                struct aff_proc *ap = affinity_store_add(k, 100000 + p, 123456789);
                for (pid_t t = 0; t < 1024; t++)
                        if (!ap || affinity_store_add_thread(k, ap, 100000 + p * 1024 + t, 123456789 + (uint64_t) t, 0, orig,
                                              placed, NULL) < 0)
                                exit(1);
        }
        for (int i = 0; i < 7; i++) {
                double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
                r = affinity_store_save(k);
                wall[i] = now_ms(CLOCK_MONOTONIC) - w0;
                cpu[i] = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
        }
        qsort(wall, 7, sizeof(double), cmp);
        qsort(cpu, 7, sizeof(double), cmp);
        if (r < 0 || stat(path, &st) < 0)
                st.st_size = 0;
        printf("%-14s %zu records, %s %.1f MiB: save wall min %.0f ms median %.0f ms max %.0f ms; CPU median %.0f ms "
               "(%.2f us a record)\n", name, k->n_threads, r < 0 ? "refused, the file would exceed" : "a file of",
               r < 0 ? STATE_FILE_MAX / 1048576.0 : st.st_size / 1048576.0, wall[0], wall[3], wall[6], cpu[3],
               cpu[3] * 1000 / (double) k->n_threads);
        unlink(path);
        *strrchr(path, '/') = 0;
        rmdir(path);
        affinity_store_done(k);
}

/* The writer's lists are cpumask_format()'s, for random masks of every density. */
static int check_format(void) {
        static char a[CPUMASK_STRMAX], b[CPUMASK_STRMAX];
        uint64_t seed = 88172645463325252ull;

        for (int i = 0; i < 20000; i++) {
                nb_cpumask m = {};
                unsigned nbits = 1 + (unsigned) (i * 7919 % NB_CPUS_MAX), density = 1 + (unsigned) (i % 7);

                for (unsigned c = 0; c < nbits; c++) {
                        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                        if (seed % 8 < density)
                                cpumask_set(&m, c);
                }
                cpumask_format(&m, a, sizeof(a));
                format_list(m.w, used_words(&m), b);
                if (strcmp(a, b) != 0) {
                        fprintf(stderr, "FAIL: the writer's list differs from cpumask_format's:\n%s\n%s\n", b, a);
                        return 1;
                }
        }
        printf("ok: 20,000 random masks written as cpumask_format() writes them\n");
        return 0;
}

static struct affinity_store *filled(const char *path, const nb_cpumask *orig, const nb_cpumask *placed) {
        struct affinity_store *k = calloc(1, sizeof(*k));

        if (!k || affinity_store_init(k, path) < 0)
                exit(1);
        for (pid_t p = 0; p < 64; p++) {
                struct aff_proc *ap = affinity_store_add(k, 100000 + p, 123456789);
                for (pid_t t = 0; t < 1024; t++)
                        if (!ap || affinity_store_add_thread(k, ap, 100000 + p * 1024 + t, 123456789 + (uint64_t) t,
                                              (unsigned) t % 3, orig, placed, NULL) < 0)
                                exit(1);
        }
        return k;
}

/* 65,536 records of fragmented masks written and read back the same; a file the
 * reader would refuse is not written, and leaves no temporary file. */
static int check_round_trip(const char *dir) {
        char path[256];
        nb_cpumask o = {}, p = {};
        struct affinity_store *k, back;
        size_t same = 0;
        DIR *d;
        struct dirent *de;

        for (unsigned c = 0; c < 320; c += 2)
                cpumask_set(&o, c);
        for (unsigned c = 0; c < 128; c += 2)
                cpumask_set(&p, c);
        snprintf(path, sizeof(path), "%s/affinity", dir);
        k = filled(path, &o, &p);
        if (affinity_store_init(&back, path) < 0 || affinity_store_save(k) < 0 || affinity_store_load(&back) < 0 ||
            back.n_threads != k->n_threads) {
                fprintf(stderr, "FAIL: 65,536 records not written and read back whole\n");
                return 1;
        }
        for (size_t i = 0; i < k->n_procs; i++)
                for (size_t j = 0; j < k->procs[i].n; j++) {
                        const struct aff_thread *t = &k->procs[i].threads[j];
                        const struct aff_proc *q = affinity_store_find(&back, k->procs[i].pid);
                        const struct aff_thread *u = q ? affinity_store_thread(q, t->tid) : NULL;
                        nb_cpumask a, b, c, e;

                        if (!u)
                                continue;
                        affinity_store_original(t, &a);
                        affinity_store_original(u, &b);
                        affinity_store_placed(t, &c);
                        affinity_store_placed(u, &e);
                        same += u->tid_start == t->tid_start && u->flags == t->flags && cpumask_equal(&a, &b) &&
                                cpumask_equal(&c, &e) && back.procs[i].start_time == k->procs[i].start_time;
                }
        affinity_store_done(&back);
        affinity_store_done(k);
        free(k);
        if (same != 65536) {
                fprintf(stderr, "FAIL: %zu of 65,536 records read back the same\n", same);
                return 1;
        }
        printf("ok: 65,536 records of fragmented masks written and read back the same\n");
        unlink(path);
        for (unsigned c = 320; c < 512; c += 2)
                cpumask_set(&o, c);
        k = filled(path, &o, &p);
        if (affinity_store_save(k) != -EFBIG || access(path, F_OK) == 0) {
                fprintf(stderr, "FAIL: a file bigger than 64 MiB written\n");
                return 1;
        }
        affinity_store_done(k);
        free(k);
        d = opendir(dir);
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.') {
                        fprintf(stderr, "FAIL: %s/%s left behind\n", dir, de->d_name);
                        return 1;
                }
        if (d)
                closedir(d);
        printf("ok: 65,536 records of 75 MiB not written, nothing left behind\n");
        return 0;
}

static int check(void) {
        char dir[] = "/tmp/test-affinity-save-XXXXXX";
        int r;

        if (!mkdtemp(dir))
                return 1;
        r = check_format() | check_round_trip(dir);
        rmdir(dir);
        return r;
}

int main(int argc, char **argv) {
        const char *dir = argc > 1 ? argv[1] : "/run";
        nb_cpumask o = {}, p = {};

        log_set_max_level(LOG_LVL_ERR - 1);
        if (argc > 1 && strcmp(argv[1], "--check") == 0)
                return check();

        for (unsigned c = 0; c < 64; c++)
                cpumask_set(&o, c);
        for (unsigned c = 0; c < 32; c++)
                cpumask_set(&p, c);
        run(dir, "plain", &o, &p);
        o = p = (nb_cpumask) {};
        for (unsigned c = 0; c < 320; c += 2)
                cpumask_set(&o, c);
        for (unsigned c = 0; c < 128; c += 2)
                cpumask_set(&p, c);
        run(dir, "fragmented-320", &o, &p);
        o = p = (nb_cpumask) {};
        for (unsigned c = 0; c < 512; c += 2)
                cpumask_set(&o, c);
        for (unsigned c = 0; c < 128; c += 2)
                cpumask_set(&p, c);
        run(dir, "fragmented-512", &o, &p);
        return 0;
}
