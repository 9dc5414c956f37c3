/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/<pid>/numa_maps: one buffer to a list of VMAs.
 *
 * Line format (fs/proc/task_mmu.c show_numa_map):
 *   <start hex> <policy>[ file=<escaped path>| heap| stack][ huge][ anon=N dirty=N
 *   mapped=N mapmax=N swapcache=N active=N writeback=N N<nid>=N... kernelpagesize_kB=N]
 * The policy comes from mpol_to_str() into a 64-byte buffer: at most 63 characters,
 * so a long node list can be cut; two mode names contain a space ("prefer (many)",
 * "weighted interleave"). Paths escape \n \t = and space as \012 \011 \075 \040.
 * A line that does not parse is counted with its number and skipped; the rest is used. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cleanup.h"
#include <sys/types.h>
#include "nodemask.h"
#include "proc-lines.h"

enum mpol_mode {
        MODE_DEFAULT,
        MODE_LOCAL,
        MODE_PREFERRED,           /* "prefer:N" */
        MODE_PREFERRED_MANY,      /* "prefer (many):LIST" */
        MODE_BIND,
        MODE_INTERLEAVE,
        MODE_WEIGHTED_INTERLEAVE,
        _MODE_MAX,
};

enum {
        MPOL_FLAG_STATIC = 1 << 0,    /* "=static" */
        MPOL_FLAG_RELATIVE = 1 << 1,  /* "=relative" */
        MPOL_FLAG_BALANCING = 1 << 2, /* "balancing" (MPOL_F_NUMA_BALANCING) */
};

struct mempolicy {
        enum mpol_mode mode;
        unsigned flags;
        nb_nodemask nodes;      /* empty for default/local */
        bool nodes_truncated;   /* the 63-character cut may have dropped nodes */
};

enum vma_kind { VMA_ANON, VMA_FILE, VMA_HEAP, VMA_STACK, _VMA_KIND_MAX };

/* Pages of one VMA on one node, in units of the VMA's page_size_kb. */
struct node_pages {
        uint32_t node;
        uint64_t pages;
};

struct vma {
        uint64_t start;
        struct mempolicy policy;
        enum vma_kind kind;
        bool hugetlb;              /* " huge": counts are in huge pages */
        char *path;                /* file= value as the kernel escaped it (safe to print), or NULL;
                                    * NULL from numa_maps_read(), which does not copy names */
        uint64_t page_size_kb;     /* kernelpagesize_kB; the base page size if absent (no page present) */
        uint64_t anon, dirty, mapped, mapmax, swapcache, active, writeback;
        uint64_t pages;            /* sum over nodes */
        size_t np_off, np_count;   /* this VMA's entries in numa_maps.np */
        unsigned line;             /* 1-based line number in the file */
};

#define NUMA_MAPS_BAD_LINES_KEPT 16

struct numa_maps {
        struct vma *vmas;
        size_t n_vmas;
        struct node_pages *np;     /* all VMAs' per-node counts, VMA after VMA */
        size_t n_np;
        unsigned n_bad_lines;                           /* lines skipped */
        unsigned bad_lines[NUMA_MAPS_BAD_LINES_KEPT];   /* the first ones' numbers */
};

/* Parses len bytes of buf (need not be NUL-terminated), file names copied. Returns 0
 * (bad lines, a line longer than PROC_LINE_MAX among them, are counted in the result,
 * not an error), or -ENOMEM. */
int numa_maps_parse(const char *buf, size_t len, struct numa_maps **ret);
/* Reads <proc_root>/<pid>/numa_maps a chunk at a time (proc-lines.h) with the same
 * line parser; file names are not copied (the daemon uses none: v->path stays NULL,
 * v->kind says VMA_FILE). Its memory is the result's and one buffer, never the
 * file's. -ESRCH: gone; -E2BIG: more than PROC_VMAS_MAX mappings. */
int numa_maps_read(const char *proc_root, pid_t pid, struct numa_maps **ret);
/* The same on a file, with the chunk size and caps as parameters (the tests'). */
int numa_maps_read_path(const char *path, const struct proc_lines_opts *o, bool keep_paths,
                        struct numa_maps **ret);
void numa_maps_free(struct numa_maps *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct numa_maps *, numa_maps_free);

/* The start address and the policy of the first record of buf, which may be cut
 * anywhere after the policy (a small read of numa_maps: thread-policy.h). Returns 0,
 * -EAGAIN when buf ends before the policy does (read more), or -EINVAL. */
int numa_maps_parse_head(const char *buf, size_t len, uint64_t *ret_start, struct mempolicy *ret_policy);

/* Parses a policy token ("bind=static:0-3", "prefer (many):1,3", "default"). */
int numa_maps_mempolicy_parse(const char *s, size_t len, struct mempolicy *ret);
bool numa_maps_mempolicy_equal(const struct mempolicy *a, const struct mempolicy *b);
/* "bind", "prefer (many)", ... */
const char *numa_maps_mpol_mode_name(enum mpol_mode m);
const char *numa_maps_vma_kind_name(enum vma_kind k);

static inline const struct node_pages *vma_node_pages(const struct numa_maps *m, const struct vma *v) {
        return m->np + v->np_off;
}
/* Pages of the VMA on node n. */
uint64_t numa_maps_vma_pages_on(const struct numa_maps *m, const struct vma *v, unsigned node);
