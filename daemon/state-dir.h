/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's state directory (/run/numabalanced: the unit's RuntimeDirectory=, kept
 * across restarts by RuntimeDirectoryPreserve=yes) and the three things done there,
 * each written once: the lock that makes one daemon its owner, the atomic write every
 * state file goes through, and the bounded read. Its users: kernel-balancing.c (the
 * operator's saved kernel.numa_balancing, and the lock), affinity-store.c (the
 * threads' original affinity), damon.c (its kdamonds) and main.c's
 * --restore-affinity. Nothing here logs: the callers know what the file is for. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* The state directory when systemd does not say ($RUNTIME_DIRECTORY). */
#define STATE_DIR_DEFAULT "/run/numabalanced"

/* The first directory of $RUNTIME_DIRECTORY (systemd lists one per RuntimeDirectory=
 * entry, separated by colons) when it is absolute, else STATE_DIR_DEFAULT. name, if not
 * NULL, is appended after a slash (a state file's path). malloc'd; NULL when out of
 * memory. */
char *state_dir_default(const char *name);

/* Locks dir (flock, exclusive): one daemon at a time owns what the directory holds.
 * The lock goes with the process however it dies. make: the directory is made first
 * (0755) if missing. wait_ms: how long to wait for another holder (0: not at all).
 * Returns the locked descriptor (closing it unlocks), -EWOULDBLOCK when another
 * process holds the lock, or another -errno (-ENOENT: no directory, not made). */
int state_dir_lock(const char *dir, bool make, unsigned wait_ms);

/* Writes a state file's content to fd: 0 or -errno. */
typedef int (*state_dir_write_fn)(int fd, void *userdata);

/* Writes path so that a daemon killed at any instant leaves the old file or the new
 * one, never half of one: its directory made if missing (0755), a temporary file
 * beside it (path.XXXXXX, mode 0600) filled by fn, synced, renamed over path, and the
 * directory synced (the rename itself on disk). On any failure (fn's too) the
 * temporary file is removed and path left as it was. Returns 0 or -errno. */
int state_dir_write(const char *path, state_dir_write_fn fn, void *userdata);
/* The same with buf[0..len) as the whole content. */
int state_dir_write_buf(const char *path, const void *buf, size_t len);
/* buf[0..len) to fd, all of it (short writes and EINTR taken care of): for an fn. */
int state_dir_write_all(int fd, const void *buf, size_t len);

enum {
        /* Also owned by this process's euid and writable by no one else: a file the
         * daemon acts on (it changes threads' affinity from it). */
        STATE_DIR_OURS = 1,
};

/* Opens path for reading if it may be read as a state file: not through a symbolic
 * link (-ELOOP), a regular file (-EPERM), of at most max bytes (-EFBIG), and with
 * STATE_DIR_OURS owned by us, writable by no one else (-EPERM). -ENOENT: there is
 * none. Returns the descriptor (O_CLOEXEC). */
int state_dir_open(const char *path, size_t max, unsigned flags);
/* path, checked as by state_dir_open(), read whole into a NUL-terminated buffer (*ret,
 * malloc'd; its length in *ret_len unless NULL). A file that grew past max bytes
 * since it was opened is refused too (-EFBIG): never more than max is held. */
int state_dir_read(const char *path, size_t max, unsigned flags, char **ret, size_t *ret_len);
