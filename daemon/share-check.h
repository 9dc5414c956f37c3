/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check right before a move of shared pages (docs/RULES.md, "Shared pages"): a page
 * of a group's object moves with MPOL_MF_MOVE_ALL, which moves it out from under every
 * process that maps it, so it may move only when every one of them is a member of the
 * group and allows the target.
 *
 * Per page, right before the move call: its page frame in the moving process
 * (/proc/PID/pagemap; the frame number needs CAP_SYS_ADMIN), the number of mappings of
 * that frame (/proc/kpagecount), and the members' mappings of the same object offset
 * that hold the same frame (their pagemaps). The page passes when the two counts are
 * equal: no mapping of it is a non-member's. Every member must still be the process the
 * group was built from (start time) and allow the target in its cpuset (Mems_allowed);
 * a member that left (gone) maps nothing and counts nothing. A transparent huge page
 * (kpageflags: compound) or a KSM page never passes: its other pages or its merged
 * twins may be mapped by anyone. Cost: a pagemap read per member mapping per run of
 * addresses, two 8-byte reads per page. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/* One member's mapping of the object: [start, end) maps the object's bytes from pgoff. */
struct share_peer {
        pid_t pid;
        uint64_t starttime;
        uint64_t start, end, pgoff;
};

struct share_check {
        const struct share_peer *peers;   /* every member mapping of the object, the mover's own too */
        size_t n_peers;
        uint64_t own_start, own_pgoff;    /* the mover's mapping holding the job's range */
};

/* Why pages did not pass. */
enum share_fail {
        SHARE_FAIL_OUTSIDE,      /* mapped by a process that is not a member */
        SHARE_FAIL_MEMBER,       /* a member's cpuset does not allow the target (or it changed) */
        SHARE_FAIL_HUGE,         /* a transparent huge page or a KSM page */
        SHARE_FAIL_FRAMES,       /* page frames not readable (no CAP_SYS_ADMIN, or /proc/kpagecount) */
        _SHARE_FAIL_MAX,
};

const char *share_check_fail_name(enum share_fail f);

/* Of the n page addresses of pid (ascending, within the mapping at c->own_start), sets
 * ok[i] for those that may move to target; counts the others by why in fails[] (may be
 * NULL). proc_root is /proc (the tests' may differ for the member checks; page frames
 * are always the real ones). Returns how many passed. */
size_t share_check_pages(const char *proc_root, const struct share_check *c, pid_t pid, int target,
                         void *const *addrs, size_t n, bool *ok, uint64_t fails[_SHARE_FAIL_MAX]);
