/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cleanup.h"
#include "kernel-balancing.h"
#include "log.h"
#include "parse.h"
#include "state-dir.h"

static int make_path(const char *proc_root, char **ret) {
        if (asprintf(ret, "%s/sys/kernel/numa_balancing", proc_root) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* A value as the sysctl and the state file hold it: a number and a newline. */
static int parse_value(char *text, size_t len, uint64_t *ret) {
        while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
                text[--len] = 0;
        return parse_u64(text, 0, UINT32_MAX, ret);
}

static int read_value(const char *path, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = parse_read_file_at(AT_FDCWD, path, 64, &text, &len);
        return r < 0 ? r : parse_value(text, len, ret);
}

/* The value a daemon saved (state-dir.h: a regular file, not a link, bounded). */
static int read_saved(const struct kernel_balancing *k, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = state_dir_read(k->state_path, 64, 0, &text, &len);
        return r < 0 ? r : parse_value(text, len, ret);
}

/* v as the sysctl and the state file hold it: its length at buf. */
static size_t format_value(uint64_t v, char buf[static 24]) {
        return (size_t) snprintf(buf, 24, "%" PRIu64 "\n", v);
}

static int write_value(const char *path, uint64_t v) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        char buf[24];
        size_t n = format_value(v, buf);

        if (fd < 0)
                return -errno;
        errno = 0;
        if (write(fd, buf, n) != (ssize_t) n)
                return errno ? -errno : -EIO;
        return 0;
}

/* --- the saved value ---------------------------------------------------------- */

/* Saves k->found to the state file, atomically (state_dir_write()): a daemon killed
 * at any instant leaves either the old file or the new one, never half of one. */
static int save(const struct kernel_balancing *k) {
        char buf[24];

        return state_dir_write_buf(k->state_path, buf, format_value(k->found, buf));
}

/* The value is the operator's again (restored, or changed by someone): nothing to
 * keep for a next start. */
static void forget_saved(const struct kernel_balancing *k) {
        if (unlink(k->state_path) < 0 && errno != ENOENT)
                log_warning_errno(-errno, "Failed to remove %s, ignoring: %m", k->state_path);
}

/* A value saved by a daemon that did not reach its exit: with the sysctl still at 0,
 * the saved value is the operator's and we hold the sysctl for them now. */
static void recover(struct kernel_balancing *k) {
        uint64_t saved;
        int r;

        r = read_saved(k, &saved);
        if (r == -ENOENT)
                return;
        if (r < 0) {
                log_warning_errno(r, "Failed to read the saved kernel.numa_balancing from %s, ignoring it: %m",
                                  k->state_path);
                forget_saved(k);
                return;
        }
        if (k->found != 0 || saved == 0) {
                if (k->found != saved)
                        log_info("%s says kernel.numa_balancing=%" PRIu64 ", but it was set to %" PRIu64
                                 " since: keeping %" PRIu64, k->state_path, saved, k->found, k->found);
                forget_saved(k);
                return;
        }
        k->found = saved;
        k->changed = true;
        log_notice("kernel.numa_balancing=0 was left by a numabalanced that did not exit cleanly; the value it "
                   "found, %" PRIu64 " (saved in %s), is restored at exit", saved, k->state_path);
}

/* Puts the operator's value back; the saved copy goes once it is back. */
static void restore(struct kernel_balancing *k) {
        int r = write_value(k->path, k->found);

        if (r < 0) {
                log_warning_errno(r, "Failed to restore kernel.numa_balancing=%" PRIu64 ", ignoring: %m "
                                  "(it stays saved in %s for the next start)", k->found, k->state_path);
                return;
        }
        log_notice("Restored kernel.numa_balancing=%" PRIu64, k->found);
        forget_saved(k);
}

/* --- the interface ------------------------------------------------------------ */

int kernel_balancing_read(const char *proc_root, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = make_path(proc_root, &path);
        if (r < 0)
                return r;
        return read_value(path, ret);
}

void kernel_balancing_watch(const char *proc_root, int64_t *value, bool *on) {
        uint64_t v = 0;
        bool now;

        *value = kernel_balancing_read(proc_root, &v) >= 0 ? (int64_t) v : -1;
        now = *value >= 0 && (v & 1);
        if (now != *on)
                log_info("kernel.numa_balancing is %s: memory whose policy has the balancing flag "
                         "(MPOL_F_NUMA_BALANCING) is %s", now ? "on" : "off",
                         now ? "left to the kernel" : "balanced by numabalanced within its policy");
        *on = now;
}

/* One daemon at a time holds the sysctl: a second one (started by hand beside the
 * service) must neither take the saved value for its own nor restore it at its exit.
 * The lock is on the state directory and goes with the process, however it dies.
 * Returns false when another process holds it; a directory that cannot be made or
 * opened is no lock (saving will fail the same way: nothing is changed then). */
static bool take_lock(struct kernel_balancing *k) {
        int fd = state_dir_lock(k->state_dir, true, 0);

        if (fd == -EWOULDBLOCK)
                return false;
        if (fd >= 0)
                k->lock_fd = fd;
        return true;
}

bool kernel_balancing_owns_state(struct kernel_balancing *k) {
        if (k->lock_fd < 0 && k->state_dir)
                (void) take_lock(k);
        return k->lock_fd >= 0;
}

int kernel_balancing_init(struct kernel_balancing *k, const char *proc_root, const char *state_dir) {
        int r;

        *k = (struct kernel_balancing) { .lock_fd = -1 };
        r = make_path(proc_root, &k->path);
        k->state_dir = state_dir ? strdup(state_dir) : state_dir_default(NULL);
        if (r < 0 || !k->state_dir ||
            asprintf(&k->state_path, "%s/%s", k->state_dir, KERNEL_BALANCING_STATE_FILE) < 0) {
                k->state_path = NULL;
                return log_error_errno(-ENOMEM, "Out of memory");
        }
        r = read_value(k->path, &k->found);
        if (r == -ENOENT) {
                log_info("%s does not exist: this kernel has no NUMA balancing of its own", k->path);
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "Failed to read %s, ignoring: %m", k->path);
                return 0;
        }
        if (!take_lock(k)) {
                log_warning("Another numabalanced holds kernel.numa_balancing (%s is locked): leaving it alone",
                            k->state_dir);
                return 0;
        }
        k->present = true;
        recover(k);
        return 0;
}

