/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The state directory: its lock, the atomic write, the bounded read (state-dir.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cleanup.h"
#include "parse.h"
#include "state-dir.h"

/* How often a lock held by another process is tried again while waiting. */
#define LOCK_RETRY_MS 100

char *state_dir_default(const char *name) {
        const char *env = getenv("RUNTIME_DIRECTORY");
        char *path;

        if (!env || env[0] != '/')
                env = STATE_DIR_DEFAULT;
        if (asprintf(&path, "%.*s%s%s", (int) strcspn(env, ":"), env, name ? "/" : "", name ? name : "") < 0)
                return NULL;
        return path;
}

int state_dir_lock(const char *dir, bool make, unsigned wait_ms) {
        int fd;

        if (make && mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (unsigned waited = 0;; waited += LOCK_RETRY_MS) {
                int r;

                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return fd;
                r = -errno;
                if (r != -EWOULDBLOCK || waited >= wait_ms) {
                        close(fd);
                        return r;
                }
                nanosleep(&(struct timespec) { .tv_nsec = LOCK_RETRY_MS * 1000000L }, NULL);
        }
}

/* --- the atomic write ------------------------------------------------------------ */

int state_dir_write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

/* The directory path lies in, made if missing (not its parents: /run is systemd's). */
static int make_dir_of(const char *path, char **ret_dir) {
        char *dir = strdup(path), *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash)
                strcpy(dir, ".");
        else if (slash == dir)
                slash[1] = 0;
        else
                *slash = 0;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                int r = -errno;
                free(dir);
                return r;
        }
        *ret_dir = dir;
        return 0;
}

/* The rename on disk too. Best effort: the file is in place whatever this says, and
 * /run is a tmpfs, where there is nothing to sync. */
static void sync_dir(const char *dir) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd >= 0)
                (void) fsync(fd);
}

int state_dir_write(const char *path, state_dir_write_fn fn, void *userdata) {
        _cleanup_free_ char *dir = NULL, *tmp = NULL;
        int fd, r;

        r = make_dir_of(path, &dir);
        if (r < 0)
                return r;
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
                tmp = NULL;
                return -ENOMEM;
        }
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = fn(fd, userdata);
        if (r >= 0 && (fchmod(fd, 0600) < 0 || fsync(fd) < 0))
                r = -errno;
        if (close(fd) < 0 && r >= 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        sync_dir(dir);
        return 0;
}

struct text {
        const void *buf;
        size_t len;
};

static int write_text(int fd, void *userdata) {
        const struct text *t = userdata;
        return state_dir_write_all(fd, t->buf, t->len);
}

int state_dir_write_buf(const char *path, const void *buf, size_t len) {
        return state_dir_write(path, write_text, &(struct text) { .buf = buf, .len = len });
}

/* --- the bounded read ------------------------------------------------------------- */

int state_dir_open(const char *path, size_t max, unsigned flags) {
        struct stat st;
        int fd;

        /* O_NONBLOCK: a FIFO put there must not hold the open (it is refused below). */
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        if (!S_ISREG(st.st_mode) || ((flags & STATE_DIR_OURS) && (st.st_uid != geteuid() || (st.st_mode & 022)))) {
                close(fd);
                return -EPERM;
        }
        if ((uint64_t) st.st_size > max) {
                close(fd);
                return -EFBIG;
        }
        return fd;
}

int state_dir_read(const char *path, size_t max, unsigned flags, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = state_dir_open(path, max, flags);

        if (fd < 0)
                return fd;
        /* parse_read_fd_all() refuses a file of max_size bytes or more. */
        return parse_read_fd_all(fd, max + 1, ret, ret_len);
}
