/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cleanup.h"
#include "log.h"
#include "policy.h"
#include "proc.h"
#include "thread-policy.h"

/* A read this small makes the kernel generate the first record only (unless that record
 * is shorter); the address and the policy take at most 16 + 1 + 63 bytes and a
 * terminator, so a second read is rare and served from the record already made. */
#define HEAD_READ 64
#define HEAD_MAX 128

static bool is_default(const struct mempolicy *p) {
        return p->mode == MODE_DEFAULT;
}

static bool maps_show_default(const struct numa_maps *m) {
        for (size_t i = 0; m && i < m->n_vmas; i++)
                if (is_default(&m->vmas[i].policy))
                        return true;
        return false;
}

/* Adds p to the distinct policies (room for one per thread), if it is not there yet. */
static void add_distinct(struct thread_policies *tp, const struct mempolicy *p) {
        for (size_t i = 0; i < tp->n_policies; i++)
                if (numa_maps_mempolicy_equal(&tp->policies[i], p))
                        return;
        tp->policies[tp->n_policies++] = *p;
}

/* Whether the first VMA is shown to have no VMA policy: "default" is never a VMA's
 * own, and a VMA's own policy is the same in every thread. */
static bool first_vma_has_no_policy(const struct policy_head *heads, size_t n) {
        if (is_default(&heads[0].policy))
                return true;
        for (size_t i = 1; i < n; i++)
                if (!numa_maps_mempolicy_equal(&heads[i].policy, &heads[0].policy))
                        return true;
        return false;
}

int thread_policy_resolve(const struct policy_head *heads, size_t n, size_t n_failed,
                          const struct numa_maps *main_maps, struct thread_policies *ret) {
        struct thread_policies tp = { .main = { .mode = MODE_DEFAULT }, .n_threads = n };

        if (n == 0) {
                tp.unknown = n_failed > 0;
                *ret = tp;
                return 0;
        }
        tp.policies = calloc(n, sizeof(*tp.policies));
        if (!tp.policies)
                return -ENOMEM;
        tp.unknown = n_failed > 0;
        for (size_t i = 1; i < n; i++)
                if (heads[i].start != heads[0].start)
                        tp.unknown = true; /* the first VMA changed between the reads */

        if (!tp.unknown && !first_vma_has_no_policy(heads, n) && maps_show_default(main_maps)) {
                /* The main thread's policy is default, so the first VMA's non-default
                 * policy is its own, shown by every thread: theirs are not known. */
                tp.unknown = n > 1;
                tp.policies[tp.n_policies++] = tp.main;
        } else {
                tp.main = heads[0].policy;
                for (size_t i = 0; i < n; i++)
                        add_distinct(&tp, &heads[i].policy);
        }
        *ret = tp;
        return 0;
}

int thread_policy_single(const struct numa_maps *main_maps, struct thread_policies *ret) {
        struct policy_head head;

        if (!main_maps || main_maps->n_vmas == 0)
                return thread_policy_resolve(NULL, 0, 0, NULL, ret);
        head = (struct policy_head) { .start = main_maps->vmas[0].start, .policy = main_maps->vmas[0].policy };
        return thread_policy_resolve(&head, 1, 0, main_maps, ret);
}

bool thread_policy_govern(const struct thread_policies *tp, const struct mempolicy *p) {
        return tp && numa_maps_mempolicy_equal(&tp->main, p);
}

void thread_policy_done(struct thread_policies *tp) {
        if (!tp)
                return;
        free(tp->policies);
        tp->policies = NULL;
        tp->n_policies = 0;
}

/* The first record of /proc/PID/task/TID/numa_maps. Returns 0, -ESRCH when the thread
 * is gone (or has no memory left: an exiting thread), -EINVAL when it does not parse,
 * or another -errno. */
