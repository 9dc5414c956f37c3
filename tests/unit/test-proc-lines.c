/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numa_maps, maps and smaps read a chunk at a time (lib/proc-lines): a file parses the
 * same whatever the chunk size, a line past the cap is cut and counted, a process past
 * the mapping cap is refused, and what a read of a hostile tenant's 16k file mappings
 * with long escaped names costs in heap does not grow with its file. The heap is
 * counted by this file's own malloc, free, calloc and realloc (glibc lets a program
 * replace them; its own strndup and asprintf then go through them too). Not under
 * AddressSanitizer, whose allocator must stay: there they are left out and the heap's
 * case skips itself. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "maps.h"
#include "numa_maps.h"
#include "parse.h"
#include "proc-lines.h"
#include "smaps.h"
#include "test.h"
#include "tmptree.h"

/* ---- heap accounting -------------------------------------------------------- */

static long long heap_now, heap_peak;

#if !TEST_ASAN
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static void heap_add(long long d) {
        heap_now += d;
        if (heap_now > heap_peak)
                heap_peak = heap_now;
}

void *malloc(size_t n) {
        void *p = __libc_malloc(n);
        if (p)
                heap_add((long long) malloc_usable_size(p));
        return p;
}

void *calloc(size_t n, size_t size) {
        void *p = __libc_calloc(n, size);
        if (p)
                heap_add((long long) malloc_usable_size(p));
        return p;
}

void *realloc(void *p, size_t n) {
        long long old = p ? (long long) malloc_usable_size(p) : 0;
        void *q = __libc_realloc(p, n);

        /* A realloc that moves holds both blocks for a moment: count the new one first. */
        if (q)
                heap_add((long long) malloc_usable_size(q));
        if (q || n == 0)
                heap_add(-old);
        return q;
}

void free(void *p) {
        if (p)
                heap_add(-(long long) malloc_usable_size(p));
        __libc_free(p);
}
#endif

/* The peak above what was held when it started. */
static void heap_mark(void) {
        heap_peak = heap_now;
}

static long long heap_peak_since(long long base) {
        return heap_peak - base;
}

/* ---- a fake /proc --------------------------------------------------------------- */

#define PID 4242
static char root[256];

static void proc_path(char *buf, size_t size, const char *name) {
        snprintf(buf, size, "%s/%d/%s", root, PID, name);
}

static FILE *proc_file(const char *name) {
        char path[512];
        FILE *f;

        proc_path(path, sizeof(path), name);
        f = fopen(path, "w");
        if (!f)
                TEST_FAIL("cannot create %s: %m", path);
        return f;
}

static void proc_put(const char *name, const char *text) {
        char path[512];

        proc_path(path, sizeof(path), name);
        tmptree_write(path, text);
}

static off_t file_size(const char *name) {
        char path[512];
        struct stat st;

        proc_path(path, sizeof(path), name);
        return stat(path, &st) == 0 ? st.st_size : -1;
}

static void remove_file(const char *name) {
        char path[512];

        proc_path(path, sizeof(path), name);
        unlink(path);
}

/* A file name of name_len newline bytes, as the kernel escapes it: "\012" each. */
static void put_name(FILE *f, size_t name_len) {
        static char *name;
        static size_t made;

        if (made != name_len) {
                free(name);
                name = malloc(name_len * 4 + 1);
                if (!name)
                        return;
                for (size_t i = 0; i < name_len; i++)
                        memcpy(name + i * 4, "\\012", 4);
                name[name_len * 4] = 0;
                made = name_len;
        }
        fputs("/home/t/", f);
        fputs(name, f);
}

/* n file mappings, 8 KiB apart, in the three formats. */
static void write_mappings(const char *name, size_t n, size_t name_len) {
        FILE *f = proc_file(name);

        if (!f)
                return;
        for (size_t i = 0; i < n; i++) {
                uint64_t start = 0x7f0000000000ull + i * 0x2000;

                if (name[0] == 'n') {
                        fprintf(f, "%llx default file=", (unsigned long long) start);
                        put_name(f, name_len);
                        fputs(" mapped=1 active=0 N0=1 kernelpagesize_kB=4\n", f);
                        continue;
                }
                fprintf(f, "%llx-%llx r--s 00000000 00:1f 7   ", (unsigned long long) start,
                        (unsigned long long) start + 0x1000);
                put_name(f, name_len);
                fputc('\n', f);
                if (name[0] == 's')
                        fprintf(f, "Size:                  4 kB\nRss:                   4 kB\n"
                                   "Locked:                %d kB\nVmFlags: rd sh mr mw me ms %s\n",
                                i % 2 ? 4 : 0, i % 2 ? "lo " : "");
        }
        fclose(f);
}

