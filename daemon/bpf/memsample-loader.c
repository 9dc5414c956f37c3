// SPDX-License-Identifier: GPL-2.0-or-later
/* The libbpf-tools lifecycle for memsample.bpf.c (loaded at start, attached to
 * nothing), then per watched cgroup one perf event on each CPU of its cpuset, with the
 * program attached to each: a CPU that runs no watched cgroup carries no event. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cleanup.h"
#include "log.h"
#include "parse.h"
#include "memsample.h"
#include "memsample-loader.h"
#include "memsample.skel.h"
#include "pagesize.h"

/* The BPF program counts samples per base page: address >> this. */
static unsigned page_shift(void) {
        return (unsigned) __builtin_ctzl(page_size());
}

/* A cgroup some watched process is in, with its events (while armed). */
struct ms_group {
        char path[512];            /* from /proc/PID/cgroup: "/a/b", under the cgroup root */
        char v1_path[512];         /* its perf_event v1 cgroup (hybrid layout), "": none */
        bool per_thread;           /* perf has no event for this cgroup: per-thread ones */
        unsigned refs;             /* watched processes in it */
        struct bpf_link **links;   /* n_events each */
        int *fds;
        unsigned n_events;
};

struct ms_watch {
        pid_t pid;
        unsigned group;            /* index in groups, or MEMSAMPLE_MAX_GROUPS: none */
        struct bpf_link **links;   /* per-thread events, where its group has no cgroup ones */
        int *fds;
        unsigned n_events;
};

struct memsample {
        struct memsample_bpf *skel;
        struct perf_event_attr attr;
        unsigned n_cpus;           /* the topology's, for the CPU sets */
        char proc_root[256], cgroup_root[256];
        bool armed;
        struct ms_group groups[MEMSAMPLE_MAX_GROUPS];
        unsigned n_groups;
        struct ms_watch *watches;
        size_t n_watches, cap_watches;
        unsigned n_thread_events;  /* of all watches: at most MEMSAMPLE_MAX_THREAD_EVENTS */
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct memsample_bpf *, memsample_bpf__destroy);

void memsample_loader_attr_page_faults(struct perf_event_attr *attr, uint64_t period) {
        *attr = (struct perf_event_attr) {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(*attr),
                .config = PERF_COUNT_SW_PAGE_FAULTS,
                .sample_period = period ? period : 1,
                .sample_type = PERF_SAMPLE_ADDR,
        };
}

static void group_close(struct ms_group *g) {
        for (unsigned i = 0; i < g->n_events; i++) {
                bpf_link__destroy(g->links[i]);
                if (g->fds[i] >= 0)
                        close(g->fds[i]);
        }
        free(g->links);
        free(g->fds);
        g->links = NULL;
        g->fds = NULL;
        g->n_events = 0;
}

static void threads_close(struct memsample *p, struct ms_watch *w) {
        p->n_thread_events -= w->n_events;
        for (unsigned i = 0; i < w->n_events; i++) {
                bpf_link__destroy(w->links[i]);
                close(w->fds[i]);
        }
        free(w->links);
        free(w->fds);
        w->links = NULL;
        w->fds = NULL;
        w->n_events = 0;
}

void memsample_loader_free(struct memsample *p) {
        if (!p)
                return;
        for (unsigned i = 0; i < p->n_groups; i++)
                group_close(&p->groups[i]);
        for (size_t i = 0; i < p->n_watches; i++)
                threads_close(p, &p->watches[i]);
        free(p->watches);
        memsample_bpf__destroy(p->skel);
        free(p);
}

void memsample_loader_set_roots(struct memsample *p, const char *proc_root, const char *cgroup_root) {
        snprintf(p->proc_root, sizeof(p->proc_root), "%s", proc_root);
        snprintf(p->cgroup_root, sizeof(p->cgroup_root), "%s", cgroup_root);
}

