/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The unit tests' temporary trees: a fake /proc, /sys or cgroup root, a state
 * directory. One home for making, filling, copying and removing them, instead of a
 * write_file() and an rm -rf in every test file.
 *
 *   char root[PATH_MAX];
 *   tmptree_new(root, sizeof(root), "test-foo");      (under $TMPDIR, else /tmp)
 *   tmptree_write_at(root, "1/status", "Name:\tx\n"); (its directories made)
 *   ...
 *   tmptree_remove(root);                             (rm -rf)
 *
 * A call that fails is a failed check (TEST_FAIL, saying the path and the error)
 * and returns -errno, so a caller that cannot go on can tell; the others ignore it.
 * Static inline, like test.h: a test includes it and links nothing. */
#pragma once
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test.h"

/* a/b into buf: -ENAMETOOLONG (a failed check) when it does not fit. */
static inline int tmptree_join(char *buf, size_t size, const char *a, const char *b) {
        int n = snprintf(buf, size, "%s/%s", a, b);

        if (n < 0 || (size_t) n >= size) {
                TEST_FAIL("path too long: %s/%s", a, b);
                return -ENAMETOOLONG;
        }
        return 0;
}

/* A new empty directory, $TMPDIR/PREFIX-XXXXXX (/tmp without TMPDIR), its name in buf. */
static inline int tmptree_new(char *buf, size_t size, const char *prefix) {
        const char *tmp = getenv("TMPDIR");
        int n = snprintf(buf, size, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);

        if (n < 0 || (size_t) n >= size) {
                TEST_FAIL("path too long: %s", prefix);
                return -ENAMETOOLONG;
        }
        if (!mkdtemp(buf)) {
                int e = -errno;
                TEST_FAIL("mkdtemp %s: %m", buf);
                return e;
        }
        return 0;
}

/* mkdir -p: path and each directory above it that is missing (0755). */
static inline int tmptree_mkdirs(const char *path) {
        char p[PATH_MAX];

        if (snprintf(p, sizeof(p), "%s", path) >= (int) sizeof(p)) {
                TEST_FAIL("path too long: %s", path);
                return -ENAMETOOLONG;
        }
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                        int e = -errno;
                        TEST_FAIL("mkdir %s: %m", p);
                        return e;
                }
                *s = '/';
        }
        if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                int e = -errno;
                TEST_FAIL("mkdir %s: %m", p);
                return e;
        }
        return 0;
}

/* mkdir -p root/rel. */
static inline int tmptree_mkdirs_at(const char *root, const char *rel) {
        char path[PATH_MAX];
        int r = tmptree_join(path, sizeof(path), root, rel);

        return r < 0 ? r : tmptree_mkdirs(path);
}

/* len bytes of data as the whole of the file at path (made, or cut to nothing first);
 * its directory must exist. */
static inline int tmptree_write_len(const char *path, const void *data, size_t len) {
        FILE *f = fopen(path, "we");
        bool ok;

        if (!f) {
                int e = -errno;
                TEST_FAIL("cannot create %s: %m", path);
                return e;
        }
        ok = fwrite(data, 1, len, f) == len;
        ok = fclose(f) == 0 && ok;
        if (!ok) {
                TEST_FAIL("cannot write %s", path);
                return -EIO;
        }
        return 0;
}

/* text as the whole of the file at path; its directory must exist. */
static inline int tmptree_write(const char *path, const char *text) {
        return tmptree_write_len(path, text, strlen(text));
}

/* text as the whole of root/rel, rel's directories made first. */
static inline int tmptree_write_at(const char *root, const char *rel, const char *text) {
        char path[PATH_MAX], *slash;
        int r = tmptree_join(path, sizeof(path), root, rel);

        if (r < 0)
                return r;
        slash = strrchr(path, '/');
        if (slash > path + strlen(root)) {
                *slash = '\0';
                r = tmptree_mkdirs(path);
                *slash = '/';
                if (r < 0)
                        return r;
        }
        return tmptree_write(path, text);
}

/* The whole of the file at path into *ret (NUL-terminated, free() it), its length in
 * *ret_len if not NULL. */
static inline int tmptree_read(const char *path, char **ret, size_t *ret_len) {
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t len = 0, size = 0, n;

        if (!f) {
                int e = -errno;
                TEST_FAIL("cannot open %s: %m", path);
                return e;
        }
        do {
                if (len + 4096 + 1 > size) {
                        char *t = realloc(text, size * 2 + 4096 + 1);
                        if (!t) {
                                free(text);
                                fclose(f);
                                TEST_FAIL("cannot read %s: out of memory", path);
                                return -ENOMEM;
                        }
                        text = t;
                        size = size * 2 + 4096 + 1;
                }
                n = fread(text + len, 1, 4096, f);
                len += n;
        } while (n > 0);
        fclose(f);
        text[len] = '\0';
        *ret = text;
        if (ret_len)
                *ret_len = len;
        return 0;
}

/* cp -r: the file or directory from (its files as they read, symbolic links followed)
 * to to, which must not exist yet; names starting with a dot are left out. */
static inline int tmptree_copy(const char *from, const char *to) {
        struct stat st;
        struct dirent *de;
        DIR *d;
        int r = 0;

        if (stat(from, &st) < 0) {
                int e = -errno;
                TEST_FAIL("cannot copy %s: %m", from);
                return e;
        }
        if (!S_ISDIR(st.st_mode)) {
                char *text = NULL;
                size_t len = 0;
                r = tmptree_read(from, &text, &len);
                if (r == 0)
                        r = tmptree_write_len(to, text, len);
                free(text);
                return r;
        }
        if (mkdir(to, 0755) < 0 || !(d = opendir(from))) {
                int e = -errno;
                TEST_FAIL("cannot copy %s to %s: %m", from, to);
                return e;
        }
        while (r == 0 && (de = readdir(d))) {
                char f[PATH_MAX], t[PATH_MAX];
                if (de->d_name[0] == '.')
                        continue;
                r = tmptree_join(f, sizeof(f), from, de->d_name);
                if (r == 0)
                        r = tmptree_join(t, sizeof(t), to, de->d_name);
                if (r == 0)
                        r = tmptree_copy(f, t);
        }
        closedir(d);
        return r;
}

static inline int tmptree_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* rm -rf: path and everything under it, symbolic links removed, not followed. Cleaning
 * up, so nothing fails: a path that is not there is none, and what cannot be removed
 * is said on stderr. */
static inline void tmptree_remove(const char *path) {
        struct stat st;

        if (!path || !*path || lstat(path, &st) < 0)
                return;
        if (nftw(path, tmptree_remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
                fprintf(stderr, "tmptree: cannot remove all of %s: %m\n", path);
}