static int read_head(const char *proc_root, pid_t pid, pid_t tid, struct policy_head *ret) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char buf[HEAD_MAX];
        size_t len = 0;
        int r = -EAGAIN;

        if (asprintf(&path, "%s/%d/task/%d/numa_maps", proc_root, (int) pid, (int) tid) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        while (r == -EAGAIN && len < sizeof(buf) - 1) {
                size_t room = sizeof(buf) - 1 - len;
                ssize_t k = read(fd, buf + len, room < HEAD_READ ? room : HEAD_READ);

                if (k < 0)
                        return errno == ENOENT ? -ESRCH : -errno;
                if (k == 0 && len == 0)
                        return -ESRCH;
                if (k == 0) {
                        /* The kernel ends every record with one; a copy may not. */
                        buf[len] = '\n';
                        return numa_maps_parse_head(buf, len + 1, &ret->start, &ret->policy) == 0 ? 0 : -EINVAL;
                }
                len += (size_t) k;
                r = numa_maps_parse_head(buf, len, &ret->start, &ret->policy);
        }
        return r == -EAGAIN ? -EINVAL : r;
}

/* Reads the heads of tids (the main thread first, unless main_maps stands for it) into
 * heads; *ret_n read, *ret_failed could not be. */
static int read_heads(const char *proc_root, pid_t pid, const pid_t *tids, size_t n_tids,
                      const struct numa_maps *main_maps, struct policy_head *heads, size_t *ret_n,
                      size_t *ret_failed) {
        size_t n = 0, failed = 0;
        int r;

        if (main_maps)
                heads[n++] = (struct policy_head) { main_maps->vmas[0].start, main_maps->vmas[0].policy };
        else {
                r = read_head(proc_root, pid, pid, &heads[n]);
                if (r < 0)
                        return r;
                n++;
        }
        for (size_t i = 0; i < n_tids; i++) {
                if (tids[i] == pid)
                        continue;
                r = read_head(proc_root, pid, tids[i], &heads[n]);
                if (r == -ESRCH)
                        continue; /* exited since the listing */
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        log_debug_errno(r, "pid=%d tid=%d: cannot read the thread's policy: %m", (int) pid,
                                        (int) tids[i]);
                        failed++;
                        continue;
                }
                n++;
        }
        *ret_n = n;
        *ret_failed = failed;
        return 0;
}

int thread_policy_read(const char *proc_root, pid_t pid, const struct numa_maps *main_maps,
                       struct thread_policies *ret) {
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_free_ struct policy_head *heads = NULL;
        size_t n_tids = 0, n = 0, failed = 0;
        int r;

        if (!proc_root || pid <= 0 || !ret)
                return -EINVAL;
        if (main_maps && main_maps->n_vmas == 0)
                return thread_policy_resolve(NULL, 0, 0, NULL, ret); /* no memory to decide on */
        r = proc_list_tasks(proc_root, pid, &tids, &n_tids);
        if (r < 0)
                return r;
        heads = calloc(n_tids + 1, sizeof(*heads));
        if (!heads)
                return -ENOMEM;
        r = read_heads(proc_root, pid, tids, n_tids, main_maps, heads, &n, &failed);
        if (r < 0)
                return r;
        return thread_policy_resolve(heads, n, failed, main_maps, ret);
}

int thread_policy_allow(const char *proc_root, pid_t pid, const nb_nodemask *mems_allowed,
                        const nb_nodemask *with_memory, unsigned rules, unsigned node) {
        _cleanup_(thread_policy_done) struct thread_policies tp = {};
        nb_nodemask allowed;
        int r;

        r = thread_policy_read(proc_root, pid, NULL, &tp);
        if (r == -ESRCH || r == -ENOMEM)
                return r;
        if (r < 0)
                return 0; /* the main thread's policy does not read: not established */
        if (tp.unknown)
                return 0;
        if (policy_allowed_nodes_threads(tp.policies, tp.n_policies, mems_allowed, with_memory, rules,
                                         &allowed) != POLICY_MOVABLE)
                return 0;
        return nodemask_test(&allowed, node);
}