/* The first line of a small file, without its newline. */
static int read_line(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        bool ok;

        if (!f)
                return -errno;
        ok = fgets(buf, (int) size, f) != NULL;
        fclose(f);
        if (!ok)
                return -EINVAL;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

/* Whether a /proc/PID/cgroup line's controller list ("3:cpu,perf_event:") names
 * perf_event. */
static bool names_perf_event(const char *line) {
        const char *c = strchr(line, ':'), *end;

        if (!c)
                return false;
        end = strchr(++c, ':');
        for (const char *at = c; end && at < end; at++)
                if (strncmp(at, "perf_event", 10) == 0 && (at + 10 == end || at[10] == ',') &&
                    (at == c || at[-1] == ','))
                        return true;
        return false;
}

/* pid's cgroup (v2: the "0::" line of /proc/PID/cgroup) into buf, and the one of the
 * v1 perf_event hierarchy, if mounted (the hybrid layout), into v1 (else ""). The
 * tenant names its cgroups: a path with ".." or one too long for the buffer is
 * refused. */
static int pid_cgroup(const struct memsample *p, pid_t pid, char *buf, size_t size, char *v1, size_t v1_size) {
        char path[512], line[600];
        FILE *f;
        int r = -ENOENT;

        *v1 = 0;
        snprintf(path, sizeof(path), "%s/%d/cgroup", p->proc_root, (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                bool v2 = strncmp(line, "0::/", 4) == 0, pe = !v2 && names_perf_event(line);
                const char *at;

                if (!v2 && !pe)
                        continue;
                line[strcspn(line, "\n")] = 0;
                at = strstr(line, ":/");
                if (!at || strlen(at + 1) >= (v2 ? size : v1_size) || strstr(at, "/.."))
                        continue;
                if (v2) {
                        snprintf(buf, size, "%s", at + 1);
                        r = 0;
                } else
                        snprintf(v1, v1_size, "%s", at + 1);
        }
        fclose(f);
        return r;
}

/* Where the v1 perf_event hierarchy is mounted (mountinfo: a cgroup file system whose
 * super options name perf_event), or -ENOENT (pure cgroup v2: perf events are v2's). */
static int v1_perf_mount(const struct memsample *p, char *buf, size_t size) {
        char path[512], line[4096];
        FILE *f;
        int r = -ENOENT;

        snprintf(path, sizeof(path), "%s/self/mountinfo", p->proc_root);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (r < 0 && fgets(line, sizeof(line), f)) {
                char mnt[512];
                const char *dash = strstr(line, " - cgroup ");

                if (!dash || !strstr(dash, "perf_event") || sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
                        continue;
                if (strlen(mnt) < size) {
                        snprintf(buf, size, "%s", mnt);
                        r = 0;
                }
        }
        fclose(f);
        return r;
}

/* The directory to hand perf for g: its v2 cgroup, or (v1) its perf_event cgroup. */
static int group_dir(const struct memsample *p, const struct ms_group *g, bool v1) {
        char mnt[512], path[1100];
        int fd;

        if (!v1)
                snprintf(path, sizeof(path), "%s%s", p->cgroup_root, g->path);
        else if (!g->v1_path[0] || v1_perf_mount(p, mnt, sizeof(mnt)) < 0)
                return -EBADF;
        else
                snprintf(path, sizeof(path), "%s%s", mnt, g->v1_path);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* The CPUs a cgroup's tasks may run on: cpuset.cpus.effective of the cgroup or, where
 * the cpuset controller is not enabled, of its nearest ancestor that has one. -ENOENT
 * with no cpuset anywhere (no controller): the caller takes every CPU. */
static int group_cpus(const struct memsample *p, const char *cg, nb_cpumask *ret) {
        char dir[512], path[1024], buf[4096];

        snprintf(dir, sizeof(dir), "%s", cg);
        for (;;) {
                char *slash;

                snprintf(path, sizeof(path), "%s%s/cpuset.cpus.effective", p->cgroup_root, strcmp(dir, "/") ? dir : "");
                if (read_line(path, buf, sizeof(buf)) == 0 && cpumask_parse(buf, ret) == 0)
                        return 0;
                if (strcmp(dir, "/") == 0)
                        return -ENOENT;
                slash = strrchr(dir, '/');
                if (slash == dir)
                        dir[1] = 0;
                else
                        *slash = 0;
        }
}

/* One event per CPU of g's cpuset, for g's tasks only (PERF_FLAG_PID_CGROUP: the
 * cgroup and its descendants), the program attached to each. perf takes the cgroup of
 * the hierarchy its controller is on: the v2 one, or in the hybrid layout (perf_event
 * on v1: EBADF or ENOENT for a v2 directory) the v1 one. */
static int group_open(struct memsample *p, struct ms_group *g, const char **ret_why) {
        nb_cpumask cpus;
        bool v1 = false;
        int cgfd, r = 0;

        if (g->n_events)
                return 0;
        if (group_cpus(p, g->path, &cpus) < 0) {
                /* Its tasks may run on any CPU: an offline one fails below, skipped. */
                cpus = (nb_cpumask) {};
                for (unsigned c = 0; c < p->n_cpus; c++)
                        cpumask_set(&cpus, c);
        }
        cgfd = group_dir(p, g, false);
        if (cgfd < 0) {
                *ret_why = "cannot open the cgroup";
                return cgfd;
        }
        g->links = calloc(p->n_cpus ? p->n_cpus : 1, sizeof(*g->links));
        g->fds = calloc(p->n_cpus ? p->n_cpus : 1, sizeof(*g->fds));
        if (!g->links || !g->fds) {
                r = -ENOMEM;
                *ret_why = "out of memory";
        }
        for (unsigned c = 0; r == 0 && c < p->n_cpus; c++) {
                struct perf_event_attr a = p->attr;
                int fd;

                if (!cpumask_test(&cpus, c))
                        continue;
                fd = (int) syscall(SYS_perf_event_open, &a, cgfd, (int) c, -1,
                                   PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
                if (fd < 0 && (errno == EBADF || errno == ENOENT) && !v1 && g->n_events == 0) {
                        int e = errno, fd1 = group_dir(p, g, true);
                        if (fd1 >= 0) {
                                close(cgfd);
                                cgfd = fd1;
                                v1 = true;
                                c--;          /* this CPU again, with the v1 cgroup */
                                continue;
                        }
                        errno = e;
                }
                if (fd < 0) {
                        if (errno == ENODEV || errno == EINVAL)
                                continue;   /* offline (the cpuset can name one) */
                        r = -errno;
                        *ret_why = "cannot open the sampling perf event";
                        break;
                }
                g->fds[g->n_events] = fd;
                g->links[g->n_events++] = bpf_program__attach_perf_event(p->skel->progs.on_sample, fd);
                if (!g->links[g->n_events - 1]) {
                        r = -errno;
                        *ret_why = "cannot attach the program to the perf event";
                }
        }
        close(cgfd);
        if (r < 0) {
                log_debug_errno(r, "cgroup=%s: no page sampling: %s: %m", g->path, *ret_why);
                group_close(g);
                return r;
        }
        {
                char list[256];
                (void) cpumask_format(&cpus, list, sizeof(list));
                log_debug("cgroup=%s: %u page sampling events, on CPUs %s%s", g->path, g->n_events, list,
                          v1 ? " (its v1 perf_event cgroup)" : "");
        }
        return 0;
}

/* One event per thread of w's process (at most MEMSAMPLE_MAX_THREADS, the lowest ids),
 * inherited by the threads they create, on whichever CPU the thread runs. */
static int threads_open(struct memsample *p, struct ms_watch *w) {
        char path[512];
        struct dirent *de;
        DIR *d;
        int r = 0;

        if (w->n_events)
                return 0;
        snprintf(path, sizeof(path), "%s/%d/task", p->proc_root, (int) w->pid);
        d = opendir(path);
        if (!d)
                return -errno;
        w->links = calloc(MEMSAMPLE_MAX_THREADS, sizeof(*w->links));
        w->fds = calloc(MEMSAMPLE_MAX_THREADS, sizeof(*w->fds));
        if (!w->links || !w->fds)
                r = -ENOMEM;
        while (r == 0 && w->n_events < MEMSAMPLE_MAX_THREADS &&
               p->n_thread_events + w->n_events < MEMSAMPLE_MAX_THREAD_EVENTS && (de = readdir(d))) {
                struct perf_event_attr a = p->attr;
                int tid, fd;

                if (parse_int(de->d_name, 1, INT32_MAX, &tid) < 0)
                        continue;
                a.inherit = 1;
                fd = (int) syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
                if (fd < 0) {
                        if (errno != ESRCH)
                                r = -errno;   /* ESRCH: the thread has exited */
                        continue;
                }
                w->fds[w->n_events] = fd;
                w->links[w->n_events++] = bpf_program__attach_perf_event(p->skel->progs.on_sample, fd);
                if (!w->links[w->n_events - 1])
                        r = -errno;
        }
        closedir(d);
        p->n_thread_events += w->n_events;
        if (r < 0)
                threads_close(p, w);
        return r;
}

/* Opens group g's events; where perf has no event for its cgroup (ENOENT or EBADF: in
 * a cgroup2 tree in which no controller was ever enabled below the root, a child
 * cgroup has no perf_event state), per-thread events for each of its processes. */
static int open_for(struct memsample *p, unsigned g) {
        const char *why;
        int r;

        if (!p->groups[g].per_thread) {
                r = group_open(p, &p->groups[g], &why);
                if (r != -ENOENT && r != -EBADF)
                        return r;
                log_debug("cgroup=%s: no perf event for the cgroup: one per thread of its watched processes",
                          p->groups[g].path);
                p->groups[g].per_thread = true;
        }
        for (size_t i = 0; i < p->n_watches; i++)
                if (p->watches[i].group == g && (r = threads_open(p, &p->watches[i])) < 0)
                        return r;
        return 0;
}

int memsample_loader_arm(struct memsample *p, bool on) {
        int r = 0;

        p->armed = on;
        for (unsigned i = 0; i < p->n_groups; i++) {
                if (!on)
                        group_close(&p->groups[i]);
                else if (p->groups[i].refs && r == 0)
                        r = open_for(p, i);
        }
        for (size_t i = 0; !on && i < p->n_watches; i++)
                threads_close(p, &p->watches[i]);
        return r;
}

unsigned memsample_loader_n_events(const struct memsample *p) {
        unsigned n = 0;

        for (unsigned i = 0; i < p->n_groups; i++)
                n += p->groups[i].n_events;
        for (size_t i = 0; i < p->n_watches; i++)
                n += p->watches[i].n_events;
        return n;
}

int memsample_loader_new(const struct topology *t, const struct perf_event_attr *attr,
                      struct memsample **ret, const char **ret_why) {
        _cleanup_(memsample_bpf__destroyp) struct memsample_bpf *skel = NULL;
        struct memsample *p;
        int n_cpus, r;

        n_cpus = libbpf_num_possible_cpus();
        if (n_cpus <= 0) {
                *ret_why = "cannot read the possible CPUs";
                return n_cpus < 0 ? n_cpus : -EINVAL;
        }
        skel = memsample_bpf__open();
        if (!skel) {
                *ret_why = "cannot open the BPF object";
                return -errno;
        }
        if (bpf_map__set_max_entries(skel->maps.cpu_node, (__u32) n_cpus) < 0) {
                *ret_why = "cannot size the BPF maps";
                return -EINVAL;
        }
        skel->rodata->nr_cpus = (__u32) n_cpus;
        skel->rodata->page_shift = page_shift();
        r = memsample_bpf__load(skel);
        if (r < 0) {
                *ret_why = "cannot load the BPF program (libbpf says why at debug level)";
                return r;
        }
        for (unsigned c = 0; c < t->n_cpus && c < (unsigned) n_cpus; c++) {
                int node = topology_cpu_node(t, c);
                __u32 key = c, val = (__u32) node;
                if (node >= 0 && bpf_map_update_elem(bpf_map__fd(skel->maps.cpu_node), &key, &val, BPF_ANY) < 0) {
                        *ret_why = "cannot fill the CPU to node map";
                        return -errno;
                }
        }

        p = calloc(1, sizeof(*p));
        if (!p) {
                *ret_why = "out of memory";
                return -ENOMEM;
        }
        p->skel = TAKE_PTR(skel);
        p->attr = *attr;
        p->n_cpus = t->n_cpus;
        memsample_loader_set_roots(p, "/proc", "/sys/fs/cgroup");
        *ret = p;
        return 0;
}

/* The group for cgroup path: an existing one for it or for an ancestor (whose events
 * sample its descendants already: two would count each sample twice), else a new one.
 * MEMSAMPLE_MAX_GROUPS when there is no room. */
static unsigned group_for(struct memsample *p, const char *path) {
        unsigned free_slot = MEMSAMPLE_MAX_GROUPS;

        for (unsigned i = 0; i < p->n_groups; i++) {
                const char *gp = p->groups[i].path;
                size_t n = strlen(gp);

                if (!p->groups[i].refs) {
                        free_slot = i;
                        continue;
                }
                if (strcmp(gp, path) == 0 || strcmp(gp, "/") == 0 ||
                    (strncmp(gp, path, n) == 0 && path[n] == '/'))
                        return i;
        }
        if (free_slot == MEMSAMPLE_MAX_GROUPS && p->n_groups < MEMSAMPLE_MAX_GROUPS)
                free_slot = p->n_groups++;
        if (free_slot < MEMSAMPLE_MAX_GROUPS)
                snprintf(p->groups[free_slot].path, sizeof(p->groups[free_slot].path), "%s", path);
        return free_slot;
}

static struct ms_watch *watch_find(struct memsample *p, pid_t pid) {
        for (size_t i = 0; i < p->n_watches; i++)
                if (p->watches[i].pid == pid)
                        return &p->watches[i];
        return NULL;
}

/* pid's cgroup carries events from now on (while armed). Without a cgroup (gone, or
 * MEMSAMPLE_MAX_GROUPS in use) pid is in the filter but no event samples it. */
static int watch_cgroup(struct memsample *p, pid_t pid) {
        struct ms_watch *w = watch_find(p, pid);
        char path[512], v1[512];
        unsigned g;
        int r;

        if (w)
                return 0;
        if (p->n_watches == p->cap_watches) {
                size_t nc = p->cap_watches ? p->cap_watches * 2 : 64;
                struct ms_watch *nw = realloc(p->watches, nc * sizeof(*nw));
                if (!nw)
                        return -ENOMEM;
                p->watches = nw;
                p->cap_watches = nc;
        }
        r = pid_cgroup(p, pid, path, sizeof(path), v1, sizeof(v1));
        g = r < 0 ? MEMSAMPLE_MAX_GROUPS : group_for(p, path);
        if (g < MEMSAMPLE_MAX_GROUPS && !p->groups[g].refs) {
                snprintf(p->groups[g].v1_path, sizeof(p->groups[g].v1_path), "%s", v1);
                p->groups[g].per_thread = false;
        }
        p->watches[p->n_watches++] = (struct ms_watch) { .pid = pid, .group = g };
        if (g == MEMSAMPLE_MAX_GROUPS)
                return r < 0 ? r : -ENOSPC;
        p->groups[g].refs++;
        return p->armed ? open_for(p, g) : 0;
}

static void unwatch_cgroup(struct memsample *p, pid_t pid) {
        struct ms_watch *w = watch_find(p, pid);

        if (!w)
                return;
        threads_close(p, w);
        if (w->group < MEMSAMPLE_MAX_GROUPS && --p->groups[w->group].refs == 0)
                group_close(&p->groups[w->group]);
        *w = p->watches[--p->n_watches];
}

int memsample_loader_watch(struct memsample *p, pid_t pid) {
        __u32 tgid = (__u32) pid;
        __u8 one = 1;

        if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.watched), &tgid, &one, BPF_ANY) < 0)
                return -errno;
        return watch_cgroup(p, pid);
}

int memsample_loader_unwatch(struct memsample *p, pid_t pid) {
        __u32 tgid = (__u32) pid;

        unwatch_cgroup(p, pid);
        return bpf_map_delete_elem(bpf_map__fd(p->skel->maps.watched), &tgid) < 0 ? -errno : 0;
}


/* Moves the counts of pid (or of every process, pid 0) out of the map to fn. */
static int drain(struct memsample *p, pid_t pid,
                 void (*fn)(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count), void *userdata) {
        _cleanup_free_ struct memsample_key *keys = NULL;
        int fd = bpf_map__fd(p->skel->maps.pages), n = 0;
        struct memsample_key k, next, *prev = NULL;
        size_t cap = 0;

        /* Collect first: deleting while walking with get_next_key restarts the walk.
         * The map is bounded (MEMSAMPLE_MAX_ENTRIES), so is this. */
        while (bpf_map_get_next_key(fd, prev, &next) == 0 && (size_t) n < MEMSAMPLE_MAX_ENTRIES) {
                k = next;
                prev = &k;
                if (pid && k.tgid != (__u32) pid)
                        continue;
                if ((size_t) n == cap) {
                        size_t nc = cap ? cap * 2 : 1024;
                        struct memsample_key *nk = realloc(keys, nc * sizeof(*nk));
                        if (!nk)
                                return -ENOMEM;
                        keys = nk;
                        cap = nc;
                }
                keys[n++] = k;
        }
        for (int i = 0; i < n; i++) {
                __u64 count;
                if (bpf_map_lookup_elem(fd, &keys[i], &count) < 0)
                        continue; /* evicted meanwhile */
                (void) bpf_map_delete_elem(fd, &keys[i]);
                fn(userdata, (pid_t) keys[i].tgid, keys[i].page << page_shift(), keys[i].node, count);
        }
        return n;
}

int memsample_loader_drain_all(struct memsample *p,
                               void (*fn)(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count),
                               void *userdata) {
        return drain(p, 0, fn, userdata);
}

static void to_agg(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        (void) tgid;
        (void) page_agg_add_counts(userdata, addr, node, count);
}

int memsample_loader_drain(struct memsample *p, pid_t pid, struct page_agg *agg) {
        return pid > 0 ? drain(p, pid, to_agg, agg) : -EINVAL;
}
