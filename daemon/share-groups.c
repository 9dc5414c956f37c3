/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Groups of processes that share memory (share-groups.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cg-mode.h"
#include "cg-records.h"
#include "cleanup.h"
#include "locality.h"
#include "share-groups.h"

/* VMA i maps an object others may map: worth a note, even before any other process
 * maps a page of it (an idle member, as PostgreSQL's postmaster, is not read again
 * while it stays idle); with others_too, only if numa_maps shows pages mapped by others
 * (what a plan holds back as shared). An anonymous private VMA is one only while
 * numa_maps shows anonymous pages of it mapped by others: copy-on-write since a
 * fork(), at the same address in parent and child (its object is that address). Huge
 * pages (hugetlb) move whole, and never as a group's. */
static const struct vma_range *shared_range(const struct numa_maps *maps, size_t i, const struct vma_range *ranges,
                                            size_t n_ranges, bool others_too) {
        const struct vma *v = &maps->vmas[i];
        const struct vma_range *rg;

        if ((others_too && v->mapmax <= 1) || v->hugetlb || v->pages == 0)
                return NULL;
        rg = maps_find(ranges, n_ranges, v->start);
        if (!rg)
                return NULL;
        if (rg->anon)
                return v->anon > 0 && v->mapmax > 1 ? rg : NULL;
        return rg->shared ? rg : NULL;
}

/* The object a shared range names: (device, inode), or, copy-on-write, (0, its
 * address) with cow set; its offset at start. */
static void object_of(const struct vma_range *rg, bool *cow, uint64_t *dev, uint64_t *ino, uint64_t *pgoff) {
        *cow = rg->anon;
        *dev = rg->anon ? 0 : rg->dev;
        *ino = rg->anon ? rg->start : rg->ino;
        *pgoff = rg->anon ? rg->start : rg->pgoff;
}

static void note_one(const struct topology *t, const struct numa_maps *maps, size_t i, const struct vma_range *rg,
                     const struct plan_input *in, const struct plan_params *pp, struct share_note *ret) {
        const struct vma *v = &maps->vmas[i];
        const struct node_pages *np = vma_node_pages(maps, v);

        ret->target_seen = -1;
        object_of(rg, &ret->cow, &ret->dev, &ret->ino, &ret->pgoff);
        ret->start = rg->start;
        ret->end = rg->end;
        for (size_t k = 0; k < v->np_count; k++) {
                int idx = topology_node_index(t, np[k].node);

                if (idx >= 0)
                        ret->node_bytes[idx] += locality_vma_bytes(v, np[k].pages);
        }
        if (!plan_share_allowed(t, in, pp, i, &ret->allowed))
                nodemask_zero(&ret->allowed);
}

void share_groups_note(const struct topology *t, struct proc_rec *p, const struct numa_maps *maps,
                const struct vma_range *ranges, size_t n_ranges, const struct plan_input *in,
                const struct plan_params *pp) {
        size_t n = 0, nn = t->n_nodes, k = 0;
        struct proc_shares *sh;
        uint64_t *tail;

        free(p->shares);
        p->shares = NULL;
        for (size_t i = 0; i < maps->n_vmas && n < SHARE_NOTES_MAX; i++)
                n += shared_range(maps, i, ranges, n_ranges, false) != NULL;
        if (n == 0)
                return;
        sh = calloc(1, sizeof(*sh) + n * sizeof(sh->notes[0]) + (nn + n * nn) * sizeof(uint64_t));
        if (!sh)
                return;
        tail = (uint64_t *) (void *) ((char *) sh + sizeof(*sh) + n * sizeof(sh->notes[0]));
        sh->cpu_ns = tail;
        memcpy(sh->cpu_ns, in->cpu_ns, nn * sizeof(uint64_t));
        tail += nn;
        for (size_t i = 0; i < maps->n_vmas && k < n; i++) {
                const struct vma_range *rg = shared_range(maps, i, ranges, n_ranges, false);

                if (!rg)
                        continue;
                sh->notes[k].node_bytes = tail;
                tail += nn;
                note_one(t, maps, i, rg, in, pp, &sh->notes[k++]);
        }
        sh->n = k;
        sh->starttime = p->starttime;
        p->shares = sh;
}

/* --- building the groups ---------------------------------------------------------- */

struct entry {
        uid_t owner;
        bool cow;
        uint64_t dev, ino;
        size_t rec;                /* index in the records */
        struct proc_rec *p;
        struct share_note *note;
};

static int cmp_entry(const void *a, const void *b) {
        const struct entry *x = a, *y = b;

        if (x->owner != y->owner)
                return x->owner < y->owner ? -1 : 1;
        if (x->cow != y->cow)
                return x->cow < y->cow ? -1 : 1;
        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        if (x->ino != y->ino)
                return x->ino < y->ino ? -1 : 1;
        if (x->p->pid != y->p->pid)
                return x->p->pid < y->p->pid ? -1 : 1;
        return (x->note->start > y->note->start) - (x->note->start < y->note->start);
}

static bool same_object(const struct entry *x, const struct entry *y) {
        return x->owner == y->owner && x->cow == y->cow && x->dev == y->dev && x->ino == y->ino;
}

/* Every note of a watched process noted in its present life. */
static struct entry *collect(struct proc_records *records, size_t *ret_n) {
        struct entry *e;
        size_t n = 0;

        for (size_t r = 0; r < records->n; r++) {
                const struct proc_rec *p = records->v[r];

                if (p->shares && p->cg && cg_mode_watched(p->cg->mode) && p->shares->starttime == p->starttime)
                        n += p->shares->n;
        }
        e = calloc(n ? n : 1, sizeof(*e));
        if (!e)
                return NULL;
        n = 0;
        for (size_t r = 0; r < records->n; r++) {
                struct proc_rec *p = records->v[r];

                if (!p->shares || !p->cg || !cg_mode_watched(p->cg->mode) || p->shares->starttime != p->starttime)
                        continue;
                for (size_t k = 0; k < p->shares->n; k++)
                        e[n++] = (struct entry) { p->cg->turn_uid, p->shares->notes[k].cow, p->shares->notes[k].dev,
                                                  p->shares->notes[k].ino, r, p, &p->shares->notes[k] };
        }
        qsort(e, n, sizeof(*e), cmp_entry);
        *ret_n = n;
        return e;
}

/* The end of the run of entries from i that name one object; *ret_pids: how many
 * processes map it. */
static size_t run_end(const struct entry *e, size_t n, size_t i, size_t *ret_pids) {
        size_t j = i + 1, pids = 1;

        for (; j < n && same_object(&e[i], &e[j]); j++)
                pids += e[j].p->pid != e[j - 1].p->pid;
        *ret_pids = pids;
        return j;
}

static size_t uf_find(size_t *parent, size_t x) {
        while (parent[x] != x)
                x = parent[x] = parent[parent[x]];
        return x;
}

static void uf_union(size_t *parent, size_t a, size_t b) {
        a = uf_find(parent, a);
        b = uf_find(parent, b);
        if (a != b)
                parent[a < b ? b : a] = a < b ? a : b;
}

/* The object of entries [i, j): its mappings and the most any member has of it per node. */
static void fill_object(struct share_groups *g, const struct entry *e, size_t i, size_t j, struct share_obj *o,
                        struct share_peer **maps, uint64_t **bytes, size_t *parent) {
        unsigned nn = g->topo->n_nodes;

        *o = (struct share_obj) { .owner = e[i].owner, .cow = e[i].cow, .dev = e[i].dev, .ino = e[i].ino, .maps = *maps,
                                  .n_maps = j - i, .target = -1, .node_bytes = *bytes };
        for (size_t k = i; k < j; k++) {
                o->maps[k - i] = (struct share_peer) { e[k].p->pid, e[k].p->starttime, e[k].note->start,
                                                       e[k].note->end, e[k].note->pgoff };
                for (unsigned x = 0; x < nn; x++)
                        if (e[k].note->node_bytes[x] > o->node_bytes[x])
                                o->node_bytes[x] = e[k].note->node_bytes[x];
                uf_union(parent, e[i].rec, e[k].rec);
        }
        *maps += j - i;
        *bytes += nn;
}

/* The node with the largest share of the members' CPU time, if it has min_pct of it. */
static int group_hot_node(const struct topology *t, const uint64_t *cpu, unsigned min_pct) {
        uint64_t total = 0;
        unsigned best = 0;

        for (unsigned x = 0; x < t->n_nodes; x++) {
                total += cpu[x];
                if (cpu[x] > cpu[best])
                        best = x;
        }
        if (total == 0 || (double) cpu[best] * 100.0 < (double) total * min_pct)
                return -1;
        return (int) t->nodes[best].id;
}

/* The allowed node nearest to hot that is not slow, or -1. */
static int nearest(const struct topology *t, int hot, const nb_nodemask *allowed) {
        int best = -1, best_d = 0;

        NODEMASK_FOREACH(n, allowed) {
                int d = topology_distance(t, (unsigned) hot, (unsigned) n);

                if (topology_node_slow(t, (unsigned) n) || d < 0)
                        continue;
                if (best < 0 || d < best_d) {
                        best = n;
                        best_d = d;
                }
        }
        return best;
}

/* The object's target: the group's hot node, or the nearest node every member's
 * mapping of it allows. */
static void object_target(const struct share_groups *g, const struct entry *e, size_t i, size_t j,
                          struct share_obj *o, int hot) {
        nb_nodemask allowed = g->topo->with_memory;

        if (o->n_maps > SHARE_OBJ_MAPS_MAX) {
                o->why = "mapped more often by the group than the check reads (256 mappings)";
                return;
        }
        if (hot < 0) {
                o->why = "no node has enough of the group's CPU time (min_cpu_share_pct)";
                return;
        }
        for (size_t k = i; k < j; k++)
                nodemask_and(&allowed, &allowed, &e[k].note->allowed);
        o->target = nearest(g->topo, hot, &allowed);
        if (o->target < 0)
                o->why = "no node that every member's cpuset and policies allow";
}

/* A member whose object has a new target is scanned now: its plan follows the group
 * at once, not at its backed-off interval (the group's threads moved, the member's
 * own may not have). */
static void follow_targets(const struct share_groups *g, struct entry *e, const size_t *obj_first,
                           void (*bring_forward)(struct proc_rec *p, uint64_t at_ms), uint64_t now) {
        for (size_t o = 0; o < g->n_objs; o++)
                for (size_t k = obj_first[o]; k < obj_first[o] + g->objs[o].n_maps; k++) {
                        if (e[k].note->target_seen == g->objs[o].target)
                                continue;
                        e[k].note->target_seen = g->objs[o].target;
                        if (g->objs[o].target >= 0 && bring_forward)
                                bring_forward(e[k].p, now);
                }
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

/* The groups: one per set of records joined by objects, with their members, bytes and
 * hot node; then each object's target. */
static int make_groups(struct share_groups *g, struct proc_records *records, struct entry *e, size_t *parent,
                       const size_t *obj_first, unsigned min_pct) {
        unsigned nn = g->topo->n_nodes;
        _cleanup_free_ size_t *group_of = malloc((records->n ? records->n : 1) * sizeof(size_t));
        _cleanup_free_ uint64_t *cpu = NULL;
        size_t n_members = 0;

        if (!group_of)
                return -ENOMEM;
        for (size_t r = 0; r < records->n; r++)
                group_of[r] = SIZE_MAX;
        for (size_t o = 0; o < g->n_objs; o++) {
                size_t root = uf_find(parent, e[obj_first[o]].rec);

                if (group_of[root] == SIZE_MAX)
                        group_of[root] = g->n_groups++;
                g->objs[o].group = group_of[root];
        }
        for (size_t r = 0; r < records->n; r++)
                if (parent[r] != SIZE_MAX && group_of[uf_find(parent, r)] != SIZE_MAX)
                        n_members++;
        g->all_pids = calloc(n_members ? n_members : 1, sizeof(pid_t));
        cpu = calloc((size_t) g->n_groups * nn + 1, sizeof(uint64_t));
        if (!g->all_pids || !cpu)
                return -ENOMEM;
        /* Members in record order (sorted by pid): each group's pids come out sorted. */
        for (size_t x = 0, at = 0; x < g->n_groups; x++) {
                struct share_group *gr = &g->groups[x];

                gr->pids = g->all_pids + at;
                gr->node_bytes = g->all_bytes + (g->n_objs + x) * nn;
                for (size_t r = 0; r < records->n; r++) {
                        const struct proc_rec *p = records->v[r];

                        if (parent[r] == SIZE_MAX || group_of[uf_find(parent, r)] != x)
                                continue;
                        gr->owner = p->cg->turn_uid;
                        gr->pids[gr->n_pids++] = p->pid;
                        for (unsigned k = 0; k < nn; k++)
                                cpu[x * nn + k] += p->shares->cpu_ns[k];
                }
                at += gr->n_pids;
                qsort(gr->pids, gr->n_pids, sizeof(pid_t), cmp_pid);
                gr->hot_node = group_hot_node(g->topo, cpu + x * nn, min_pct);
        }
        for (size_t o = 0; o < g->n_objs; o++) {
                struct share_group *gr = &g->groups[g->objs[o].group];

                object_target(g, e, obj_first[o], obj_first[o] + g->objs[o].n_maps, &g->objs[o], gr->hot_node);
                for (unsigned k = 0; k < nn; k++)
                        gr->node_bytes[k] += g->objs[o].node_bytes[k];
        }
        return 0;
}

static void clear(struct share_groups *g) {
        free(g->objs);
        free(g->groups);
        free(g->all_maps);
        free(g->all_bytes);
        free(g->all_pids);
        g->objs = NULL;
        g->groups = NULL;
        g->all_maps = NULL;
        g->all_bytes = NULL;
        g->all_pids = NULL;
        g->n_objs = g->n_groups = 0;
}

/* Counts the objects (two processes or more) and their mappings. */
static size_t count_objects(const struct entry *e, size_t n, size_t *ret_maps) {
        size_t n_objs = 0, maps = 0, pids;

        for (size_t i = 0, j; i < n; i = j) {
                j = run_end(e, n, i, &pids);
                if (pids >= 2) {
                        n_objs++;
                        maps += j - i;
                }
        }
        *ret_maps = maps;
        return n_objs;
}

static int build(struct share_groups *g, struct proc_records *records, unsigned min_pct,
                 void (*bring_forward)(struct proc_rec *p, uint64_t at_ms), uint64_t now) {
        unsigned nn = g->topo->n_nodes;
        size_t n = 0, n_maps, pids;
        _cleanup_free_ struct entry *e = collect(records, &n);
        _cleanup_free_ size_t *parent = NULL, *obj_first = NULL;
        struct share_peer *maps;
        uint64_t *bytes;

        if (!e)
                return -ENOMEM;
        g->n_objs = count_objects(e, n, &n_maps);
        if (g->n_objs == 0)
                return 0;
        g->objs = calloc(g->n_objs, sizeof(*g->objs));
        g->groups = calloc(g->n_objs, sizeof(*g->groups));
        g->all_maps = calloc(n_maps, sizeof(*g->all_maps));
        g->all_bytes = calloc((g->n_objs * 2) * nn + 1, sizeof(uint64_t));
        parent = malloc((records->n ? records->n : 1) * sizeof(*parent));
        obj_first = calloc(g->n_objs, sizeof(*obj_first));
        if (!g->objs || !g->groups || !g->all_maps || !g->all_bytes || !parent || !obj_first)
                return -ENOMEM;
        for (size_t r = 0; r < records->n; r++)
                parent[r] = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
                parent[e[i].rec] = e[i].rec;
        maps = g->all_maps;
        bytes = g->all_bytes;
        for (size_t i = 0, j, o = 0; i < n; i = j) {
                j = run_end(e, n, i, &pids);
                if (pids < 2)
                        continue;
                obj_first[o] = i;
                fill_object(g, e, i, j, &g->objs[o++], &maps, &bytes, parent);
        }
        if (make_groups(g, records, e, parent, obj_first, min_pct) < 0)
                return -ENOMEM;
        follow_targets(g, e, obj_first, bring_forward, now);
        return 0;
}

void share_groups_build(struct share_groups *g, const struct topology *t, struct proc_records *records,
                        unsigned min_cpu_share_pct, void (*bring_forward)(struct proc_rec *p, uint64_t at_ms),
                        uint64_t now) {
        clear(g);
        g->topo = t;
        if (build(g, records, min_cpu_share_pct, bring_forward, now) < 0)
                clear(g);
}

void share_groups_done(struct share_groups *g) {
        clear(g);
}

/* --- lookups ------------------------------------------------------------------------ */

static const struct share_obj *find_obj(const struct share_groups *g, uid_t owner, bool cow, uint64_t dev,
                                        uint64_t ino) {
        size_t lo = 0, hi = g->n_objs;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const struct share_obj *o = &g->objs[mid];
                int c = o->owner != owner ? (o->owner < owner ? -1 : 1) :
                        o->cow != cow     ? (o->cow < cow ? -1 : 1) :
                        o->dev != dev     ? (o->dev < dev ? -1 : 1) :
                        o->ino != ino     ? (o->ino < ino ? -1 : 1) : 0;

                if (c == 0)
                        return o;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static const struct share_peer *obj_mapping(const struct share_obj *o, pid_t pid, uint64_t start) {
        for (size_t k = 0; k < o->n_maps; k++)
                if (o->maps[k].pid == pid && o->maps[k].start == start)
                        return &o->maps[k];
        return NULL;
}

struct plan_share *share_groups_plan_input(const struct share_groups *g, uid_t owner, pid_t pid,
                                           const struct numa_maps *maps, const struct vma_range *ranges,
                                           size_t n_ranges) {
        struct plan_share *share;
        bool any = false;

        if (g->n_objs == 0)
                return NULL;
        share = calloc(maps->n_vmas ? maps->n_vmas : 1, sizeof(*share));
        if (!share)
                return NULL;
        for (size_t i = 0; i < maps->n_vmas; i++) {
                const struct vma_range *rg = shared_range(maps, i, ranges, n_ranges, true);
                const struct share_obj *o = NULL;
                uint64_t dev, ino, pgoff;
                bool cow;

                if (rg) {
                        object_of(rg, &cow, &dev, &ino, &pgoff);
                        o = find_obj(g, owner, cow, dev, ino);
                }

                share[i].target = o && obj_mapping(o, pid, rg->start) ? o->target : -1;
                any |= share[i].target >= 0;
        }
        if (!any) {
                free(share);
                return NULL;
        }
        return share;
}

bool share_groups_check(const struct share_groups *g, uid_t owner, pid_t pid, uint64_t start,
                        struct share_check *ret) {
        for (size_t o = 0; o < g->n_objs; o++) {
                const struct share_peer *own;

                if (g->objs[o].owner != owner || !(own = obj_mapping(&g->objs[o], pid, start)))
                        continue;
                *ret = (struct share_check) { .peers = g->objs[o].maps, .n_peers = g->objs[o].n_maps,
                                              .own_start = own->start, .own_pgoff = own->pgoff };
                return true;
        }
        return false;
}

uint64_t share_groups_signature(const struct share_groups *g, uid_t owner, pid_t pid) {
        const struct share_group *gr = share_groups_of(g, owner, pid);
        uint64_t sig;

        if (!gr)
                return 0;
        sig = gr->n_pids;
        for (size_t k = 0; k < gr->n_pids; k++)
                sig = sig * UINT64_C(1000003) + (uint64_t) gr->pids[k];
        return sig;
}

const struct share_group *share_groups_of(const struct share_groups *g, uid_t owner, pid_t pid) {
        for (size_t x = 0; x < g->n_groups; x++)
                if (g->groups[x].owner == owner &&
                    bsearch(&pid, g->groups[x].pids, g->groups[x].n_pids, sizeof(pid_t), cmp_pid))
                        return &g->groups[x];
        return NULL;
}
