/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which cgroups numabalanced works on.
 *
 * A cgroup opts in with an xattr on its directory, trusted.numabalanced or
 * user.numabalanced, value "balance", "advise" or "off". The nearest setting on the
 * path from the root wins; on one directory the config file wins over trusted.*,
 * which wins over user.*. A user.* setting counts only when the directory is owned
 * by root, or by the owner of the delegated subtree it sits in (every ancestor up to
 * the first root-owned one has the same owner): nobody can opt in a cgroup that is
 * not theirs. An invalid value counts as unset and is reported. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "config.h"

enum cg_source { CG_FROM_NONE, CG_FROM_CONFIG, CG_FROM_TRUSTED, CG_FROM_USER };

struct cgroup_entry {
        char *path;                /* relative to the root, "/" for the root itself */
        enum cg_mode mode;         /* effective: advise or balance */
        enum cg_source source;     /* what decided it */
        char *decided_by;          /* the path whose setting applies (may be an ancestor) */
        uid_t covers_uid;          /* whose processes it covers: CGROUP_COVERS_ALL, or for a user.*
                                    * setting in a delegated subtree, the subtree's owner */
        uid_t subtree_uid;         /* the owner of the delegated subtree it lies in: of the topmost
                                    * directory on its path (below the root of the walk) not owned
                                    * by root; 0 when root owns every one (cgroup_subtree_uid) */
        uint64_t walk_ns;          /* CPU time the walk spent on this directory (and listing it) */
        int fast_share_pct;        /* its share of the fast tier (fast-share.h), FAST_SHARE_UNSET:
                                    * none; set on share_by, the nearest directory on its path
                                    * with a setting of its own and a share (trusted.numabalanced.
                                    * fast_share, or user.* on a root-owned directory) */
        char *share_by;            /* NULL: none */
};

/* The subtree_uid of a directory owned by dir_uid, depth levels below the root of the
 * walk, whose parent's is parent_subtree_uid: the first owner other than root met on
 * the way down, and never one further down. Only root makes a directory in a
 * root-owned one, so each subtree_uid is a delegation root made (or chowned) by root;
 * below it, its owner can make directories of its own and, in a user namespace that
 * maps sub-uids, give them to those: none of that makes another subtree_uid. */
static inline uid_t cgroup_subtree_uid(unsigned depth, uid_t dir_uid, uid_t parent_subtree_uid) {
        if (depth == 0)
                return 0;
        return parent_subtree_uid != 0 ? parent_subtree_uid : dir_uid;
}

/* A setting from the config, trusted.* or a root-owned directory's user.* covers every
 * process of the cgroup; a user's user.* covers only processes that user may ptrace
 * (docs/OPT-IN.md; the daemon checks, lib/creds.h). */
#define CGROUP_COVERS_ALL ((uid_t) -1)

/* What applies to one cgroup (cgroup_setting_of). */
struct cgroup_setting {
        enum cg_mode mode;         /* CG_MODE_UNSET when nothing applies */
        enum cg_source source;
        uid_t covers_uid;
};

/* The walk's CPU time on directories that are not opted in, charged to the top-level
 * cgroup they lie in (the root's own time to "/"): whoever made a tree of a million
 * cgroups carries the cost of walking it. */
struct cgroup_walk_cost {
        char *path;                /* a child of the root, or "/" */
        uint64_t walk_ns;
};

struct cgroup_invalid {
        char *path;
        char *xattr;               /* "user.numabalanced", ... */
        char *value;               /* printable, cut to 64 bytes */
        const char *why;           /* "unknown value", "not owned by the subtree's owner", ... */
};

struct cgroup_selection {
        struct cgroup_entry *entries;  /* opted in (advise or balance), in walk order */
        size_t n_entries;
        struct cgroup_invalid *invalid;
        size_t n_invalid;
        struct cgroup_walk_cost *others;   /* in walk order, "/" first when there */
        size_t n_others;
        bool truncated;                /* a walk bound below was hit: some cgroups were not looked at */
        bool *rule_matched;            /* per rule given: whether it decided a directory of the
                                        * walk (a rule on a path or name that is not there: no) */
        size_t n_rules;
};

