/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
#include <stdbool.h>
#include <sys/types.h>

struct show_args {
        pid_t pid;
        bool json, pretty, all;
        const char *proc_root, *sys_root;
};

/* Prints the placement of a.pid; on failure prints one line naming the pid and the
 * reason on stderr and returns a negative errno. */
int ctl_show(const struct show_args *a);