static void disable(struct kernel_balancing *k, bool dry_run) {
        int r;

        if (k->changed || k->found == 0)
                return;
        if (dry_run) {
                log_notice("kernel.numa_balancing=%" PRIu64 ": dry run, not setting it to 0", k->found);
                return;
        }
        /* Saved first: from the write of 0 on, a daemon that dies must leave the
         * value where the next start finds it. */
        r = save(k);
        if (r < 0) {
                log_warning_errno(r, "kernel.numa_balancing=%" PRIu64 ": not setting it to 0, because saving it to "
                                  "%s failed (%m): a daemon killed before its exit could not restore it. "
                                  "The kernel's own balancing can move pages back.", k->found, k->state_path);
                return;
        }
        r = write_value(k->path, 0);
        if (r < 0) {
                log_warning_errno(r, "kernel.numa_balancing=%" PRIu64 " and setting it to 0 failed, ignoring: %m. "
                                  "The kernel's own balancing can move pages back.", k->found);
                forget_saved(k);
                return;
        }
        k->changed = true;
        log_notice("Set kernel.numa_balancing=0 (was %" PRIu64 "); it is restored at exit", k->found);
}

/* A reload from disable to leave gives back what disable changed. */
static void leave(struct kernel_balancing *k) {
        if (k->changed) {
                restore(k);
                k->changed = false;
        }
        if (k->found != 0)
                log_warning("kernel.numa_balancing=%" PRIu64 ": the kernel's own NUMA balancing is on; it moves pages "
                            "toward the CPUs that fault on them and can undo numabalanced's placement "
                            "(set kernel_numa_balancing=disable, or sysctl kernel.numa_balancing=0)", k->found);
        else
                log_info("kernel.numa_balancing=0: the kernel's own NUMA balancing is off");
}

void kernel_balancing_apply(struct kernel_balancing *k, enum knb_action action, bool dry_run) {
        if (!k->present)
                return;
        if (action == KNB_DISABLE)
                disable(k, dry_run);
        else
                leave(k);
}

void kernel_balancing_done(struct kernel_balancing *k) {
        uint64_t now;

        if (k->changed) {
                k->changed = false;
                if (read_value(k->path, &now) == 0 && now != 0) {
                        log_notice("kernel.numa_balancing was changed to %" PRIu64 " while we ran, leaving it", now);
                        forget_saved(k);
                } else
                        restore(k);
        }
        if (k->lock_fd >= 0)
                close(k->lock_fd);
        k->lock_fd = -1;
        free(k->path);
        free(k->state_dir);
        free(k->state_path);
        k->path = k->state_dir = k->state_path = NULL;
}