/* Bounds of the walk, so that a hostile or runaway tree cannot make a tick unbounded:
 * directories deeper than CGROUP_WALK_MAX_DEPTH below the root are not looked at, nor
 * more than CGROUP_WALK_MAX_CGROUPS in all (and truncated is set). The count is shared
 * out fairly, depth first: of a directory's k subdirectories each may use an equal
 * part of what the directory has left when its turn comes (name order), and what one
 * leaves unused goes to those after it; so a subtree of 100,000 cgroups gets its share,
 * not the whole count, and the rest of the tree is still walked. The walk stays on the
 * root's file system and never follows symlinks. */
#define CGROUP_WALK_MAX_DEPTH 64
#define CGROUP_WALK_MAX_CGROUPS 65536
/* Longest valid xattr value considered; a longer one is invalid ("too long"). */
#define CGROUP_XATTR_VALUE_MAX 64

/* The config rule of the directory at path itself (not its parents'): the rule on its
 * path, else of the [select] units rules on its name the one read last (config.h).
 * Returns its index in rules, or -1: none. */
ssize_t cgroup_config_rule(const struct cgroup_rule *rules, size_t n_rules, const char *path);
/* The [select] fast_shares rule of the directory at path itself, or -1: none. Share
 * rules are never cgroup_config_rule()'s. */
ssize_t cgroup_config_share(const struct cgroup_rule *rules, size_t n_rules, const char *path);

/* The pure rule for one directory: its own setting from config/trusted/user values
 * (NULL when absent), and whether its user.* may count. */
enum cg_mode cgroup_dir_setting(enum cg_mode from_config, const char *trusted, size_t trusted_len,
                                const char *user, size_t user_len, bool user_counts,
                                enum cg_source *ret_source);

/* Walks the cgroup v2 tree under root (e.g. /sys/fs/cgroup). Returns 0, or -errno if
 * the root cannot be opened, or -EMFILE, -ENFILE or -ENOMEM when descriptors or memory
 * ran out anywhere in the walk (a partial selection would look as if the cgroups not
 * reached had gone); unreadable subdirectories, and ones removed during the walk, are
 * skipped. The walk's CPU time (CLOCK_THREAD_CPUTIME_ID, so the calling thread's: the
 * walker's when the walker walks) is in the entries and others: read when the
 * directory charged changes, so a subtree that is not opted in costs two clock reads,
 * not two per directory. */
int cgroup_select(const char *root, const struct cgroup_rule *rules, size_t n_rules,
                  struct cgroup_selection *ret);
/* The same with max_cgroups instead of CGROUP_WALK_MAX_CGROUPS (for the tests). */
int cgroup_select_max(const char *root, const struct cgroup_rule *rules, size_t n_rules, size_t max_cgroups,
                      struct cgroup_selection *ret);
void cgroup_selection_done(struct cgroup_selection *s);

/* The setting of the one cgroup at path (as /proc/PID/cgroup names it), computed by the
 * walk's rule from the root down to it, without looking at the rest of the tree: the
 * re-check right before a move. It costs per level an openat, an fstat and two
 * fgetxattr. Returns 0, -ENOENT when a directory on the path is gone (or is not one the
 * walk would enter), -EINVAL for a path that is not absolute or has empty, "." or ".."
 * components, -ENOMEM. Beyond CGROUP_WALK_MAX_DEPTH nothing applies, as in the walk. */
int cgroup_setting_of(const char *root, const struct cgroup_rule *rules, size_t n_rules, const char *path,
                      struct cgroup_setting *ret);

/* <root><path>/memory.current in bytes: everything charged to the cgroup and its
 * descendants. -ENOENT where the memory controller is not enabled for it. */
int cgroup_read_memory_current(const char *root, const char *path, uint64_t *ret);

/* usage_usec of <root><path>/cpu.stat: the CPU time of everything in the cgroup and
 * its descendants, there with or without the cpu controller. */
int cgroup_read_cpu_usage(const char *root, const char *path, uint64_t *ret_usec);

/* Process ids in <root><path>/cgroup.procs, sorted and without duplicates; lines that
 * are not a pid are skipped. *ret is NULL when the cgroup has no process. */
int cgroup_read_procs(const char *root, const char *path, pid_t **ret, size_t *ret_n);
