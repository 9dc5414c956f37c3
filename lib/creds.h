/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whose process it is: the rule the kernel applies when a user without capabilities
 * asks to ptrace it (__ptrace_may_access, kernel/ptrace.c). A user U may when the
 * process's real, effective and saved uids are all U, its real, effective and saved
 * gids are U's gid, and it is dumpable. numabalanced applies the same rule where it
 * acts for a user (a user.* opt-in covers U's processes only, docs/OPT-IN.md) and where
 * it answers one (the control socket shows U only U's processes).
 *
 * Dumpable is not in /proc/PID/status: the kernel shows it as the owner of the files
 * under /proc/PID (task_dump_owner(), fs/proc/base.c): the process's euid while it is
 * dumpable, root (of its user namespace) once it is not (after a setuid or setgid exec,
 * a credential change, or prctl(PR_SET_DUMPABLE, 0)). The /proc/PID directory itself is
 * owned by the euid either way (seen on 6.18: a non-dumpable process of uid 65534 has
 * /proc/PID owned by 65534 and /proc/PID/stat by 0), so the owner of /proc/PID/stat is
 * what tells. In a user namespace that U owns, its root maps to U: U may ptrace there
 * too, and the rule agrees. */
#pragma once
#include <stdbool.h>
#include <sys/types.h>
#include "proc.h"

/* No user: only root may (a process whose ids are mixed, or not dumpable). */
#define CREDS_NOBODY ((uid_t) -1)

struct proc_creds {
        struct proc_stat stat;      /* starttime: which process this was; its exec layout */
        struct proc_status status;  /* uids, gids, Mems_allowed_list */
        uid_t stat_owner;           /* owner of /proc/PID/stat: its euid, or root when not dumpable */
};

/* Reads stat (and its owner) and status of pid through one open directory, so that
 * all three describe one process. Returns 0, -ESRCH when it is gone, -errno. */
int creds_read(const char *proc_root, pid_t pid, struct proc_creds *ret);

/* The one user (not root) that may ptrace the process, or CREDS_NOBODY. Gids must
 * agree with each other (the ptrace rule compares them with the caller's gid). */
uid_t creds_ptrace_user(const struct proc_creds *c);

/* Whether uid may: root always; another uid when creds_ptrace_user() is that uid. */
static inline bool creds_belong_to(const struct proc_creds *c, uid_t uid) {
        return uid == 0 || (uid != CREDS_NOBODY && creds_ptrace_user(c) == uid);
}
