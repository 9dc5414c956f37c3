/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs inside a NUMA guest (see ../../README.md): creates one mapping per policy and
 * page kind the parser must understand, touches it, and copies /proc/self/numa_maps
 * to OUTDIR/numa_maps.txt, with OUTDIR/legend.txt saying which address is which.
 * Not part of the build: compiled by capture.sh on the host. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_BIND 2
#define MPOL_INTERLEAVE 3
#define MPOL_LOCAL 4
#define MPOL_PREFERRED_MANY 5
#define MPOL_F_STATIC_NODES (1 << 15)
#define MPOL_F_RELATIVE_NODES (1 << 14)
#define MPOL_F_NUMA_BALANCING (1 << 13)

static FILE *legend;
static long pagesz;

static long mbind_(void *a, size_t len, int mode, const unsigned long *mask, unsigned long maxnode) {
        return syscall(SYS_mbind, a, len, mode, mask, maxnode, 0);
}

static void note(const char *what, void *a, int rc) {
        fprintf(legend, "%lx %s%s%s\n", (unsigned long) a, what, rc ? " FAILED: " : "", rc ? strerror(errno) : "");
}

/* npages anonymous pages with a policy (mode < 0: none), touched after mbind. */
static void *anon(const char *what, size_t npages, int mode, unsigned long mask) {
        size_t len = npages * (size_t) pagesz;
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int rc = 0;
        if (p == MAP_FAILED) { perror(what); return NULL; }
        if (mode >= 0)
                rc = mbind_(p, len, mode, mode == MPOL_DEFAULT ? NULL : &mask, 64) ? -1 : 0;
        memset(p, 0x5a, len);
        note(what, p, rc);
        return p;
}

static void *file_map(const char *what, const char *path, size_t npages, int unlink_it) {
        size_t len = npages * (size_t) pagesz;
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        char *p;
        volatile char sink = 0;
        if (fd < 0 || ftruncate(fd, (off_t) len) < 0) { perror(path); return NULL; }
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) { perror(path); return NULL; }
        for (size_t i = 0; i < len; i += (size_t) pagesz)
                if (i < len / 2) p[i] = 1; else sink += p[i];
        (void) sink;
        close(fd);
        if (unlink_it) unlink(path);
        note(what, p, 0);
        return p;
}

