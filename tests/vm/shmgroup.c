/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Processes that share memory, for the engine's shared-memory scenarios (07x-share-*):
 * a leader maps SIZE MiB of shared memory and writes it where it runs (its cgroup's
 * CPUs, so first touch puts it there), then forks WORKERS children that read all of it
 * over and over, as PostgreSQL's backends read its shared buffers. The leader stays
 * idle, as PostgreSQL's postmaster does.
 *
 *   shmgroup lead SIZE_MB WORKERS READY_FILE [NAME]
 *      NAME: a /dev/shm file (shm_open) others may map too; none: MAP_SHARED |
 *      MAP_ANONYMOUS (PostgreSQL's shared buffers). READY_FILE gets "<leader pid>
 *      <start-hex> <length> <worker pid>..." once the memory is written and the
 *      workers run.
 *   shmgroup lead-cow SIZE_MB COW_MB WORKERS READY_FILE [NAME]
 *      the same, and COW_MB of anonymous private memory written before the fork and
 *      read by the workers too: copy-on-write pages a pre-fork server's workers share
 *      (no transparent huge pages: a huge page is never moved as a group's). READY_FILE
 *      gets "<leader pid> <start-hex> <length> <cow-start-hex> <worker pid>...".
 *   shmgroup map NAME OFFSET_MB LEN_MB READY_FILE
 *      maps LEN_MB of /dev/shm/NAME from OFFSET_MB, writes every page of it (so it maps
 *      exactly those: a write fault maps its own page only), writes "<pid> <start-hex>
 *      <length>" to READY_FILE and sleeps: a process outside the group that maps part
 *      of the object.
 * Both run until killed. */
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MB (UINT64_C(1) << 20)

static void write_ready(const char *path, const char *text) {
        char tmp[4096];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) < 0) {
                perror("ready file");
                exit(1);
        }
}

static void *map_object(const char *name, uint64_t off, uint64_t len, bool create) {
        int fd = -1;
        void *m;

        if (!name)
                m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        else {
                fd = shm_open(name, O_RDWR | (create ? O_CREAT | O_EXCL : 0), 0666);
                if (fd < 0 || (create && (fchmod(fd, 0666) < 0 || ftruncate(fd, (off_t) len) < 0))) {
                        perror(name);
                        exit(1);
                }
                m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t) off);
                close(fd);
        }
        if (m == MAP_FAILED) {
                perror("mmap");
                exit(1);
        }
        return m;
}

static void write_all(volatile char *m, uint64_t len) {
        long ps = sysconf(_SC_PAGESIZE);

        for (uint64_t i = 0; i < len; i += (uint64_t) ps)
                m[i] = 1;
}

/* A worker: reads every page of both, forever. */
static void reader(const volatile char *m, uint64_t len, const volatile char *cow, uint64_t cow_len) {
        long ps = sysconf(_SC_PAGESIZE);
        unsigned sum = 0;

        for (;;) {
                for (uint64_t i = 0; i < len; i += (uint64_t) ps)
                        sum += (unsigned char) m[i];
                for (uint64_t i = 0; i < cow_len; i += (uint64_t) ps)
                        sum += (unsigned char) cow[i];
        }
}

static char *map_cow(uint64_t len) {
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (m == MAP_FAILED) {
                perror("mmap");
                exit(1);
        }
        (void) madvise(m, len, MADV_NOHUGEPAGE);
        return m;
}

static int lead(uint64_t size_mb, uint64_t cow_mb, unsigned workers, const char *ready, const char *name) {
        uint64_t len = size_mb * MB, cow_len = cow_mb * MB;
        char *m = map_object(name, 0, len, true), *cow = cow_len ? map_cow(cow_len) : NULL, text[4096];
        int at;

        write_all(m, len);
        if (cow)
                write_all(cow, cow_len);
        at = snprintf(text, sizeof(text), "%d %lx %lu", (int) getpid(), (unsigned long) (uintptr_t) m,
                      (unsigned long) len);
        if (cow)
                at += snprintf(text + at, sizeof(text) - (size_t) at, " %lx", (unsigned long) (uintptr_t) cow);
        for (unsigned w = 0; w < workers; w++) {
                pid_t pid = fork();

                if (pid < 0) {
                        perror("fork");
                        return 1;
                }
                if (pid == 0)
                        reader(m, len, cow, cow_len);
                at += snprintf(text + at, sizeof(text) - (size_t) at, " %d", (int) pid);
        }
        snprintf(text + at, sizeof(text) - (size_t) at, "\n");
        write_ready(ready, text);
        for (;;)
                pause();
        return 0;
}

static int map_part(const char *name, uint64_t off_mb, uint64_t len_mb, const char *ready) {
        uint64_t len = len_mb * MB;
        char *m = map_object(name, off_mb * MB, len, false), text[256];

        write_all(m, len);
        snprintf(text, sizeof(text), "%d %lx %lu\n", (int) getpid(), (unsigned long) (uintptr_t) m,
                 (unsigned long) len);
        write_ready(ready, text);
        for (;;)
                pause();
        return 0;
}

int main(int argc, char **argv) {
        if (argc >= 5 && !strcmp(argv[1], "lead"))
                return lead(strtoull(argv[2], NULL, 10), 0, (unsigned) atoi(argv[3]), argv[4], argc > 5 ? argv[5] : NULL);
        if (argc >= 6 && !strcmp(argv[1], "lead-cow"))
                return lead(strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10), (unsigned) atoi(argv[4]), argv[5],
                            argc > 6 ? argv[6] : NULL);
        if (argc == 6 && !strcmp(argv[1], "map"))
                return map_part(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), argv[5]);
        fprintf(stderr, "usage: shmgroup lead SIZE_MB WORKERS READY_FILE [NAME] | "
                        "shmgroup lead-cow SIZE_MB COW_MB WORKERS READY_FILE [NAME] | "
                        "shmgroup map NAME OFFSET_MB LEN_MB READY_FILE\n");
        return 2;
}