static int intro(void) {
        char dir[512];

        snprintf(root, sizeof(root), "%s/test-proc-lines-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(root))
                return 1;
        snprintf(dir, sizeof(dir), "%s/%d", root, PID);
        return mkdir(dir, 0700) < 0;
}

static void outro(void) {
        tmptree_remove(root);
}

/* ---- the line splitting ------------------------------------------------------------ */

/* Every line handed over, as "[len]text" with '!' after a cut one. */
struct collected {
        char text[8192];
        size_t len;
};

static int collect(void *ctx, const char *line, size_t len, bool cut) {
        struct collected *c = ctx;
        int n = snprintf(c->text + c->len, sizeof(c->text) - c->len, "[%zu]%.*s%s", len, (int) len, line,
                         cut ? "!" : "");

        if (n < 0 || (size_t) n >= sizeof(c->text) - c->len)
                return -ENOBUFS;
        c->len += (size_t) n;
        return 0;
}

/* Lines of every length around the cap (8 here), empty ones, a cut one at the end
 * without its newline: each chunk size from 1 to past the file's size puts the chunk
 * boundaries at every position, and the lines are the same as from the buffer whole. */
TEST(lines_same_at_every_chunk_boundary) {
        static const char text[] = "a\n\nbcdefgh\nbcdefghi\nbcdefghij\n0123456789abcdef\n\nxy\nlast-one-is-cut";
        struct proc_lines_opts o = { .line_max = 8, .vmas_max = SIZE_MAX };
        struct collected whole = {};
        uint64_t cut_whole = 0;
        char path[512];

        proc_put("maps", text);
        proc_path(path, sizeof(path), "maps");
        CHECK_INT(proc_lines_buf(text, sizeof(text) - 1, &o, collect, &whole, &cut_whole), 0);
        CHECK_STR(whole.text, "[1]a[0][7]bcdefgh[8]bcdefghi[8]bcdefghi![8]01234567![0][2]xy[8]last-one!");
        CHECK_INT(cut_whole, 3);
        for (o.chunk = 1; o.chunk <= sizeof(text) + 1; o.chunk++) {
                struct collected c = {};
                uint64_t cut = 0;

                CHECK_INT(proc_lines_path(path, &o, collect, &c, &cut), 0);
                CHECK_MSG(strcmp(c.text, whole.text) == 0, "chunk %zu: %s", o.chunk, c.text);
                CHECK_INT(cut, cut_whole);
        }
}

static bool vma_equal(const struct numa_maps *a, const struct vma *x, const struct numa_maps *b,
                      const struct vma *y) {
        if (x->start != y->start || !numa_maps_mempolicy_equal(&x->policy, &y->policy) || x->kind != y->kind ||
            x->hugetlb != y->hugetlb || x->page_size_kb != y->page_size_kb || x->anon != y->anon ||
            x->dirty != y->dirty || x->mapped != y->mapped || x->mapmax != y->mapmax || x->active != y->active ||
            x->pages != y->pages || x->np_count != y->np_count || x->line != y->line ||
            (x->path == NULL) != (y->path == NULL) || (x->path && strcmp(x->path, y->path) != 0))
                return false;
        for (size_t i = 0; i < x->np_count; i++)
                if (vma_node_pages(a, x)[i].node != vma_node_pages(b, y)[i].node ||
                    vma_node_pages(a, x)[i].pages != vma_node_pages(b, y)[i].pages)
                        return false;
        return true;
}

static bool numa_maps_equal(const struct numa_maps *a, const struct numa_maps *b) {
        if (a->n_vmas != b->n_vmas || a->n_bad_lines != b->n_bad_lines ||
            memcmp(a->bad_lines, b->bad_lines, sizeof(a->bad_lines)) != 0)
                return false;
        for (size_t i = 0; i < a->n_vmas; i++)
                if (!vma_equal(a, &a->vmas[i], b, &b->vmas[i]))
                        return false;
        return true;
}

static char *load(const char *dir, const char *name, size_t *len) {
        char path[1024];
        char *buf = NULL;

        snprintf(path, sizeof(path), "%s/%s/%s", TEST_DATA_DIR, dir, name);
        if (parse_read_file_at(AT_FDCWD, path, 1 << 20, &buf, len) < 0)
                TEST_FAIL("cannot read %s", path);
        return buf;
}

/* A captured numa_maps with its file-name traps ("N0\075999", escaped blanks) and a bad
 * line added: read in chunks of every size, it parses as it does held whole. */
TEST(numa_maps_same_at_every_chunk_size) {
        size_t len = 0;
        _cleanup_free_ char *cap = load("numa_maps", "qemu-6.1-2node.txt", &len);
        _cleanup_free_ char *text = NULL;
        _cleanup_(numa_maps_freep) struct numa_maps *whole = NULL;
        struct proc_lines_opts o = proc_lines_default;
        char path[512];

        if (!cap)
                return;
        CHECK(asprintf(&text, "%.*s7f0000 bind:junk\n\n7f1000 default\n", (int) len, cap) > 0);
        proc_put("numa_maps", text);
        proc_path(path, sizeof(path), "numa_maps");
        CHECK_INT(numa_maps_parse(text, strlen(text), &whole), 0);
        if (!whole)
                return;
        CHECK_INT(whole->n_bad_lines, 2);
        for (o.chunk = 1; o.chunk <= strlen(text) + 1; o.chunk++) {
                _cleanup_(numa_maps_freep) struct numa_maps *m = NULL;

                CHECK_INT(numa_maps_read_path(path, &o, true, &m), 0);
                CHECK_MSG(m && numa_maps_equal(m, whole), "chunk %zu: not the same as whole", o.chunk);
        }
}

/* The captured smaps of a process with two locked VMAs, and a maps made of its
 * headers: the same at every chunk size. */
TEST(smaps_and_maps_same_at_every_chunk_size) {
        size_t len = 0, n_whole = 0, nr_whole = 0;
        _cleanup_free_ char *smaps = load("proc", "mlocked.smaps", &len);
        _cleanup_free_ uint64_t *whole = NULL;
        _cleanup_free_ struct vma_range *ranges_whole = NULL;
        struct proc_lines_opts o = proc_lines_default;
        char spath[512], mpath[512];
        FILE *f;

        if (!smaps)
                return;
        proc_put("smaps", smaps);
        f = proc_file("maps");
        if (!f)
                return;
        for (const char *l = smaps; *l;) {
                const char *nl = strchr(l, '\n');
                size_t ll = nl ? (size_t) (nl - l) : strlen(l);

                if (memchr(l, '-', ll) && !memchr(l, ':', ll < 20 ? ll : 20))
                        fprintf(f, "%.*s\n", (int) ll, l);
                l += ll + (nl != NULL);
        }
        fclose(f);
        proc_path(spath, sizeof(spath), "smaps");
        proc_path(mpath, sizeof(mpath), "maps");
        CHECK_INT(smaps_locked_parse(smaps, len, &whole, &n_whole), 0);
        CHECK_INT(n_whole, 2);
        CHECK_INT(maps_read(root, PID, &ranges_whole, &nr_whole), 0);
        CHECK(nr_whole > 10);
        /* Every size up to 600 (every position of each line boundary in the first
         * chunks), then every 97th: each size reads the whole 20 KiB file. */
        for (o.chunk = 1; o.chunk <= len + 1; o.chunk += o.chunk < 600 ? 1 : 97) {
                _cleanup_free_ uint64_t *starts = NULL;
                _cleanup_free_ struct vma_range *ranges = NULL;
                size_t n = 0, nr = 0;

                CHECK_INT(smaps_read_locked_path(spath, &o, &starts, &n), 0);
                CHECK_MSG(n == n_whole && starts && memcmp(starts, whole, n * sizeof(*starts)) == 0,
                          "smaps, chunk %zu: %zu locked", o.chunk, n);
                if (o.chunk > 200 && o.chunk % 37)
                        continue; /* maps is 1/20 of smaps: every size up to its length, and some */
                CHECK_INT(maps_read_path(mpath, &o, &ranges, &nr, NULL), 0);
                CHECK_MSG(nr == nr_whole && memcmp(ranges, ranges_whole, nr * sizeof(*ranges)) == 0,
                          "maps, chunk %zu: %zu ranges", o.chunk, nr);
        }
}

/* ---- lines past the cap ------------------------------------------------------------ */

static int count_lines(void *ctx, const char *line, size_t len, bool cut) {
        (void) line;
        (void) len;
        (void) cut;
        ++*(size_t *) ctx;
        return 0;
}

/* A mapping whose name escapes to more than the line cap: numa_maps counts it as a bad
 * line (its counters are past the cut) and reads on; maps and smaps still take its
 * range, which comes before the name, so that a locked VMA with a long name stays
 * locked. */
TEST(over_long_line_skipped_and_counted) {
        size_t long_name = PROC_LINE_MAX / 4 + 100;
        _cleanup_(numa_maps_freep) struct numa_maps *m = NULL;
        _cleanup_free_ struct vma_range *ranges = NULL;
        _cleanup_free_ uint64_t *starts = NULL;
        size_t n = 0, lines = 0;
        uint64_t cut = 0;
        char path[512];
        FILE *f = proc_file("numa_maps");

        if (!f)
                return;
        fputs("7f0000000000 default anon=1 N0=1 kernelpagesize_kB=4\n7f0000002000 default file=", f);
        put_name(f, long_name);
        fputs(" mapped=1 N0=1 kernelpagesize_kB=4\n7f0000004000 bind:1 anon=2 N1=2 kernelpagesize_kB=4\n", f);
        fclose(f);
        CHECK_INT(numa_maps_read(root, PID, &m), 0);
        if (m) {
                CHECK_INT(m->n_vmas, 2);
                CHECK_INT(m->n_bad_lines, 1);
                CHECK_INT(m->bad_lines[0], 2);
                CHECK_INT(m->vmas[1].start, 0x7f0000004000);
                CHECK_INT(numa_maps_vma_pages_on(m, &m->vmas[1], 1), 2);
        }
        /* Counted once by the reader, however many chunks the line spans. */
        proc_path(path, sizeof(path), "numa_maps");
        CHECK_INT(proc_lines_path(path, &proc_lines_default, count_lines, &lines, &cut), 0);
        CHECK_INT(cut, 1);
        CHECK_INT(lines, 3);

        f = proc_file("smaps");
        if (!f)
                return;
        fputs("7f0000000000-7f0000001000 r--s 00000000 00:1f 7   ", f);
        put_name(f, long_name);
        fputs("\nSize: 4 kB\nVmFlags: rd sh lo \n7f0000002000-7f0000003000 rw-p 00000000 00:00 0\n"
              "VmFlags: rd wr lo \n", f);
        fclose(f);
        CHECK_INT(smaps_read_locked(root, PID, &starts, &n), 0);
        CHECK_INT(n, 2);
        CHECK(smaps_locked_has(starts, n, 0x7f0000000000));

        f = proc_file("maps");
        if (!f)
                return;
        fputs("7f0000000000-7f0000001000 r--s 00000000 00:1f 7   ", f);
        put_name(f, long_name);
        fputs("\n7f0000002000-7f0000003000 rw-p 00000000 00:00 0\n", f);
        fclose(f);
        CHECK_INT(maps_read(root, PID, &ranges, &n), 0);
        CHECK_INT(n, 2);
        CHECK_INT(maps_end_of(ranges, n, 0x7f0000000000), 0x7f0000001000);
        CHECK_INT(maps_end_of(ranges, n, 0x7f0000002000), 0x7f0000003000);
}

/* ---- the mapping cap ---------------------------------------------------------------- */

/* PROC_VMAS_MAX mappings are read; one more, and each reader refuses the process with
 * -E2BIG, leaving its results alone. */
TEST(mapping_cap) {
        static const char *const files[] = { "numa_maps", "maps", "smaps" };

        for (size_t k = 0; k < ELEMENTSOF(files); k++)
                for (size_t extra = 0; extra <= 1; extra++) {
                        struct numa_maps *m = (struct numa_maps *) 1;
                        struct vma_range *ranges = (struct vma_range *) 1;
                        uint64_t *starts = (uint64_t *) 1;
                        size_t n = 7;
                        int r;

                        write_mappings(files[k], PROC_VMAS_MAX + extra, 1);
                        r = k == 0 ? numa_maps_read(root, PID, &m)
                          : k == 1 ? maps_read(root, PID, &ranges, &n)
                                   : smaps_read_locked(root, PID, &starts, &n);
                        CHECK_MSG(r == (extra ? -E2BIG : 0), "%s with %zu mappings: %d", files[k],
                                  PROC_VMAS_MAX + extra, r);
                        if (extra) {
                                CHECK(m == (struct numa_maps *) 1 && ranges == (struct vma_range *) 1 &&
                                      starts == (uint64_t *) 1 && n == 7);
                                continue;
                        }
                        if (k == 0) {
                                CHECK_INT(m->n_vmas, PROC_VMAS_MAX);
                                numa_maps_free(m);
                        } else if (k == 1) {
                                CHECK_INT(n, PROC_VMAS_MAX);
                                free(ranges);
                        } else {
                                CHECK_INT(n, PROC_VMAS_MAX / 2);
                                free(starts);
                        }
                }
        remove_file("smaps");
}

/* A process that is gone (no directory) is -ESRCH for each reader. */
TEST(gone_is_esrch) {
        struct numa_maps *m = NULL;
        struct vma_range *ranges = NULL;
        uint64_t *starts = NULL;
        size_t n = 0;

        CHECK_INT(numa_maps_read(root, PID + 1, &m), -ESRCH);
        CHECK_INT(maps_read(root, PID + 1, &ranges, &n), -ESRCH);
        CHECK_INT(smaps_read_locked(root, PID + 1, &starts, &n), -ESRCH);
        CHECK_INT(numa_maps_read(root, 0, &m), -EINVAL);
}

/* ---- memory ---------------------------------------------------------------------- */

#define HOSTILE_VMAS 16384
#define HOSTILE_NAME 1024   /* newline bytes a name: 4 KiB escaped */

/* The peak heap of a read of each file of n mappings with names of name_len bytes. */
static void read_peaks(size_t name_len, long long peak[3], off_t size[3]) {
        static const char *const files[] = { "numa_maps", "maps", "smaps" };

        for (size_t k = 0; k < 3; k++) {
                struct numa_maps *m = NULL;
                struct vma_range *ranges = NULL;
                uint64_t *starts = NULL;
                size_t n = 0;
                long long base;
                int r;

                write_mappings(files[k], HOSTILE_VMAS, name_len);
                size[k] = file_size(files[k]);
                base = heap_now;
                heap_mark();
                r = k == 0 ? numa_maps_read(root, PID, &m)
                  : k == 1 ? maps_read(root, PID, &ranges, &n)
                           : smaps_read_locked(root, PID, &starts, &n);
                peak[k] = heap_peak_since(base);
                CHECK_INT(r, 0);
                CHECK_INT(k == 0 ? (m ? m->n_vmas : 0) : n, k == 2 ? HOSTILE_VMAS / 2 : HOSTILE_VMAS);
                CHECK(!m || m->vmas[0].path == NULL);  /* numa_maps_read copies no name */
                numa_maps_free(m);
                free(ranges);
                free(starts);
                remove_file(files[k]);
        }
}

/* 16k file mappings whose names are 1,024 newlines each (4 KiB escaped): over 64 MiB of
 * each file, for a few MB of the tenant's own kernel memory. The heap a read takes is
 * its one buffer (128 KiB) and its result (bound[], a quarter of the file at most),
 * and the same, within a line, as with 1-byte names. Reading whole took the file's
 * size, and numa_maps's copies of the names as much again. */
TEST(heap_bounded_with_long_names) {
        long long peak_long[3], peak_short[3];
        off_t size_long[3], size_short[3];
        /* The reader's buffer and its result: for numa_maps 16k struct vma (280 bytes)
         * twice over, since a realloc that moves holds both arrays (counted here even
         * when glibc's mremap does not); for maps its struct vma_range (48 bytes: the
         * object of a shared mapping) the same way; for smaps 8 bytes a mapping. */
        const long long bound[3] = {
                2ll * HOSTILE_VMAS * (long long) sizeof(struct vma) + (1 << 20),
                2ll * HOSTILE_VMAS * (long long) sizeof(struct vma_range) + (1 << 20),
                1 << 20,
        };
        void *probe;

        if (TEST_ASAN)
                TEST_SKIP("built with AddressSanitizer, whose allocator this file's malloc would replace: "
                          "the heap is not counted");
        /* The accounting itself: a block of 1 MiB shows. */
        heap_mark();
        probe = malloc(1 << 20);
        CHECK(heap_peak_since(heap_now - (1 << 20)) >= 1 << 20);
        free(probe);

        read_peaks(HOSTILE_NAME, peak_long, size_long);
        read_peaks(1, peak_short, size_short);
        for (size_t k = 0; k < 3; k++) {
                printf("file %zu: %lld bytes, peak heap %lld bytes (%lld with 1-byte names)\n", k,
                       (long long) size_long[k], peak_long[k], peak_short[k]);
                CHECK(size_long[k] > 64ll << 20);
                CHECK_MSG(peak_long[k] < bound[k] && bound[k] < size_long[k] / 4, "file %zu: peak %lld, bound %lld",
                          k, peak_long[k], bound[k]);
                CHECK_MSG(peak_long[k] <= peak_short[k] + PROC_LINE_MAX, "file %zu: %lld against %lld with short "
                          "names", k, peak_long[k], peak_short[k]);
        }
}

DEFINE_TEST_MAIN_FULL(intro, outro)
