/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs a fuzz target over stored inputs without libFuzzer, so that the seed corpus
 * (and every crash input added to it) is a regression test on any compiler.
 * Usage: fuzz-X-replay PATH...   (files, or directories of files)
 * Each input is copied into a buffer of exactly its size: no NUL after it, as
 * libFuzzer gives it. Fails if no input was found: a test that ran nothing must not
 * pass. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include "cleanup.h"
#include "fuzz.h"
#include "parse.h"

static int run_file(const char *path) {
        _cleanup_free_ char *buf = NULL;
        char *copy;
        size_t len = 0;
        int r;

        r = parse_read_file_at(AT_FDCWD, path, 64 << 20, &buf, &len);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return r;
        }
        copy = malloc(len ? len : 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, buf, len);
        LLVMFuzzerTestOneInput((const uint8_t *) copy, len);
        free(copy);
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Files of a directory, in name order so that a failure is reproducible. */
static int run_dir(const char *dir, unsigned *count) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        int r = 0;

        if (!d) {
                fprintf(stderr, "%s: %s\n", dir, strerror(errno));
                return -errno;
        }
        while ((de = readdir(d))) {
                char **nn;
                if (de->d_name[0] == '.')
                        continue;
                nn = realloc(names, (n + 1) * sizeof(*names));
                if (!nn)
                        return -ENOMEM;
                names = nn;
                names[n] = strdup(de->d_name);
                if (!names[n])
                        return -ENOMEM;
                n++;
        }
        if (n > 1)
                qsort(names, n, sizeof(*names), cmp_str);
        for (size_t i = 0; i < n; i++) {
                char path[4096];
                struct stat st;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                if (r == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                        r = run_file(path);
                        (*count)++;
                }
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char **argv) {
        unsigned count = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
                return 2;
        }
        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                if (S_ISDIR(st.st_mode))
                        r = run_dir(argv[i], &count);
                else {
                        r = run_file(argv[i]);
                        count++;
                }
                if (r < 0)
                        return 1;
        }
        if (count == 0) {
                fprintf(stderr, "no inputs found\n");
                return 1;
        }
        printf("%u input(s) replayed\n", count);
        return 0;
}