int main(int argc, char **argv) {
        const char *out = argc > 1 ? argv[1] : ".";
        unsigned long big = argc > 2 ? strtoul(argv[2], NULL, 0) : 0; /* a wide node mask, many-node guests */
        char path[4096], buf[1 << 16];
        int in, o;
        ssize_t n;

        pagesz = sysconf(_SC_PAGESIZE);
        snprintf(path, sizeof(path), "%s/legend.txt", out);
        legend = fopen(path, "w");
        if (!legend) { perror(path); return 1; }

        anon("default anon 16 pages", 16, -1, 0);
        anon("bind:1 1 page", 1, MPOL_BIND, 2UL);
        anon("bind:1 16 pages", 16, MPOL_BIND, 2UL);
        anon("bind:0-1 16 pages", 16, MPOL_BIND, 3UL);
        anon("interleave:0-1 16 pages", 16, MPOL_INTERLEAVE, 3UL);
        anon("prefer:1 16 pages", 16, MPOL_PREFERRED, 2UL);
        anon("prefer (many):0-1 16 pages", 16, MPOL_PREFERRED_MANY, 3UL);
        anon("local 16 pages", 16, MPOL_LOCAL, 0);
        anon("bind=static:1 16 pages", 16, MPOL_BIND | MPOL_F_STATIC_NODES, 2UL);
        anon("interleave=relative:0-1 16 pages", 16, MPOL_INTERLEAVE | MPOL_F_RELATIVE_NODES, 3UL);
        anon("bind|balancing:0-1 16 pages", 16, MPOL_BIND | MPOL_F_NUMA_BALANCING, 3UL);
        anon("bind=static|balancing:0-1 16 pages", 16, MPOL_BIND | MPOL_F_STATIC_NODES | MPOL_F_NUMA_BALANCING, 3UL);
        if (big) {
                anon("interleave wide", 4, MPOL_INTERLEAVE, big);
                anon("bind=static wide", 4, MPOL_BIND | MPOL_F_STATIC_NODES, big);
                anon("prefer (many)=relative wide", 4, MPOL_PREFERRED_MANY | MPOL_F_RELATIVE_NODES, big);
        }
        {
                /* No pages at all: the line ends after the policy. */
                char *p = mmap(NULL, 4 * (size_t) pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                int rc = mbind_(p, 4 * (size_t) pagesz, MPOL_INTERLEAVE, (unsigned long[]) { 3UL }, 64) ? -1 : 0;
                note("interleave:0-1 never touched", p, rc);
        }
        {
                /* THP: 2 MiB aligned, madvised, bound to node 1. */
                size_t len = 8UL << 20;
                char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                char *a = (char *) (((unsigned long) p + (2UL << 20) - 1) & ~((2UL << 20) - 1));
                int rc;
                munmap(p, (size_t) (a - p));
                munmap(a + (4UL << 20), (size_t) (p + len - (a + (4UL << 20))));
                rc = madvise(a, 4UL << 20, MADV_HUGEPAGE);
                rc |= mbind_(a, 4UL << 20, MPOL_BIND, (unsigned long[]) { 2UL }, 64) ? -1 : 0;
                memset(a, 1, 4UL << 20);
                note("THP madvise bind:1 4 MiB", a, rc);
        }
        if (!big) {
                /* hugetlb: two mappings of 2 huge pages (the many-node guest has too
                 * few huge pages per node for a bind). */
                size_t len = 4UL << 20;
                char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
                if (p == MAP_FAILED) {
                        fprintf(legend, "hugetlb FAILED: %s\n", strerror(errno));
                } else {
                        memset(p, 1, len);
                        note("hugetlb 2x2MiB default", p, 0);
                }
                p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
                if (p != MAP_FAILED) {
                        int rc = mbind_(p, len, MPOL_BIND, (unsigned long[]) { 2UL }, 64) ? -1 : 0;
                        memset(p, 1, len);
                        note("hugetlb 2x2MiB bind:1", p, rc);
                }
        }
        file_map("file with space, tab and N0= in its name", "/tmp/a file\twith N0=999 x", 8, 0);
        file_map("file named x N0=999", "/tmp/x N0=999", 4, 0);
        file_map("file with backslash", "/tmp/back\\040slash", 2, 0);
        file_map("deleted file", "/tmp/deleted-file", 4, 1);
        {
                int fd = memfd_create("memfd test", 0);
                char *p;
                if (fd >= 0 && ftruncate(fd, 8 * pagesz) == 0 &&
                    (p = mmap(NULL, 8 * (size_t) pagesz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) != MAP_FAILED) {
                        memset(p, 1, 8 * (size_t) pagesz);
                        note("memfd 8 pages", p, 0);
                }
        }
        {
                /* The heap: brk-backed malloc. */
                char *h = malloc(64 * 1024);
                if (h) memset(h, 1, 64 * 1024);
                note("malloc (heap)", h, 0);
        }
        fclose(legend);

        snprintf(path, sizeof(path), "%s/numa_maps.txt", out);
        in = open("/proc/self/numa_maps", O_RDONLY);
        o = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0) { perror("numa_maps"); return 1; }
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(o, buf, (size_t) n) != n) return 1;
        close(o);
        snprintf(path, sizeof(path), "cat /proc/self/status > %s/status.txt; cat /proc/%d/stat > %s/stat.txt; cat /proc/%d/status > %s/status.txt", out, getpid(), out, getpid(), out);
        return system(path) ? 1 : 0;
}
