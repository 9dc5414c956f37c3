/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "kernel-balancing.h"
#include "log.h"
#include "parse.h"

static int make_path(const char *proc_root, char **ret) {
        if (asprintf(ret, "%s/sys/kernel/numa_balancing", proc_root) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int read_value(const char *path, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_file_at(AT_FDCWD, path, 64, &text, &len);
        if (r < 0)
                return r;
        while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
                text[--len] = 0;
        return parse_u64(text, 0, UINT32_MAX, ret);
}

static int write_value(const char *path, uint64_t v) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        char buf[24];
        int n;

        if (fd < 0)
                return -errno;
        n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
        if (write(fd, buf, (size_t) n) != n)
                return errno ? -errno : -EIO;
        return 0;
}

int kernel_balancing_read(const char *proc_root, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = make_path(proc_root, &path);
        if (r < 0)
                return r;
        return read_value(path, ret);
}

int kernel_balancing_init(struct kernel_balancing *k, const char *proc_root) {
        int r;

        *k = (struct kernel_balancing) {};
        r = make_path(proc_root, &k->path);
        if (r < 0)
                return log_error_errno(r, "Out of memory");
        r = read_value(k->path, &k->found);
        if (r == -ENOENT) {
                log_info("%s does not exist: this kernel has no NUMA balancing of its own", k->path);
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "Failed to read %s, ignoring: %m", k->path);
                return 0;
        }
        k->present = true;
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
        r = write_value(k->path, 0);
        if (r < 0) {
                log_warning_errno(r, "kernel.numa_balancing=%" PRIu64 " and setting it to 0 failed, ignoring: %m. "
                                  "The kernel's own balancing can move pages back.", k->found);
                return;
        }
        k->changed = true;
        log_notice("Set kernel.numa_balancing=0 (was %" PRIu64 "); it is restored at exit", k->found);
}

/* A reload from disable to leave gives back what disable changed. */
static void leave(struct kernel_balancing *k) {
        int r;

        if (k->changed) {
                r = write_value(k->path, k->found);
                if (r < 0)
                        log_warning_errno(r, "Failed to restore kernel.numa_balancing=%" PRIu64 ", ignoring: %m",
                                          k->found);
                else
                        log_notice("Restored kernel.numa_balancing=%" PRIu64, k->found);
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
        int r;

        if (k->changed) {
                k->changed = false;
                if (read_value(k->path, &now) == 0 && now != 0)
                        log_notice("kernel.numa_balancing was changed to %" PRIu64 " while we ran, leaving it", now);
                else {
                        r = write_value(k->path, k->found);
                        if (r < 0)
                                log_warning_errno(r, "Failed to restore kernel.numa_balancing=%" PRIu64 ": %m",
                                                  k->found);
                        else
                                log_notice("Restored kernel.numa_balancing=%" PRIu64, k->found);
                }
        }
        free(k->path);
        k->path = NULL;
}
