/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Captures the numa_maps of processes whose threads have their own memory policies
 * (tests/data/README.md, threads/): one child process per case, which sets the
 * policies, touches memory from each thread and copies its own /proc files to
 *   OUT/<case>/100/{numa_maps,status} and OUT/<case>/100/task/<100+i>/numa_maps
 * (thread i, the main thread first; the ids are renumbered so the tests know them).
 *
 *   capture OUT NODE
 * NODE: the node the workers bind to (the highest with memory, in a 2-node guest 1).
 *
 * Cases:
 *   worker-bind       main default; worker 1 binds itself to NODE and touches 4 MiB;
 *                     worker 2 keeps default
 *   worker-interleave main default; worker 1 interleaves over 0 and NODE
 *   launch-bind       main binds to 0 before any thread exists (numactl --membind=0):
 *                     both workers inherit it
 *   first-vma-policy  main default; the first VMA (the executable's first mapping) gets
 *                     the VMA policy bind:0; worker 1 binds itself to NODE */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1u << 20)
static int node;
static const char *kase;
static pthread_barrier_t ready, done;

static void die(const char *what) {
        perror(what);
        exit(1);
}

static void copy(const char *from, const char *to) {
        char buf[65536];
        int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ssize_t n;

        if (in < 0 || out < 0)
                die(from);
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(out, buf, (size_t) n) != n)
                        die(to);
        close(in);
        close(out);
}

static void touch(void) {
        char *m = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
                die("mmap");
        madvise(m, 4 * MIB, MADV_NOHUGEPAGE);
        memset(m, 1, 4 * MIB);
}

static void set_policy(int mode, unsigned long mask) {
        if (set_mempolicy(mode, &mask, 64) < 0)
                die("set_mempolicy");
}

static void *worker(void *arg) {
        long i = (long) arg;

        if (i == 1 && (strcmp(kase, "worker-bind") == 0 || strcmp(kase, "first-vma-policy") == 0))
                set_policy(MPOL_BIND, 1ul << node);
        if (i == 1 && strcmp(kase, "worker-interleave") == 0)
                set_policy(MPOL_INTERLEAVE, 1ul | 1ul << node);
        touch();
        pthread_barrier_wait(&ready);
        pthread_barrier_wait(&done);
        return NULL;
}

/* The executable's first mapping gets a VMA policy: bind:0. */
static void bind_first_vma(void) {
        unsigned long start, mask = 1;
        FILE *f = fopen("/proc/self/maps", "r");

        if (!f || fscanf(f, "%lx-", &start) != 1)
                die("maps");
        fclose(f);
        if (mbind((void *) start, (size_t) sysconf(_SC_PAGESIZE), MPOL_BIND, &mask, 64, 0) < 0)
                die("mbind");
}

static void run_case(const char *out) {
        char dir[4096], from[256], to[4096 + 64];
        pthread_t t[2];
        pid_t tids[3];
        DIR *d;
        struct dirent *de;
        int n = 0;

        if (strcmp(kase, "launch-bind") == 0)
                set_policy(MPOL_BIND, 1);
        if (strcmp(kase, "first-vma-policy") == 0)
                bind_first_vma();
        touch();
        pthread_barrier_init(&ready, NULL, 3);
        pthread_barrier_init(&done, NULL, 3);
        for (long i = 0; i < 2; i++)
                pthread_create(&t[i], NULL, worker, (void *) (i + 1));
        pthread_barrier_wait(&ready);

        /* The threads in creation order: the main thread has the lowest id. */
        d = opendir("/proc/self/task");
        while (d && (de = readdir(d)) && n < 3)
                if (de->d_name[0] != '.')
                        tids[n++] = atoi(de->d_name);
        closedir(d);
        for (int i = 0; i < n; i++)
                for (int j = i + 1; j < n; j++)
                        if (tids[j] < tids[i]) {
                                pid_t x = tids[i];
                                tids[i] = tids[j];
                                tids[j] = x;
                        }
        snprintf(dir, sizeof(dir), "%s/%s/100/task", out, kase);
        snprintf(to, sizeof(to), "mkdir -p %s", dir);
        if (system(to) != 0)
                die("mkdir");
        for (int i = 0; i < n; i++) {
                snprintf(to, sizeof(to), "%s/%d", dir, 100 + i);
                mkdir(to, 0755);
                snprintf(from, sizeof(from), "/proc/self/task/%d/numa_maps", tids[i]);
                snprintf(to, sizeof(to), "%s/%d/numa_maps", dir, 100 + i);
                copy(from, to);
        }
        snprintf(to, sizeof(to), "%s/%s/100/numa_maps", out, kase);
        copy("/proc/self/numa_maps", to);
        snprintf(to, sizeof(to), "%s/%s/100/status", out, kase);
        copy("/proc/self/status", to);
        pthread_barrier_wait(&done);
        for (int i = 0; i < 2; i++)
                pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
        static const char *const cases[] = { "worker-bind", "worker-interleave", "launch-bind", "first-vma-policy" };

        if (argc != 3) {
                fprintf(stderr, "usage: capture OUT NODE\n");
                return 2;
        }
        node = atoi(argv[2]);
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
                pid_t pid = fork();
                int st;

                if (pid == 0) {
                        kase = cases[c];
                        run_case(argv[1]);
                        exit(0);
                }
                if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                        fprintf(stderr, "capture: case %s failed\n", cases[c]);
                        return 1;
                }
        }
        return 0;
}
