/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tick (manager_tick) on stored inputs: the processes of tests/data/manager/proc
 * copied into a temporary proc root, the 2n2c topology (tests/data/sys/2n2c: CPUs 0-1
 * on node 0, 2-3 on node 1), and a temporary cgroup directory whose cgroup.procs each
 * case writes. What a tick plans comes out as migration jobs (the manager's run_jobs
 * seam takes them: nothing is moved) and in the process records the reports read;
 * what it forgets shows in the records and in what the samplers still watch.
 *
 * The pids need not be real: the manager's open_pidfd seam gives each process a pipe
 * whose write end the case holds, and closing it is the process exiting (a pidfd
 * polls readable then). valgrind 3.19 does not know pidfd_open(2); one case runs a
 * real child with a real pidfd where pidfd_open works.
 *
 * Page-level sampling needs BPF and a PMU, so the manager's whole interface to the
 * samplers, source.h, is implemented here: the /proc placement source (unwatch
 * recorded), and a page sampler that hands over the samples a case queues. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "cg-records.h"
#include "config.h"
#include "log.h"
#include "manager.h"
#include "manager-internal.h"
#include "pagesize.h"
#include "page-sampler.h"
#include "source.h"
#include "tenant-reader.h"
#include "test.h"
#include "tmptree.h"
#include "walker.h"

/* tests/data/manager/proc: see the README there. */
#define DB 3001    /* threads on node 0; 32 + 8 MiB of private memory on node 1 */
#define WEB 3002   /* threads on node 1; 16 MiB of private memory on node 0 */
#define MIB (UINT64_C(1) << 20)

/* --- source.h, faked ---------------------------------------------------------- */

struct page_sampler {
        pid_t watched[32];
        uid_t owner[32];           /* whose sampling slots each one's are */
        size_t n_watched;
};

struct queued_sample {
        pid_t tgid;
        uint64_t addr;
        unsigned node;
        uint64_t count;
};

static struct page_sampler sampler;
static bool sampler_on;                  /* page_sampler_choose() gives one */
static struct queued_sample queued[16];  /* handed over at the next drain */
static size_t n_queued;
static pid_t source_unwatched[32];       /* node_time_source_unwatch() calls */
static size_t n_source_unwatched;

/* The samplers' attachment (samplers_sync): whether each is attached now, how
 * often each was attached and detached, and samples asked of a detached source. */
static struct {
        bool source_on, pages_on;
        unsigned source_attaches, source_detaches, pages_attaches, pages_detaches;
        unsigned samples_detached;
} armed;

static int fake_arm(const struct node_time_source *s, bool on) {
        if (on != armed.source_on)
                on ? armed.source_attaches++ : armed.source_detaches++;
        armed.source_on = on;
        return 0;
}

int page_sampler_arm(struct page_sampler *s, bool on) {
        if (on != armed.pages_on)
                on ? armed.pages_attaches++ : armed.pages_detaches++;
        armed.pages_on = on;
        return 0;
}

static int fake_sample(const struct node_time_source *s, const char *proc_root, pid_t pid,
                       const struct topology *t, struct node_time_state *st, uint64_t *ns_by_node) {
        armed.samples_detached += !armed.source_on;
        return node_time_source_proc.sample(&node_time_source_proc, proc_root, pid, t, st, ns_by_node);
}

static void fake_unwatch(const struct node_time_source *s, pid_t pid) {
        if (n_source_unwatched < ELEMENTSOF(source_unwatched))
                source_unwatched[n_source_unwatched++] = pid;
}

static const struct node_time_source fake_source = { .name = "proc", .sample = fake_sample, .unwatch = fake_unwatch,
                                                     .arm = fake_arm };

int source_choose(enum sample_source want, const struct topology *t,
                            const struct node_time_source **ret) {
        *ret = &fake_source;
        return 0;
}

int page_sampler_choose(const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                        const struct topology *t, const struct node_time_source *placement,
                        struct page_sampler **ret) {
        sampler = (struct page_sampler) {};
        *ret = sampler_on ? &sampler : NULL;
        return 0;
}

const char *page_sampler_name(const struct page_sampler *s) { return s ? "fake" : NULL; }

static bool watched(pid_t pid) {
        for (size_t i = 0; i < sampler.n_watched; i++)
                if (sampler.watched[i] == pid)
                        return true;
        return false;
}

int page_sampler_watch(struct page_sampler *s, pid_t pid, uid_t owner) {
        if (!watched(pid) && s->n_watched < ELEMENTSOF(s->watched)) {
                s->owner[s->n_watched] = owner;
                s->watched[s->n_watched++] = pid;
        }
        return 0;
}

/* The owner pid was watched for, (uid_t) -1 if it is not. */
static uid_t watch_owner(pid_t pid) {
        for (size_t i = 0; i < sampler.n_watched; i++)
                if (sampler.watched[i] == pid)
                        return sampler.owner[i];
        return (uid_t) -1;
}

void page_sampler_span(struct page_sampler *s, pid_t pid, uid_t owner, bool spans) {
        (void) s, (void) pid, (void) owner, (void) spans;
}

uint64_t page_sampler_take_cpu_ns(struct page_sampler *s) {
        (void) s;
        return 0;
}

const struct sample_quota *page_sampler_quota(const struct page_sampler *s) {
        (void) s;
        return NULL;
}

void page_sampler_unwatch(struct page_sampler *s, pid_t pid) {
        for (size_t i = 0; i < s->n_watched; i++)
                if (s->watched[i] == pid) {
                        s->owner[i] = s->owner[s->n_watched - 1];
                        s->watched[i--] = s->watched[--s->n_watched];
                }
}

int page_sampler_drain(struct page_sampler *s, page_sample_fn fn, void *userdata) {
        size_t n = n_queued;

        for (size_t i = 0; i < n_queued; i++)
                fn(userdata, queued[i].tgid, queued[i].addr, queued[i].node, queued[i].count);
        n_queued = 0;
        return (int) n;
}

void page_sampler_free(struct page_sampler *s) {}
void page_sampler_set_reader(struct page_sampler *s, struct tenant_reader *reader) {}

const char *page_sampler_chain(const struct node_time_source *placement, const struct page_sampler *s) {
        return s ? "pmu+proc" : "proc";
}

static void queue_sample(pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        queued[n_queued++] = (struct queued_sample) { tgid, addr, node, count };
}

static bool source_unwatched_pid(pid_t pid) {
        for (size_t i = 0; i < n_source_unwatched; i++)
                if (source_unwatched[i] == pid)
                        return true;
        return false;
}

/* --- the manager under test ---------------------------------------------------- */

struct env_opts {
        enum cg_mode mode;         /* of /app.slice, the one cgroup */
        bool dry_run;
        bool page_sampling;
        uint64_t scan_min_ms, scan_max_ms;  /* 0, 0: every process is due at every tick */
        uint64_t min_rss_kb;       /* 0: the default */
        uid_t user;                /* not 0: /app.slice is this user's, opted in with its user.* */
        bool xattr;                /* /app.slice opted in with user.* (the test's own directory) */
        bool own_sys;              /* a copy of the 2n2c /sys in <dir>/sys, for set_mem_free() */
        bool one_node;             /* own_sys, with node 0 alone having memory */
        bool real_budgets;         /* the daemon's read budgets (OWNER_TURN_NS, ...); otherwise
                                    * none, so that every process is read in its first tick
                                    * however slow the machine (valgrind on a loaded CI host
                                    * read one of two in 200 ms) */
};

struct sunk_job {
        pid_t pid;
        int target;
        struct migrate_range ranges[8];
        size_t n_ranges;
        uint64_t max_pages;
        int checked;               /* its may_move check (after env.before_check), 1: none */
        const char *stop;          /* and why it refused, NULL: it did not */
};

static struct {
        char dir[64];              /* the temporary directory */
        char proc[96];             /* <dir>/proc: the proc root */
        char cgroup[96];           /* <dir>/cg: the cgroup root, with /app.slice */
        char sys[96];              /* the sys root: the stored 2n2c one, or <dir>/sys */
        sd_event *event;
        struct manager *m;
        int pidfd_w[64];           /* by slot: the write end of each process's pidfd */
        pid_t pidfd_pid[64];
        size_t n_pidfds;
        struct sunk_job jobs[16];  /* what the last tick would have moved */
        size_t n_jobs;
        bool jobs_move;            /* the sink reports every page moved */
        size_t heap_in_jobs;       /* heap in use while the last tick's jobs ran */
        uint64_t sink_ns;          /* when the last jobs ran (CLOCK_MONOTONIC) */
        void (*before_check)(pid_t pid);  /* what happens between the scan and the moves */
} env;

/* open_pidfd: a pipe; its write end closed is the process exiting. */
static int fake_pidfd(pid_t pid) {
        int p[2];

        if (env.n_pidfds == ELEMENTSOF(env.pidfd_w) || pipe2(p, O_CLOEXEC) < 0)
                return -EMFILE;
        env.pidfd_w[env.n_pidfds] = p[1];
        env.pidfd_pid[env.n_pidfds++] = pid;
        return p[0];
}

/* Bytes malloc has handed out: from the heap, and mapped on their own (large ones). */
static size_t heap_in_use(void) {
        struct mallinfo2 mi = mallinfo2();
        return mi.uordblks + mi.hblkhd;
}

/* run_jobs: records the jobs (and, with jobs_move, says every page moved). */
static int sink(void *userdata, struct migrate_job *jobs, size_t n_jobs) {
        env.heap_in_jobs = heap_in_use();
        env.sink_ns = clock_now_ns(CLOCK_MONOTONIC);
        env.n_jobs = 0;
        for (size_t q = 0; q < n_jobs && env.n_jobs < ELEMENTSOF(env.jobs); q++) {
                struct sunk_job *s = &env.jobs[env.n_jobs++];
                *s = (struct sunk_job) { .pid = jobs[q].pid, .target = jobs[q].target_node,
                                         .max_pages = jobs[q].max_pages };
                for (size_t k = 0; k < jobs[q].n_ranges && s->n_ranges < ELEMENTSOF(s->ranges); k++)
                        s->ranges[s->n_ranges++] = jobs[q].ranges[k];
                if (env.before_check)
                        env.before_check(jobs[q].pid);
                s->checked = 1;
                if (jobs[q].may_move) {
                        const struct migrate_stop *stop = NULL;
                        s->checked = jobs[q].may_move(jobs[q].may_move_ctx, &jobs[q], &stop);
                        s->stop = s->checked < 0 && stop ? stop->name : NULL;
                        /* What the executor does with a no. */
                        if (s->checked < 0) {
                                jobs[q].error = s->checked;
                                jobs[q].stop = stop;
                                continue;
                        }
                }
                if (env.jobs_move)
                        jobs[q].pages[MIG_MOVED] = jobs[q].max_pages;
        }
        return 0;
}

/* The first CPU of the stored topology (0-3) this test may run on: the service CPU. */
static int service_cpu(void) {
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof(set), &set) < 0)
                return -1;
        for (int c = 0; c < 4; c++)
                if (CPU_ISSET(c, &set))
                        return c;
        return -1;
}

/* The fixture's tree: in /dev/shm where there is one. The tenant cases make 5,000 to
 * 20,000 directories with files in them; on the CI machine's ext4 /tmp that took 20 s
 * of a 20.5 s case (2.6 s in tmpfs), most of it waiting on the disk. */
static const char *scratch_base(void) {
        return access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
}

static bool env_start(const struct env_opts *o) {
        char slice[PATH_MAX];
        struct nb_config cfg;
        int cpu = service_cpu(), r;

        if (cpu < 0)
                return false;
        env = (typeof(env)) {};
        snprintf(env.dir, sizeof(env.dir), "%s/test-manager-XXXXXX", scratch_base());
        if (!mkdtemp(env.dir))
                abort();
        snprintf(env.proc, sizeof(env.proc), "%s/proc", env.dir);
        snprintf(env.cgroup, sizeof(env.cgroup), "%s/cg", env.dir);
        snprintf(slice, sizeof(slice), "%s/app.slice", env.cgroup);
        if (mkdir(env.proc, 0755) < 0 || mkdir(env.cgroup, 0755) < 0 || mkdir(slice, 0755) < 0)
                abort();
        snprintf(env.sys, sizeof(env.sys), "%s", TEST_DATA_DIR "/sys/2n2c");
        if (o->own_sys || o->one_node) {
                snprintf(env.sys, sizeof(env.sys), "%s/sys", env.dir);
                tmptree_copy(TEST_DATA_DIR "/sys/2n2c", env.sys);
        }
        if (o->one_node) {
                snprintf(slice, sizeof(slice), "%s/devices/system/node/has_memory", env.sys);
                tmptree_write(slice, "0\n");
                snprintf(slice, sizeof(slice), "%s/app.slice", env.cgroup);
        }

        config_defaults(&cfg);
        free(cfg.cgroup_root);
        cfg.cgroup_root = strdup(env.cgroup);
        if (o->user || o->xattr) {
                const char *v = config_cg_mode_name(o->mode);
                if ((o->user && chown(slice, o->user, o->user) < 0) ||
                    setxattr(slice, "user.numabalanced", v, strlen(v), 0) < 0)
                        abort();
        } else {
                cfg.cgroups = calloc(1, sizeof(*cfg.cgroups));
                cfg.cgroups[0] = (struct cgroup_rule) { strdup("/app.slice"), o->mode, false, false, 0 };
                cfg.n_cgroups = 1;
        }
        cfg.source = SOURCE_PROC;
        cfg.scan_min_ms = o->scan_min_ms;
        cfg.scan_max_ms = o->scan_max_ms;
        if (o->min_rss_kb)
                cfg.min_rss_kb = o->min_rss_kb;
        cfg.service_cpus = (nb_cpumask) {};
        cpumask_set(&cfg.service_cpus, (unsigned) cpu);

        sampler_on = o->page_sampling;
        n_queued = n_source_unwatched = 0;
        armed = (typeof(armed)) {};
        if (sd_event_new(&env.event) < 0)
                abort();
        r = manager_new(env.event, &cfg, &(struct manager_opts) {
                                .dry_run = o->dry_run,
                                .proc_root = env.proc,
                                .sys_root = env.sys,
                        }, &env.m);
        config_done(&cfg);
        if (r < 0) {
                fprintf(stderr, "manager_new: %s\n", strerror(-r));
                abort();
        }
        env.m->procs.open_pidfd = fake_pidfd;
        env.m->hooks.run_jobs = sink;
        if (!o->real_budgets)
                env.m->owner_turn_ns = env.m->read_budget_ns = UINT64_C(1) << 40;
        return true;
}

static void env_done(void) {
        manager_free(env.m);
        sd_event_unref(env.event);
        for (size_t i = 0; i < env.n_pidfds; i++)
                if (env.pidfd_w[i] >= 0)
                        close(env.pidfd_w[i]);
        tmptree_remove(env.dir);
}

/* The stored process fixture, as process pid. */
/* Each thread's task/TID/numa_maps shows the process's, as the kernel's does while no
 * thread has a policy of its own (bind_worker() gives one its own). */
static void task_numa_maps(const char *procdir) {
        char tasks[PATH_MAX + 16], from[PATH_MAX + 16], to[2 * PATH_MAX + 32];
        struct dirent *de;
        DIR *d;

        snprintf(tasks, sizeof(tasks), "%s/task", procdir);
        snprintf(from, sizeof(from), "%s/numa_maps", procdir);
        d = opendir(tasks);
        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        snprintf(to, sizeof(to), "%s/%s/numa_maps", tasks, de->d_name);
                        tmptree_copy(from, to);
                }
        closedir(d);
}

static void put_proc(int fixture, pid_t pid) {
        char from[PATH_MAX], to[PATH_MAX];

        snprintf(from, sizeof(from), "%s/manager/proc/%d", TEST_DATA_DIR, fixture);
        snprintf(to, sizeof(to), "%s/%d", env.proc, (int) pid);
        tmptree_remove(to);
        tmptree_copy(from, to);
        task_numa_maps(to);
        strcat(to, "/cgroup");
        tmptree_write(to, "0::/app.slice\n");
}

/* Node node's MemFree in the env's own /sys (own_sys): what the next tick reads. */
static void set_mem_free(int node, uint64_t kb) {
        char path[PATH_MAX], text[256];

        snprintf(path, sizeof(path), "%s/devices/system/node/node%d/meminfo", env.sys, node);
        snprintf(text, sizeof(text), "Node %d MemTotal:        1030480 kB\nNode %d MemFree:   %12" PRIu64 " kB\n",
                 node, node, kb);
        tmptree_write(path, text);
}

/* Replaces the first occurrence of what in process pid's file name by with. */
static void edit_proc_file(pid_t pid, const char *name, const char *what, const char *with) {
        char path[PATH_MAX], *text = NULL, *at;
        size_t len = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%d/%s", env.proc, (int) pid, name);
        f = fopen(path, "r");
        if (!f || getdelim(&text, &len, 0, f) < 0 || !(at = strstr(text, what)))
                abort();
        fclose(f);
        *at = 0;
        f = fopen(path, "w");
        fprintf(f, "%s%s%s", text, with, at + strlen(what));
        fclose(f);
        free(text);
}

/* Process pid exits: its pidfd polls readable, its /proc directory goes. */
static void exit_proc(pid_t pid) {
        char path[PATH_MAX];

        for (size_t i = 0; i < env.n_pidfds; i++)
                if (env.pidfd_pid[i] == pid && env.pidfd_w[i] >= 0) {
                        close(env.pidfd_w[i]);
                        env.pidfd_w[i] = -1;
                }
        snprintf(path, sizeof(path), "%s/%d", env.proc, (int) pid);
        tmptree_remove(path);
}

/* /app.slice's cgroup.procs. */
static void set_procs(const char *pids) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/app.slice/cgroup.procs", env.cgroup);
        tmptree_write(path, pids);
}

/* More CPU time for thread tid of pid (its schedstat run time grows by ns). */
static void add_cpu_time(pid_t pid, pid_t tid, uint64_t ns) {
        char path[PATH_MAX], text[64];
        unsigned long long run = 0, wait = 0, slices = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%d/task/%d/schedstat", env.proc, (int) pid, (int) tid);
        f = fopen(path, "r");
        if (!f || fscanf(f, "%llu %llu %llu", &run, &wait, &slices) != 3)
                abort();
        fclose(f);
        snprintf(text, sizeof(text), "%llu %llu %llu\n", run + ns, wait, slices + 1);
        tmptree_write(path, text);
}

/* /app.slice switched to mode, as a reload does it. */
static void set_mode(enum cg_mode mode) {
        struct nb_config cfg = env.m->cfg;

        cfg.cgroups = &(struct cgroup_rule) { "/app.slice", mode, false, false, 0 };
        cfg.n_cgroups = 1;
        if (manager_reload(env.m, &cfg) < 0)
                abort();
}

/* The pidfds the records hold (fake_pidfd's pipes whose read end is still open). */
static size_t pidfds_held(void) {
        size_t n = 0;
        for (size_t i = 0; i < env.m->procs.n; i++)
                n += env.m->procs.v[i]->pidfd >= 0;
        return n;
}

static int tick(void) {
        env.n_jobs = 0;
        return manager_tick(env.m);
}

static struct proc_rec *rec(pid_t pid) {
        for (size_t i = 0; i < env.m->procs.n; i++)
                if (env.m->procs.v[i]->pid == pid)
                        return env.m->procs.v[i];
        return NULL;
}

static const struct sunk_job *job(pid_t pid) {
        for (size_t i = 0; i < env.n_jobs; i++)
                if (env.jobs[i].pid == pid)
                        return &env.jobs[i];
        return NULL;
}

static bool has_range(const struct sunk_job *j, uint64_t start, uint64_t end) {
        for (size_t k = 0; j && k < j->n_ranges; k++)
                if (j->ranges[k].start == start && j->ranges[k].end == end)
                        return true;
        return false;
}

/* Log lines, to check what an operator reads. */
static char logged[8192];

static void log_to_buffer(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(logged);
        snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

/* --- cases --------------------------------------------------------------------- */

TEST(plans_memory_to_the_node_its_threads_run_on) {
        const struct sunk_job *j;
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        /* web as pid 3000: scanned first, with less to move. */
        put_proc(DB, DB);
        put_proc(WEB, 3000);
        set_procs("3001\n3000\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 2);

        /* db: its two private VMAs on node 1 go to node 0, where its threads run; the
         * bound, interleaved and shared ones stay. The largest job comes first. */
        CHECK_INT(env.n_jobs, 2);
        CHECK_INT(env.jobs[0].pid, DB);
        CHECK_INT(env.jobs[1].pid, 3000);
        j = job(DB);
        CHECK(j && j->target == 0 && j->n_ranges == 2);
        CHECK(has_range(j, 0x7f3a00000000, 0x7f3a02000000));
        CHECK(has_range(j, 0x7f3a04000000, 0x7f3a04800000));
        CHECK(j && j->max_pages * page_size() == 40 * MIB);
        p = rec(DB);
        CHECK(p && p->reason == REASON_NONE && p->hot_node == 0 && p->target_node == 0);
        CHECK(p && p->planned_bytes == 40 * MIB);
        CHECK(p && p->skipped_bytes[REASON_SHARED_UNVERIFIED] == 4 * MIB + 40 * 4096);
        CHECK(p && p->total_bytes == 13420 * UINT64_C(4096));
        CHECK(p && p->local_bytes == (512 + 256 + 60 + 8) * UINT64_C(4096));
        CHECK(p && strcmp(p->comm, "db") == 0 && p->uid == 1000 && p->scans == 1);

        /* web: the other way round. */
        j = job(3000);
        CHECK(j && j->target == 1 && j->n_ranges == 1);
        CHECK(has_range(j, 0x7f5000000000, 0x7f5001000000));
        p = rec(3000);
        CHECK(p && p->hot_node == 1 && p->target_node == 1 && p->planned_bytes == 16 * MIB);

        CHECK_INT(env.m->cgs.n, 1);
        CHECK(env.m->cgs.n == 1 && env.m->cgs.v[0]->seen && env.m->cgs.v[0]->n_procs == 2);
        env_done();
}

/* A process whose numa_maps read waits for good (a FIFO nobody writes stands for a
 * page of a FUSE file its owner never answers): the tick goes on at the deadline, the
 * process is quarantined and says so, the others are planned as ever; when the read
 * returns at last its thread frees it. */
TEST(a_read_that_waits_for_good_quarantines_its_process) {
        char fifo[PATH_MAX + 32];
        struct tenant_reader *capped = NULL;
        struct proc_rec *p;
        uint64_t t;
        int fd;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        /* The manager's reader, with a deadline short enough for a unit test. */
        CHECK_INT(tenant_reader_new(&env.m->service.service, 500, &capped), 0);
        tenant_reader_free(env.m->reader);
        env.m->reader = capped;
        put_proc(DB, DB);
        put_proc(WEB, 3000);
        snprintf(fifo, sizeof(fifo), "%s/3000/numa_maps", env.proc);
        CHECK_INT(unlink(fifo), 0);
        CHECK_INT(mkfifo(fifo, 0600), 0);
        set_procs("3001\n3000\n");
        t = clock_now_ms();
        CHECK_INT(tick(), 0);
        CHECK(clock_now_ms() - t < 4000);
        p = rec(3000);
        CHECK(p && p->reason == REASON_QUARANTINED && p->sched.quarantined_until_ms > clock_now_ms());
        CHECK_INT(env.m->counters.quarantines, 1);
        CHECK(job(3000) == NULL);
        CHECK(tenant_reader_owner_stuck(env.m->reader, p ? p->cg->turn_uid : 0));
        /* Its owner's other process waits: the wait ended the owner's turn (both are
         * root's here), and the owner's reads are refused until that read returns. */
        CHECK(job(DB) == NULL);
        CHECK(!rec(DB) || rec(DB)->scans == 0);

        /* Quarantined: the next tick does not try again. */
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->counters.quarantines, 1);
        CHECK(rec(3000) && rec(3000)->reason == REASON_QUARANTINED);
        CHECK(rec(DB) && rec(DB)->reason == REASON_READ_DEFERRED && rec(DB)->scans == 0);
        CHECK(env.m->counters.reads_deferred >= 1);

        /* The read returns: the owner is read again (the process after its quarantine). */
        fd = open(fifo, O_WRONLY);
        if (fd >= 0)
                close(fd);
        for (int i = 0; i < 200 && tenant_reader_owner_stuck(env.m->reader, p ? p->cg->turn_uid : 0); i++)
                usleep(10000);
        CHECK(!tenant_reader_owner_stuck(env.m->reader, p ? p->cg->turn_uid : 0));
        add_cpu_time(DB, 3001, 1000000000);
        CHECK_INT(tick(), 0);
        CHECK(job(DB) != NULL);
        CHECK(rec(3000) && rec(3000)->reason == REASON_QUARANTINED);
        env_done();
}

/* Two users under one root-wide opt-in (a `cgroups =` rule on /user.slice, root's):
 * each user's cgroup is its own owner's, the owner of its user@UID.service, for turns,
 * the reader and the sampling slots. User 1000's process has a numa_maps read that
 * waits for good: it is quarantined and 1000's reads refused until it returns, while
 * user 2000's process is read and planned in the same tick. (Both were root's, owner
 * 0: one stuck read of one user stopped every user's reads, as in the case above.) */
TEST(a_stuck_user_does_not_take_another_users_turn_under_a_root_opt_in) {
        static const char *const users[] = { "/user.slice/user-1000.slice/user@1000.service",
                                             "/user.slice/user-2000.slice/user@2000.service" };
        struct tenant_reader *capped = NULL;
        char path[PATH_MAX + 64], fifo[PATH_MAX + 32];
        struct nb_config cfg;
        struct cg_rec *c1, *c2;
        int fd;

        if (geteuid() != 0)
                TEST_SKIP("not root: the users' cgroups cannot be given to uids 1000 and 2000");
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .page_sampling = true, .real_budgets = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        CHECK_INT(tenant_reader_new(&env.m->service.service, 500, &capped), 0);
        tenant_reader_free(env.m->reader);
        env.m->reader = capped;
        for (int u = 0; u < 2; u++) {
                const char *parts[] = { "/user.slice", u ? "/user.slice/user-2000.slice" : "/user.slice/user-1000.slice",
                                        users[u] };
                for (int k = 0; k < 3; k++) {
                        snprintf(path, sizeof(path), "%s%s", env.cgroup, parts[k]);
                        CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
                }
                snprintf(path, sizeof(path), "%s%s", env.cgroup, users[u]);
                CHECK_INT(chown(path, u ? 2000 : 1000, u ? 2000 : 1000), 0);
                strcat(path, "/cgroup.procs");
                tmptree_write(path, u ? "3001\n" : "3000\n");
        }
        put_proc(WEB, 3000);
        put_proc(DB, DB);
        snprintf(path, sizeof(path), "%s/3000/cgroup", env.proc);
        tmptree_write(path, "0::/user.slice/user-1000.slice/user@1000.service\n");
        snprintf(path, sizeof(path), "%s/%d/cgroup", env.proc, DB);
        tmptree_write(path, "0::/user.slice/user-2000.slice/user@2000.service\n");
        snprintf(fifo, sizeof(fifo), "%s/3000/numa_maps", env.proc);
        CHECK_INT(unlink(fifo), 0);
        CHECK_INT(mkfifo(fifo, 0600), 0);
        cfg = env.m->cfg;
        cfg.cgroups = (struct cgroup_rule[]) { { "/user.slice", CG_MODE_BALANCE, false, false, 0 } };
        cfg.n_cgroups = 1;
        CHECK(manager_reload(env.m, &cfg) == 0);

        CHECK_INT(tick(), 0);
        c1 = cg_records_find(&env.m->cgs, users[0]);
        c2 = cg_records_find(&env.m->cgs, users[1]);
        CHECK(c1 && c1->turn_uid == 1000);
        CHECK(c2 && c2->turn_uid == 2000);
        CHECK(cg_records_find(&env.m->cgs, "/user.slice") && cg_records_find(&env.m->cgs, "/user.slice")->turn_uid == 0);
        CHECK(rec(3000) && rec(3000)->reason == REASON_QUARANTINED);
        CHECK(tenant_reader_owner_stuck(env.m->reader, 1000));
        CHECK(!tenant_reader_owner_stuck(env.m->reader, 2000));
        /* The other user's process: read, planned, its job run, in the same tick. */
        CHECK(rec(DB) && rec(DB)->scans == 1);
        CHECK(job(DB) != NULL);
        /* Each one's sampling slots are its owner's. */
        CHECK_INT(watch_owner(3000), 1000);
        CHECK_INT(watch_owner(DB), 2000);

        fd = open(fifo, O_WRONLY | O_NONBLOCK);
        if (fd >= 0)
                close(fd);
        for (int i = 0; i < 200 && tenant_reader_owner_stuck(env.m->reader, 1000); i++)
                usleep(10000);
        env_done();
}

TEST(advise_mode_plans_and_says_so_but_moves_nothing) {
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_procs("3001\n");
        logged[0] = '\0';
        log_set_sink(log_to_buffer);
        CHECK_INT(tick(), 0);
        log_set_sink(NULL);
        CHECK_INT(env.n_jobs, 0);
        p = rec(DB);
        CHECK(p && p->target_node == 0 && p->planned_bytes == 40 * MIB);
        CHECK(strstr(logged, "cgroup=/app.slice pid=3001 comm=db: advise: would move 40960 KiB in 2 VMA(s) to node 0"));
        env_done();
}

TEST(dry_run_plans_but_moves_nothing) {
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .dry_run = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(WEB, WEB);
        set_procs("3002\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(env.n_jobs, 0);
        p = rec(WEB);
        CHECK(p && p->target_node == 1 && p->planned_bytes == 16 * MIB);
        env_done();
}

TEST(forgets_processes_that_left) {
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        put_proc(WEB, WEB);
        put_proc(DB, 3005);
        set_procs("3001\n3002\n3005\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 3);

        /* web exits (still listed: the list was read before it went); 3005 leaves the
         * cgroup, alive. */
        exit_proc(WEB);
        set_procs("3001\n3002\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 1);
        CHECK(rec(DB) && !rec(WEB) && !rec(3005));
        CHECK(source_unwatched_pid(WEB) && source_unwatched_pid(3005) && !source_unwatched_pid(DB));
        CHECK(env.m->cgs.v[0]->n_procs == 1);

        /* db stays the same record, and nothing else comes back. */
        p = rec(DB);
        CHECK_INT(tick(), 0);
        CHECK(env.m->procs.n == 1 && rec(DB) == p);
        env_done();
}

/* Both records are dropped in the same tick, with page sampling on: the sampler stops
 * watching both (the forgetting once read a record it had already freed). */
TEST(forgets_two_processes_that_exit_in_one_tick) {
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .page_sampling = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        put_proc(WEB, WEB);
        set_procs("3001\n3002\n");
        CHECK_INT(tick(), 0);
        CHECK(env.m->procs.n == 2 && watched(DB) && watched(WEB));

        exit_proc(DB);
        exit_proc(WEB);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 0);
        CHECK(!watched(DB) && !watched(WEB));
        CHECK(source_unwatched_pid(DB) && source_unwatched_pid(WEB));
        env_done();
}

/* Idle means idle: nothing attached while nothing is watched, attached before the
 * first process's first sample, detached after the last one leaves. */
TEST(samplers_attached_only_while_a_process_is_watched) {
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .page_sampling = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        set_procs("");
        CHECK_INT(tick(), 0);
        CHECK_INT(tick(), 0);
        CHECK(!armed.source_on && !armed.pages_on);
        CHECK_INT(armed.source_attaches + armed.pages_attaches, 0);

        put_proc(DB, DB);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK(armed.source_on && armed.pages_on && watched(DB));
        CHECK_INT(armed.samples_detached, 0);

        /* A second process: nothing attached again. */
        put_proc(WEB, WEB);
        set_procs("3001\n3002\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(armed.source_attaches, 1);
        CHECK_INT(armed.pages_attaches, 1);

        /* db exits: web is still watched. */
        exit_proc(DB);
        set_procs("3002\n");
        CHECK_INT(tick(), 0);
        CHECK(armed.source_on && armed.pages_on);

        /* web leaves the cgroup, alive: nothing is watched, all detached. */
        set_procs("");
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 0);
        CHECK(!armed.source_on && !armed.pages_on);
        CHECK_INT(armed.source_detaches, 1);
        CHECK_INT(armed.pages_detaches, 1);
        CHECK_INT(env.m->counters.sampler_arms, 1);

        /* It comes back: attached again. */
        set_procs("3002\n");
        CHECK_INT(tick(), 0);
        CHECK(armed.source_on && armed.pages_on);
        CHECK_INT(armed.source_attaches, 2);
        CHECK_INT(armed.samples_detached, 0);
        env_done();
}

/* Processes in a cgroup that did not opt in are not watched: nothing attached. */
TEST(nothing_attached_for_a_cgroup_that_is_off) {
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_OFF, .page_sampling = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 0);
        CHECK_INT(armed.source_attaches + armed.pages_attaches, 0);
        CHECK_INT(armed.samples_detached, 0);
        env_done();
}

/* One node with memory: said once at start, nothing attached (the processes are listed
 * all the same, nothing moved); the tick re-reads the topology, and a second node with
 * memory (hotplug) attaches the samplers for the processes admitted afresh. */
TEST(one_memory_node_attaches_nothing_until_a_second_comes) {
        char path[PATH_MAX];

        logged[0] = 0;
        log_set_sink(log_to_buffer);
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .page_sampling = true, .one_node = true })) {
                log_set_sink(NULL);
                TEST_SKIP("no CPU of 0-3 to run the service on");
        }
        CHECK(strstr(logged, "One node has memory: nothing to balance") != NULL);
        put_proc(DB, DB);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 1);
        CHECK_INT(armed.source_attaches + armed.pages_attaches, 0);
        CHECK_INT(env.n_jobs, 0);
        CHECK(strstr(logged, "nodes have memory now") == NULL);

        snprintf(path, sizeof(path), "%s/devices/system/node/has_memory", env.sys);
        tmptree_write(path, "0-1\n");
        CHECK_INT(tick(), 0);
        log_set_sink(NULL);
        CHECK(strstr(logged, "2 nodes have memory now") != NULL);
        CHECK_INT(env.m->procs.n, 1);
        CHECK(armed.source_on && armed.pages_on && watched(DB));
        env_done();
}

TEST(reused_pid_is_a_new_process) {
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .page_sampling = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK(watched(DB));

        /* db exits and a new process (web's files) gets its pid. */
        exit_proc(DB);
        put_proc(WEB, DB);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 1);
        p = rec(DB);
        CHECK(p && p->starttime == 5100 && strcmp(p->comm, "web") == 0 && p->target_node == 1);
        /* The old record is forgotten, but the page sampler keeps watching the pid:
         * it is the new process's now. */
        CHECK(source_unwatched_pid(DB));
        CHECK(watched(DB));
        env_done();
}

TEST(page_samples_move_pages_to_the_node_that_touches_them) {
        const struct sunk_job *j;
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .page_sampling = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(WEB, WEB);
        set_procs("3002\n");
        CHECK_INT(tick(), 0);
        CHECK(watched(WEB));

        /* In web's heap (node 1): a page touched only from node 0, three times; one
         * touched once (not evidence yet); one touched from both nodes (shared). */
        queue_sample(WEB, 0x5601a0001234, 0, 3);
        queue_sample(WEB, 0x5601a0002000, 0, 1);
        queue_sample(WEB, 0x5601a0003000, 0, 2);
        queue_sample(WEB, 0x5601a0003008, 1, 2);
        env.jobs_move = true;
        CHECK_INT(tick(), 0);
        /* No CPU time since the first scan: the VMA-level plan moves nothing. */
        CHECK_INT(env.n_jobs, 1);
        j = job(WEB);
        CHECK(j && j->target == 0 && j->n_ranges == 1 && has_range(j, 0x5601a0001000, 0x5601a0002000));
        p = rec(WEB);
        CHECK(p && p->reason == REASON_NO_CPU_TIME);
        CHECK(p && p->pages_seen == 3 && p->pages_shared == 1 && p->page_planned_bytes == 4096);
        /* Single pages moved are not remembered for the cooldown. */
        CHECK(p && p->moved.n_hist == 0 && p->moved.pages[MIG_MOVED] == 1);
        env_done();
}

/* Samples at addresses outside every mapping of web (between its heap and its next
 * mapping, and far above everything) are dropped and counted, never stored: the
 * same counts inside the heap make a move, these make nothing. */
TEST(page_samples_outside_the_mappings_are_dropped) {
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .page_sampling = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(WEB, WEB);
        set_procs("3002\n");
        CHECK_INT(tick(), 0);
        queue_sample(WEB, 0x7000000000, 0, 3);        /* no mapping there */
        queue_sample(WEB, 0x7ffffffff000ULL * 16, 0, 5);
        queue_sample(WEB, 0x5601a0001234, 0, 3);      /* the heap: kept */
        env.jobs_move = true;
        CHECK_INT(tick(), 0);
        p = rec(WEB);
        CHECK_INT(env.m ? manager_view(env.m)->counters->page_samples_unmapped : 0, 8);
        CHECK_INT(env.m ? manager_view(env.m)->counters->page_samples : 0, 11);
        CHECK(p && p->pages_seen == 1);
        env_done();
}

/* db's numa_maps as its worker 3003 shows it after binding itself: its own policy
 * where db's has none (lib/thread-policy). */
static void bind_worker(const char *policy) {
        char from[PATH_MAX], path[PATH_MAX], line[256], text[4096] = "";
        FILE *f;

        snprintf(from, sizeof(from), "%s/%d/numa_maps", env.proc, DB);
        f = fopen(from, "re");
        if (!f)
                abort();
        while (fgets(line, sizeof(line), f)) {
                char *sp = strchr(line, ' ');
                if (sp && strncmp(sp + 1, "default", 7) == 0) {
                        *sp = 0;
                        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s %s%s", line, policy, sp + 8);
                } else
                        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s", line);
        }
        fclose(f);
        snprintf(path, sizeof(path), "%s/%d/task/3003/numa_maps", env.proc, DB);
        tmptree_write(path, text);
}

/* db's worker bound itself to node 1, where db's private memory is: it stays there
 * although the threads run on node 0 (before: 40 MiB to node 0). A worker that
 * interleaves keeps it there too, and explain says why. */
TEST(a_threads_own_policy_is_obeyed) {
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        bind_worker("bind:1");
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(env.n_jobs, 0);
        p = rec(DB);
        CHECK(p && p->planned_bytes == 0 && p->reason == REASON_LOCAL);
        env_done();

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        bind_worker("interleave:0-1");
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(env.n_jobs, 0);
        p = rec(DB);
        CHECK(p && p->reason == REASON_THREAD_POLICY && p->skipped_bytes[REASON_THREAD_POLICY] >= 40 * MIB);
        env_done();
}

/* db locked its 32 MiB VMA (VmLck, smaps "lo"): only the 8 MiB one moves. */
TEST(mlocked_memory_is_left_alone) {
        char path[PATH_MAX], status[PATH_MAX], buf[8192], *at;
        const struct sunk_job *j;
        struct proc_rec *p;
        size_t n;
        FILE *f;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        snprintf(path, sizeof(path), "%s/%d/smaps", env.proc, DB);
        tmptree_write(path, "7f3a00000000-7f3a02000000 rw-p 00000000 00:00 0 \nSize:  32768 kB\n"
                         "VmFlags: rd wr mr mw me lo ac \n"
                         "7f3a04000000-7f3a04800000 rw-p 00000000 00:00 0 \nVmFlags: rd wr mr mw me ac \n");
        /* VmLck: 0 kB -> 32768 kB (smaps is read only then). */
        snprintf(status, sizeof(status), "%s/%d/status", env.proc, DB);
        f = fopen(status, "re");
        if (!f)
                abort();
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        at = strstr(buf, "VmLck:\t       0 kB");
        if (!at)
                abort();
        memcpy(at, "VmLck:\t   32768 kB", strlen("VmLck:\t   32768 kB"));
        tmptree_write(status, buf);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        j = job(DB);
        CHECK(j && j->n_ranges == 1 && has_range(j, 0x7f3a04000000, 0x7f3a04800000));
        p = rec(DB);
        CHECK(p && p->skipped_bytes[REASON_MLOCKED] == 32 * MIB);
        env_done();
}

TEST(moves_are_counted_and_remembered) {
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_procs("3001\n");
        env.jobs_move = true;
        CHECK_INT(tick(), 0);
        p = rec(DB);
        CHECK(p && p->moved.pages[MIG_MOVED] * page_size() == 40 * MIB);
        CHECK(p && p->cg->pages[MIG_MOVED] == p->moved.pages[MIG_MOVED]);
        CHECK(env.m->counters.total_pages[MIG_MOVED] * page_size() == 40 * MIB);
        CHECK(counters_moved_last_minute(&env.m->counters) == 40 * MIB);
        /* Both ranges, for the cooldown. */
        CHECK(p && p->moved.n_hist == 2);
        for (size_t i = 0; p && i < p->moved.n_hist; i++)
                CHECK(p->moved.hist[i].target == 0 &&
                      (p->moved.hist[i].start == 0x7f3a00000000 || p->moved.hist[i].start == 0x7f3a04000000));
        env_done();
}

TEST(settled_processes_are_scanned_less_often) {
        /* Minutes, so that "not due yet" holds however slow the machine (valgrind). */
        const uint64_t min = 600000, max = 4 * min;
        struct proc_rec *p;
        uint64_t last;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE, .scan_min_ms = min, .scan_max_ms = max }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        p = rec(DB);
        if (!p) {
                CHECK(p);
                env_done();
                return;
        }
        CHECK(p->scans == 1 && p->sched.interval_ms == min && p->sched.next_scan_ms == p->last_scan_ms + min);
        /* Not due yet: seen, not scanned. */
        CHECK_INT(tick(), 0);
        CHECK(rec(DB) == p && p->scans == 1);

        /* Due, and idle since (its threads did not run): half as often each time, down
         * to scan_max_ms. */
        for (uint64_t want = 2 * min; want <= 2 * max; want *= 2) {
                p->sched.next_scan_ms = 0;
                last = p->scans;
                CHECK_INT(tick(), 0);
                CHECK(p->scans == last + 1 && p->reason == REASON_NO_CPU_TIME);
                CHECK_INT(p->sched.interval_ms, want < max ? want : max);
        }
        /* Running again, with memory to move: scanned often again. */
        add_cpu_time(DB, 3003, 500000000);
        p->sched.next_scan_ms = 0;
        CHECK_INT(tick(), 0);
        CHECK(p->reason == REASON_NONE && p->target_node == 0);
        CHECK_INT(p->sched.interval_ms, min);
        env_done();
}

/* db with its worker (3003) last on CPU 2 (node 1) and allowed CPUs cpus: its 40 MiB
 * on node 1 stay at the first scan (a quarter of its CPU time so far is the worker's
 * there). Then only the main thread runs for a window (node 0 hot, node 1 idle), then
 * another. Returns the target node planned after each of those two windows (-1: none)
 * in *second and *third. */
static void paused_worker(const char *cpus, int *second, int *third) {
        char path[PATH_MAX], text[8192];
        struct proc_rec *p;
        FILE *f;
        size_t n;

        *second = *third = -2;
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE, .scan_min_ms = 600000,
                                            .scan_max_ms = 2400000 }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        edit_proc_file(DB, "task/3003/stat", " 17 1 0 ", " 17 2 0 ");
        snprintf(path, sizeof(path), "%s/%d/status", env.proc, DB);
        f = fopen(path, "r");
        n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
        if (f)
                fclose(f);
        text[n] = 0;
        snprintf(path, sizeof(path), "%s/%d/task/3003/status", env.proc, DB);
        tmptree_write(path, text);
        edit_proc_file(DB, "task/3003/status", "Cpus_allowed_list:\t0-3", cpus);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        p = rec(DB);
        CHECK(p && p->reason == REASON_SOURCE_IN_USE && p->hot_node == 0);
        if (!p) {
                env_done();
                return;
        }
        add_cpu_time(DB, 3001, 1000000000);
        p->sched.next_scan_ms = 0;
        CHECK_INT(tick(), 0);
        *second = p->target_node;
        add_cpu_time(DB, 3001, 1000000000);
        p->sched.next_scan_ms = 0;
        CHECK_INT(tick(), 0);
        *third = p->target_node;
        env_done();
}

/* A thread pinned to node 1 that pauses for a window keeps its memory there through
 * that window (keep_node_share_pct, scan.c keep_before): the steady-churn benchmark saw
 * a reader waiting at a barrier lose 200 MiB to the other node. One window only: still
 * idle at the next scan, its node's pages go to the hot node. */
TEST(a_paused_pinned_thread_keeps_its_memory_for_a_window) {
        int second, third;

        paused_worker("Cpus_allowed_list:\t2-3", &second, &third);
        CHECK_INT(second, -1);
        CHECK_INT(third, 0);
}

/* The same worker free to run anywhere is not known to belong to node 1: its node's
 * pages go as soon as node 0 is hot. */
TEST(a_paused_unpinned_thread_keeps_nothing) {
        int second, third;

        paused_worker("Cpus_allowed_list:\t0-3", &second, &third);
        CHECK_INT(second, 0);
        CHECK_INT(third, 0);
}

/* An env for the floor's tests: its own /sys (set_mem_free) and scans minutes apart,
 * so that only room on the target brings a scan. */
static bool env_start_floor(void) {
        const uint64_t min = 600000, max = 4 * min;   /* minutes: never due by time here */

        return env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .scan_min_ms = min, .scan_max_ms = max,
                                              .own_sys = true });
}

/* p, held back at node 0's floor after one scan: not scanned again while node 0 stays
 * as it is, and scanned at once when it has room. */
static void wait_for_room(struct proc_rec *p) {
        CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 1);
        set_mem_free(0, 989148);
        add_cpu_time(DB, 3003, 500000000);
        CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 2);
}

/* db's first tick with node 0, its target, below its 5% floor (51,524 KiB): nothing
 * planned, held back at the floor. NULL (a failed check) without its record. */
static struct proc_rec *held_back_at_the_floor(void) {
        struct proc_rec *p;

        set_mem_free(0, 40000);
        put_proc(DB, DB);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        p = rec(DB);
        CHECK(p && env.n_jobs == 0);
        CHECK(p && p->reason == REASON_TARGET_FULL && p->full_target == 0 && p->scans == 1);
        return p;
}

/* A move held back at the target's free-memory floor is planned again as soon as the
 * node has room (at least min_misplaced of it), not at the process's backed-off scan:
 * memory kept out of a full node follows once the node empties. */
TEST(held_back_at_the_floor_then_moved_when_the_node_has_room) {
        struct proc_rec *p;

        if (!env_start_floor())
                TEST_SKIP("no CPU of 0-3 to run the service on");
        p = held_back_at_the_floor();
        if (!p)
                return env_done();
        /* Still full: not scanned again. */
        CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 1);
        /* Room for less than min_misplaced: neither; then room, and moved. */
        set_mem_free(0, 51524 + 1024);
        wait_for_room(p);
        CHECK(p->reason == REASON_NONE && p->full_target == -1);
        CHECK_INT(env.n_jobs, 1);
        CHECK(job(DB) && job(DB)->target == 0);
        env_done();
}

/* pid's /proc/<pid>/statm with this many resident pages (grew()). */
static void set_resident(pid_t pid, uint64_t pages) {
        char path[PATH_MAX], text[128];

        snprintf(path, sizeof(path), "%s/%d/statm", env.proc, (int) pid);
        snprintf(text, sizeof(text), "%" PRIu64 " %" PRIu64 " 1000 10 0 %" PRIu64 " 0\n", pages * 4, pages, pages);
        tmptree_write(path, text);
}

/* db's VmRSS in its fixture, in 4 KiB pages; the growth tests' 64 MiB more. */
#define DB_RSS_PAGES (53680 / 4)
#define DB_GROWN_PAGES (DB_RSS_PAGES + 16384)

/* db seen and scanned once in an advise-mode env whose scans are minutes apart (never
 * due by time in these tests): its record, or NULL (a failed check). */
static struct proc_rec *db_scanned_once(void) {
        struct proc_rec *p;

        put_proc(DB, DB);
        set_resident(DB, DB_RSS_PAGES);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        p = rec(DB);
        CHECK(p && p->scans == 1 && p->rss_kb == 53680);
        return p && p->scans == 1 ? p : NULL;
}

/* db 64 MiB larger, by statm and by status alike (as the kernel's would say). */
static void grow_db(void) {
        set_resident(DB, DB_GROWN_PAGES);
        edit_proc_file(DB, "status", "53680", "119216");
}

/* The env of the growth tests: advise mode, scans minutes apart. */
static bool growth_env(void) {
        const uint64_t min = 600000;
        return env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE, .scan_min_ms = min, .scan_max_ms = 4 * min });
}

/* New memory in a settled process is looked at within GROW_CHECK_TICKS ticks, not at
 * its backed-off scan: growth of min_misplaced (and of 1/SCAN_GROW_SHARE of it) brings its
 * scan forward, once per growth; less does not. */
TEST(a_settled_process_that_grows_is_scanned_again) {
        struct proc_rec *p;

        if (page_size() != 4096)
                TEST_SKIP("the fixture's sizes are in 4 KiB pages");
        if (!growth_env())
                TEST_SKIP("no CPU of 0-3 to run the service on");
        if (!(p = db_scanned_once())) {
                env_done();
                return;
        }
        /* 1 MiB more: below min_misplaced (2 MiB), not scanned. */
        set_resident(DB, DB_RSS_PAGES + 256);
        for (int i = 0; i < GROW_CHECK_TICKS; i++)
                CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 1);
        /* 64 MiB more: scanned within GROW_CHECK_TICKS ticks, and counted (its status
         * says the same size, as the kernel's would). */
        grow_db();
        for (int i = 0; i < GROW_CHECK_TICKS; i++)
                CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 2);
        CHECK_INT(env.m->counters.growth_scans, 1);
        /* No growth since: not again. */
        for (int i = 0; i < 2 * GROW_CHECK_TICKS; i++)
                CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 2);
        env_done();
}

/* app.slice's memory.current (the memory controller on): grew() reads a process's
 * statm only when it grew. */
static void set_memory_current(uint64_t bytes) {
        char path[PATH_MAX], text[64];

        snprintf(path, sizeof(path), "%s/app.slice/memory.current", env.cgroup);
        snprintf(text, sizeof(text), "%" PRIu64 "\n", bytes);
        tmptree_write(path, text);
}

/* With the memory controller, a settled process is looked at only when its cgroup's
 * memory.current grew by min_misplaced: a process that grew in a cgroup that did not
 * (the file says otherwise) is not scanned; once the cgroup grows, it is, in that tick. */
TEST(growth_is_looked_for_only_in_a_cgroup_that_grew) {
        struct proc_rec *p;

        if (page_size() != 4096)
                TEST_SKIP("the fixture's sizes are in 4 KiB pages");
        if (!growth_env())
                TEST_SKIP("no CPU of 0-3 to run the service on");
        set_memory_current(100 * MIB);
        if (!(p = db_scanned_once())) {
                env_done();
                return;
        }
        /* The process grew; its cgroup (by its file) did not: not looked at. */
        grow_db();
        for (int i = 0; i < 2 * GROW_CHECK_TICKS; i++)
                CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 1);
        /* 1 MiB more in the cgroup: still not. 64 MiB: scanned in the next tick. */
        set_memory_current(101 * MIB);
        CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 1);
        set_memory_current(164 * MIB);
        CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 2);
        CHECK_INT(env.m->counters.growth_scans, 1);
        env_done();
}

/* app.slice's cpu.stat: what the cgroup's processes ran, in µs. */
static void set_cgroup_cpu(uint64_t usec) {
        char path[PATH_MAX], text[128];

        snprintf(path, sizeof(path), "%s/app.slice/cpu.stat", env.cgroup);
        snprintf(text, sizeof(text), "usage_usec %" PRIu64 "\nuser_usec %" PRIu64 "\nsystem_usec 0\n", usec, usec);
        tmptree_write(path, text);
}

/* Without the memory controller, a cgroup none of whose processes ran for
 * GROW_CHECK_TICKS ticks (cpu.stat) has none looked at: idle processes do not grow, and
 * ten thousand of them cost no statm reads. Once it runs again, they are. */
TEST(growth_is_not_looked_for_in_an_idle_cgroup) {
        struct proc_rec *p;

        if (page_size() != 4096)
                TEST_SKIP("the fixture's sizes are in 4 KiB pages");
        if (!growth_env())
                TEST_SKIP("no CPU of 0-3 to run the service on");
        set_cgroup_cpu(5000);
        if (!(p = db_scanned_once())) {
                env_done();
                return;
        }
        /* Idle for GROW_CHECK_TICKS ticks: then a process that (by its files) grew is
         * not looked at. */
        for (int i = 0; i < GROW_CHECK_TICKS; i++)
                CHECK_INT(tick(), 0);
        grow_db();
        for (int i = 0; i < 2 * GROW_CHECK_TICKS; i++)
                CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 1);
        /* The cgroup ran: looked at within GROW_CHECK_TICKS ticks. */
        set_cgroup_cpu(9000);
        for (int i = 0; i < GROW_CHECK_TICKS; i++)
                CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 2);
        CHECK_INT(env.m->counters.growth_scans, 1);
        env_done();
}

TEST(skips_what_is_not_a_process_to_watch) {
        char path[PATH_MAX], list[128];

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        /* A zombie, a kernel thread, the daemon itself, a pid without /proc. */
        snprintf(path, sizeof(path), "%s/4001", env.proc);
        mkdir(path, 0755);
        strcat(path, "/stat");
        tmptree_copy(TEST_DATA_DIR "/proc/zombie.stat", path);
        snprintf(path, sizeof(path), "%s/4002", env.proc);
        mkdir(path, 0755);
        strcat(path, "/stat");
        tmptree_copy(TEST_DATA_DIR "/proc/kthread.stat", path);
        put_proc(DB, getpid());
        snprintf(list, sizeof(list), "4001\n4002\n4003\n%d\n", (int) getpid());
        set_procs(list);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 0);
        CHECK_INT(env.n_jobs, 0);
        env_done();
}

/* Process pid's ids ("Uid:" and "Gid:" lines) become uids and gids, and its /proc
 * files belong to owner (root: not dumpable). */
static void set_ids(pid_t pid, const char *uids, const char *gids, uid_t owner) {
        char path[PATH_MAX], *text = NULL, *u, *g;
        size_t len = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%d/status", env.proc, (int) pid);
        f = fopen(path, "r");
        if (!f || getdelim(&text, &len, 0, f) < 0 || !(u = strstr(text, "Uid:")) || !(g = strstr(text, "Gid:")))
                abort();
        fclose(f);
        f = fopen(path, "w");
        *u = *g = 0;
        fprintf(f, "%sUid:\t%s\nGid:\t%s\n%s", text, uids, gids, strchr(g + 1, '\n') + 1);
        fclose(f);
        free(text);
        snprintf(path, sizeof(path), "%s/%d/stat", env.proc, (int) pid);
        if (chown(path, owner, owner) < 0)
                abort();
}

/* Under uid 1000's own opt-in: its dumpable process with all ids 1000 is watched;
 * one that is not dumpable, and one with a root euid (sudo), are not. */
TEST(a_users_opt_in_covers_that_users_processes_only) {
        if (geteuid() != 0)
                TEST_SKIP("not root: the cgroup and the /proc files must belong to uid 1000");
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .user = 1000 }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_ids(DB, "1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000", 1000);
        put_proc(DB, 3005);
        set_ids(3005, "1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000", 0);
        put_proc(DB, 3006);
        set_ids(3006, "1000\t0\t0\t0", "1000\t1000\t1000\t1000", 1000);
        put_proc(DB, 3007);
        set_ids(3007, "1000\t1000\t1000\t1000", "1000\t0\t1000\t1000", 1000);
        set_procs("3001\n3005\n3006\n3007\n");
        CHECK_INT(tick(), 0);
        CHECK(env.m->cgs.n == 1 && env.m->cgs.v[0]->covers_uid == 1000);
        CHECK_INT(env.m->procs.n, 1);
        CHECK(rec(DB) && !rec(3005) && !rec(3006) && !rec(3007));
        CHECK(job(DB) && !job(3005) && !job(3006) && !job(3007));

        /* db execs sudo: at its next scan it is not watched any more. */
        set_ids(DB, "1000\t0\t0\t0", "1000\t1000\t1000\t1000", 0);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 0);
        CHECK_INT(env.n_jobs, 0);
        env_done();
}

/* The same processes under root's opt-in (the config): all of them are watched. */
TEST(roots_opt_in_covers_every_process) {
        if (geteuid() != 0)
                TEST_SKIP("not root: the /proc files must belong to uid 1000");
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_ids(DB, "1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000", 1000);
        put_proc(DB, 3005);
        set_ids(3005, "1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000", 0);
        put_proc(DB, 3006);
        set_ids(3006, "1000\t0\t0\t0", "1000\t1000\t1000\t1000", 1000);
        set_procs("3001\n3005\n3006\n");
        CHECK_INT(tick(), 0);
        CHECK(env.m->cgs.n == 1 && env.m->cgs.v[0]->covers_uid == CGROUP_COVERS_ALL);
        CHECK_INT(env.m->procs.n, 3);
        env_done();
}

/* --- between the scan and the moves (move-check.h) ------------------------------ */

static void no_change(pid_t pid) {}

static void bind_to_node_1(pid_t pid) {
        edit_proc_file(pid, "numa_maps", "7f3a00000000 default", "7f3a00000000 bind:1");
}

static void bind_to_node_0(pid_t pid) {
        edit_proc_file(pid, "numa_maps", "7f3a00000000 default", "7f3a00000000 bind:0");
}

/* mbind() on the second half of the 32 MiB VMA: it is split in two. */
static void bind_half_to_node_1(pid_t pid) {
        edit_proc_file(pid, "numa_maps", "7f3a02000000 bind:1",
                       "7f3a01000000 bind:1 anon=4096 dirty=4096 N1=4096 kernelpagesize_kB=4\n7f3a02000000 bind:1");
}

static void interleave_all(pid_t pid) {
        edit_proc_file(pid, "numa_maps", "7f3a04000000 default", "7f3a04000000 interleave:0-1");
}

/* Its cpuset leaves node 0 (the target). */
static void cpuset_to_node_1(pid_t pid) {
        edit_proc_file(pid, "status", "Mems_allowed_list:\t0-1", "Mems_allowed_list:\t1");
}

/* An exec: another stack, so another start_stack and the rest. */
static void execs(pid_t pid) {
        edit_proc_file(pid, "stat", "140724397472928", "140724397999999");
}

static void exits(pid_t pid) {
        exit_proc(pid);
}

static void pid_reused(pid_t pid) {
        edit_proc_file(pid, "stat", " 5000 ", " 5007 ");
}

static void leaves_the_cgroup(pid_t pid) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/other.slice", env.cgroup);
        mkdir(path, 0755);
        edit_proc_file(pid, "cgroup", "0::/app.slice", "0::/other.slice");
}

static void cgroup_goes_off(pid_t pid) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/app.slice", env.cgroup);
        if (setxattr(path, "user.numabalanced", "off", 3, 0) < 0)
                abort();
}

static void cgroup_goes_advise(pid_t pid) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/app.slice", env.cgroup);
        if (setxattr(path, "user.numabalanced", "advise", 6, 0) < 0)
                abort();
}

/* db's worker binds itself to node 1 (set_mempolicy) after the scan: db's memory
 * without a VMA policy may not go to node 0 any more. */
static void worker_binds_to_node_1(pid_t pid) {
        bind_worker("bind:1");
}

/* mlock() of the 32 MiB VMA the job moves: status shows locked memory, smaps which. */
static void locks_the_vma(pid_t pid) {
        char path[PATH_MAX];

        edit_proc_file(pid, "status", "VmLck:\t       0 kB", "VmLck:\t   32768 kB");
        snprintf(path, sizeof(path), "%s/%d/smaps", env.proc, (int) pid);
        tmptree_write(path, "7f3a00000000-7f3a02000000 rw-p 00000000 00:00 0 \n"
                         "Size:              32768 kB\nLocked:            32768 kB\nVmFlags: rd wr mr mw me lo ac \n");
}

/* mlock() of another VMA (the heap, already on node 0): the job goes on. */
static void locks_another_vma(pid_t pid) {
        char path[PATH_MAX];

        edit_proc_file(pid, "status", "VmLck:\t       0 kB", "VmLck:\t    2048 kB");
        snprintf(path, sizeof(path), "%s/%d/smaps", env.proc, (int) pid);
        tmptree_write(path, "55d0c0a00000-55d0c0c00000 rw-p 00000000 00:00 0 [heap]\n"
                         "Size:               2048 kB\nLocked:             2048 kB\nVmFlags: rd wr mr mw me lo ac \n");
}

static void sudo(pid_t pid) {
        set_ids(pid, "1000\t0\t0\t0", "1000\t1000\t1000\t1000", 0);
}

static void not_dumpable(pid_t pid) {
        set_ids(pid, "1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000", 0);
}

struct change {
        const char *what;
        void (*fn)(pid_t pid);
        const char *stop;          /* what the check says, NULL: it lets the job move */
        uid_t user;                /* the opt-in: 0, the config's; -1 the test's own user.*; else that user's */
};

static const struct change changes[] = {
        { "nothing", no_change, NULL, 0 },
        { "mbind to node 1", bind_to_node_1, "policy-changed", 0 },
        { "mbind to node 0, the target", bind_to_node_0, NULL, 0 },
        { "mbind of half a VMA", bind_half_to_node_1, "policy-changed", 0 },
        { "interleave", interleave_all, "policy-changed", 0 },
        { "cpuset without the target", cpuset_to_node_1, "policy-changed", 0 },
        { "a worker thread binds itself", worker_binds_to_node_1, "thread-policy-changed", 0 },
        { "mlock of the moving VMA", locks_the_vma, "locked", 0 },
        { "mlock of another VMA", locks_another_vma, NULL, 0 },
        { "exec", execs, "exec", 0 },
        { "exit", exits, "exited", 0 },
        { "pid reused", pid_reused, "exited", 0 },
        { "moved out of the cgroup", leaves_the_cgroup, "cgroup-changed", 0 },
        { "cgroup set to off", cgroup_goes_off, "cgroup-changed", (uid_t) -1 },
        { "cgroup set to advise", cgroup_goes_advise, "cgroup-changed", (uid_t) -1 },
        { "sudo exec under a user's opt-in", sudo, "not-covered", 1000 },
        { "not dumpable under a user's opt-in", not_dumpable, "not-covered", 1000 },
        { "nothing under a user's opt-in", no_change, NULL, 1000 },
};

/* The plan of the tick's scan, and one change before its job runs: the job's check
 * says whether it may still move, and why not. */
TEST(the_check_before_moving_sees_what_changed_since_the_scan) {
        for (size_t i = 0; i < ELEMENTSOF(changes); i++) {
                const struct change *c = &changes[i];
                const struct sunk_job *j;

                if (c->user != 0 && geteuid() != 0)
                        continue;  /* only root can give the cgroup and /proc files away */
                if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .user = c->user == (uid_t) -1 ? 0 : c->user,
                                                    .xattr = c->user == (uid_t) -1 }))
                        TEST_SKIP("no CPU of 0-3 to run the service on");
                put_proc(DB, DB);
                if (c->user && c->user != (uid_t) -1)
                        set_ids(DB, "1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000", c->user);
                set_procs("3001\n");
                env.before_check = c->fn;
                logged[0] = '\0';
                log_set_sink(log_to_buffer);
                CHECK_INT(tick(), 0);
                log_set_sink(NULL);
                j = job(DB);
                /* The record and the log say why. */
                if (c->stop) {
                        char line[256];

                        CHECK(rec(DB) && rec(DB)->moved.stop && strcmp(rec(DB)->moved.stop->name, c->stop) == 0);
                        snprintf(line, sizeof(line), "cgroup=/app.slice pid=3001: migration stopped: ");
                        CHECK_MSG(strstr(logged, line) && strstr(strstr(logged, line), c->stop),
                                  "%s: the log says %s", c->what, logged);
                } else
                        CHECK(rec(DB) && !rec(DB)->moved.stop);
                CHECK_MSG(j && (c->stop ? j->checked == -ESTALE && j->stop && strcmp(j->stop, c->stop) == 0
                                        : j->checked == 0),
                          "%s: the check said %d (%s), expected %s", c->what, j ? j->checked : 99,
                          j && j->stop ? j->stop : "-", c->stop ? c->stop : "move");
                env.before_check = NULL;
                env_done();
        }
}

/* Held back at the floor, then idle: the tick that finds room scans it once (nothing
 * ran, nothing to plan), and room alone brings no scan after that. */
TEST(an_idle_process_is_not_rescanned_for_room_every_tick) {
        struct proc_rec *p;

        if (!env_start_floor())
                TEST_SKIP("no CPU of 0-3 to run the service on");
        p = held_back_at_the_floor();
        if (!p)
                return env_done();
        set_mem_free(0, 989148);
        CHECK_INT(tick(), 0);
        CHECK(p->scans == 2 && p->reason == REASON_NO_CPU_TIME && p->full_target == -1);
        CHECK_INT(tick(), 0);
        CHECK_INT(tick(), 0);
        CHECK_INT(p->scans, 2);
        env_done();
}

static void fills_node_0(pid_t pid) {
        set_mem_free(0, 40000);      /* under the 5% floor, 51,524 KiB */
}

/* Another tenant fills the target between the scan and the moves: the check stops the
 * job (its meminfo read again), and the process is planned again once the node has
 * room, as if the scan had found it full. */
TEST(a_target_filled_since_the_scan_stops_the_moves) {
        const struct sunk_job *j;
        struct proc_rec *p;

        if (!env_start_floor())
                TEST_SKIP("no CPU of 0-3 to run the service on");
        set_mem_free(0, 989148);
        put_proc(DB, DB);
        set_procs("3001\n");
        env.before_check = fills_node_0;
        logged[0] = '\0';
        log_set_sink(log_to_buffer);
        CHECK_INT(tick(), 0);
        log_set_sink(NULL);
        env.before_check = NULL;
        j = job(DB);
        p = rec(DB);
        CHECK_MSG(j && j->target == 0 && j->checked == -ESTALE && j->stop && strcmp(j->stop, "target-full") == 0,
                  "the check said %d (%s)", j ? j->checked : 99, j && j->stop ? j->stop : "-");
        CHECK_MSG(strstr(logged, "pid=3001: migration stopped: the target node fell below its free-memory floor") &&
                  strstr(logged, "(target-full)"), "the log says %s", logged);
        if (!p) {
                CHECK(p);
                env_done();
                return;
        }
        /* explain's move_stopped says it; the plan's reason stays. */
        CHECK(p->moved.stop && strcmp(p->moved.stop->name, "target-full") == 0);
        CHECK(p->full_target == 0 && p->reason == REASON_NONE && p->scans == 1);
        /* Still full: not scanned again; then room, and the job may move. */
        wait_for_room(p);
        j = job(DB);
        CHECK(j && j->target == 0 && j->checked == 0);
        env_done();
}

/* All of a tick's CPU time goes to cgroups: the walk (the opted-in cgroup its own
 * directory, the rest to the top-level cgroup they lie in), the bookkeeping, the
 * scans; only the tick's first and last steps are left. */
TEST(the_tick_charges_its_cpu_time) {
        uint64_t before = 0, after = 0, t0, took;
        struct subtree_rec *other = NULL;
        char dir[PATH_MAX];
        struct cg_rec *cg;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        /* A subtree that did not opt in: 50 cgroups to walk. */
        snprintf(dir, sizeof(dir), "%s/other.slice", env.cgroup);
        mkdir(dir, 0755);
        for (int i = 0; i < 50; i++) {
                snprintf(dir, sizeof(dir), "%s/other.slice/c%d", env.cgroup, i);
                mkdir(dir, 0755);
        }
        put_proc(DB, DB);
        put_proc(WEB, 3000);
        set_procs("3001\n3000\n");
        for (int s = 0; s < _STAGE_MAX; s++)
                before += env.m->cost.total_ns[s];
        t0 = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
        CHECK_INT(tick(), 0);
        took = clock_now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
        for (int s = 0; s < _STAGE_MAX; s++)
                after += env.m->cost.total_ns[s];
        /* 90%: CI once saw 93.4% under valgrind on a busy host (32.7 of 35.0 ms), its
         * cause not pinned down; a stage left uncharged still shows. */
        CHECK_MSG(after - before <= took && (after - before) * 100 >= took * 90,
                  "charged %" PRIu64 " ns of the tick's %" PRIu64, after - before, took);

        cg = env.m->cgs.n == 1 ? env.m->cgs.v[0] : NULL;
        CHECK(cg != NULL);
        for (int s = 0; cg && s < _STAGE_MAX; s++)
                CHECK_MSG(cg->cost_ns[s] > 0 || s == STAGE_MIGRATE || s == STAGE_REPORT,
                          "/app.slice: nothing charged to stage %d", s);
        CHECK(rec(DB) && rec(DB)->cost_ns[STAGE_READ] > 0 && rec(DB)->cost_ns[STAGE_DECIDE] > 0);
        for (size_t i = 0; i < env.m->cost.n_subtrees; i++)
                if (strcmp(env.m->cost.subtrees[i]->path, "/other.slice") == 0)
                        other = env.m->cost.subtrees[i];
        CHECK(other && other->walk_ns > 0 && env.m->cost.subtree_walk_ns >= other->walk_ns);
        /* The totals are the records' sums. */
        CHECK_INT(env.m->cost.total_ns[STAGE_WALK], (cg ? cg->cost_ns[STAGE_WALK] : 0) + env.m->cost.subtree_walk_ns);
        CHECK_INT(env.m->cost.total_ns[STAGE_READ], cg ? cg->cost_ns[STAGE_READ] : 0);
        env_done();
}

/* With the walk in the walker thread (as the daemon runs), its CPU time is measured
 * there and still charged to the cgroups walked, when the tick takes the selection:
 * /app.slice its own directory, /other.slice's 200 directories to that subtree. The
 * tick's own time is charged as before, without the walk's counted in it. */
TEST(the_walkers_walk_is_charged_to_the_cgroups) {
        uint64_t before = 0, after = 0, t0, took;
        struct subtree_rec *other = NULL;
        struct cg_rec *cg;
        char dir[PATH_MAX];
        int r;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        snprintf(dir, sizeof(dir), "%s/other.slice", env.cgroup);
        mkdir(dir, 0755);
        for (int i = 0; i < 200; i++) {
                snprintf(dir, sizeof(dir), "%s/other.slice/c%d", env.cgroup, i);
                mkdir(dir, 0755);
        }
        put_proc(DB, DB);
        set_procs("3001\n");
        r = walker_new(env.m->cfg.cgroup_root, env.m->cfg.cgroups, env.m->cfg.n_cgroups, 20, &env.m->walker);
        CHECK_INT(r, 0);
        if (r < 0)
                return env_done();
        for (int i = 0; i < 1000 && walker_walks(env.m->walker) == 0; i++)
                usleep(10000);
        CHECK(walker_walks(env.m->walker) > 0);
        t0 = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
        CHECK_INT(tick(), 0);
        took = clock_now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
        for (int s = 0; s < _STAGE_MAX; s++)
                after += s == STAGE_WALK ? 0 : env.m->cost.total_ns[s];
        /* 90%: CI once saw 93.4% under valgrind on a busy host (32.7 of 35.0 ms), its
         * cause not pinned down; a stage left uncharged still shows. */
        CHECK_MSG(after - before <= took && (after - before) * 100 >= took * 90,
                  "charged %" PRIu64 " ns besides the walk, of the tick's %" PRIu64, after - before, took);

        cg = env.m->cgs.n == 1 ? env.m->cgs.v[0] : NULL;
        CHECK(cg && cg->cost_ns[STAGE_WALK] > 0);
        for (size_t i = 0; i < env.m->cost.n_subtrees; i++)
                if (strcmp(env.m->cost.subtrees[i]->path, "/other.slice") == 0)
                        other = env.m->cost.subtrees[i];
        CHECK(other && other->walk_ns > 0);
        CHECK_INT(env.m->cost.total_ns[STAGE_WALK], (cg ? cg->cost_ns[STAGE_WALK] : 0) + env.m->cost.subtree_walk_ns);
        printf("walk charged: %" PRIu64 " us (walker thread), tick: %" PRIu64 " us\n",
               env.m->cost.total_ns[STAGE_WALK] / 1000, took / 1000);
        env_done();
}

TEST(a_real_process_is_watched_through_its_pidfd) {
        char list[32];
        pid_t child;
        int fd = (int) syscall(SYS_pidfd_open, getpid(), 0);

        if (fd < 0)
                TEST_SKIP("pidfd_open(2): %s (valgrind 3.19 does not know it)", strerror(errno));
        close(fd);
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        env.m->procs.open_pidfd = NULL;
        child = fork();
        if (child == 0) {
                for (;;)
                        pause();
        }
        CHECK(child > 0);
        put_proc(DB, child);
        snprintf(list, sizeof(list), "%d\n", (int) child);
        set_procs(list);
        CHECK_INT(tick(), 0);
        CHECK(rec(child) && rec(child)->pidfd >= 0);
        CHECK(job(child) && job(child)->target == 0);

        kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
        exit_proc(child);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 0);
        env_done();
}

/* A pidfd per process only while it is being balanced: none in advise mode, none
 * below min_rss, none with --dry-run; given up when its cgroup leaves balance mode.
 * (Every process of every opted-in cgroup had one, opened at first sight: 1,100
 * sleeping processes in an advise cgroup ran the daemon out of descriptors.) */
TEST(pidfds_only_for_processes_being_balanced) {
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        put_proc(WEB, WEB);
        set_procs("3001\n3002\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->procs.n, 2);
        CHECK_INT(env.n_pidfds, 0);

        /* Without a pidfd, a reused pid is still a new process (checked when due). */
        exit_proc(DB);
        put_proc(WEB, DB);
        CHECK_INT(tick(), 0);
        p = rec(DB);
        CHECK(p && p->starttime == 5100 && strcmp(p->comm, "web") == 0);

        /* Balance mode: one each, after their scan. */
        set_mode(CG_MODE_BALANCE);
        CHECK_INT(tick(), 0);
        CHECK_INT(pidfds_held(), 2);
        CHECK_INT(env.m->procs.n_pidfds, 2);
        /* Back to advise: given up. */
        set_mode(CG_MODE_ADVISE);
        CHECK_INT(tick(), 0);
        CHECK_INT(pidfds_held(), 0);
        CHECK_INT(env.m->procs.n_pidfds, 0);
        env_done();

        /* Balance mode, but smaller than min_rss (db has 53,680 kB resident). */
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .min_rss_kb = 1 << 20 }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(tick(), 0);
        CHECK(rec(DB) && rec(DB)->reason == REASON_TOO_SMALL);
        CHECK_INT(env.n_pidfds, 0);
        env_done();

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .dry_run = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK_INT(env.n_pidfds, 0);
        env_done();
}

/* Takes every free descriptor but `leave` (the soft limit lowered to 256 first, so
 * that this stays quick); returns how many it holds in fds. */
static size_t hog_fds(int *fds, size_t max, size_t leave) {
        size_t n = 0;
        int fd;

        while (n < max && (fd = dup(0)) >= 0)
                fds[n++] = fd;
        for (; leave > 0 && n > 0; leave--)
                close(fds[--n]);
        return n;
}

/* Out of descriptors (a tenant's processes, before the limits), the cgroup walk, a
 * listing or a cgroup.procs read fails: that is not the cgroups and their processes
 * going away. The records stay; when descriptors are back, the tick goes on. (An
 * unreadable tree used to select nothing and drop every record.) */
TEST(out_of_descriptors_keeps_what_it_knew) {
        struct rlimit saved, low;
        struct proc_rec *db, *web;
        int fds[512];

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        put_proc(WEB, WEB);
        set_procs("3001\n3002\n");
        CHECK_INT(tick(), 0);
        db = rec(DB);
        web = rec(WEB);
        CHECK(db && web && env.m->cgs.n == 1);
        if (getrlimit(RLIMIT_NOFILE, &saved) < 0)
                abort();
        low = saved;
        if (low.rlim_cur > 256)
                low.rlim_cur = 256;
        CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);

        /* No descriptor at all, then one, two, three free: the walk opens the root,
         * lists it, opens /app.slice, lists it, reads its cgroup.procs. */
        for (size_t leave = 0; leave <= 3; leave++) {
                size_t n = hog_fds(fds, ELEMENTSOF(fds), leave);

                tick();
                while (n > 0)
                        close(fds[--n]);
                CHECK_INT(env.m->procs.n, 2);
                CHECK(rec(DB) == db && rec(WEB) == web);
                CHECK(env.m->cgs.n == 1 && env.m->cgs.v[0]->seen);
        }
        CHECK(setrlimit(RLIMIT_NOFILE, &saved) == 0);

        /* Descriptors back: web left the cgroup, and that is seen. */
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        CHECK(env.m->procs.n == 1 && rec(DB) == db);
        env_done();
}

static bool under_valgrind(void) {
        const char *p = getenv("LD_PRELOAD");
        return p && strstr(p, "vgpreload");
}

/* A cgroup's record goes with the cgroup (removed, or no longer opted in), its CPU
 * time kept in the daemon's total: the records, the lists and the metrics file do not
 * grow with every cgroup ever seen. */
TEST(cgroup_records_go_with_their_cgroup) {
        struct nb_config cfg;
        char path[PATH_MAX];
        uint64_t cost_b;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        snprintf(path, sizeof(path), "%s/b.slice", env.cgroup);
        CHECK(mkdir(path, 0755) == 0);
        strcat(path, "/cgroup.procs");
        tmptree_write(path, "3002\n");
        put_proc(DB, DB);
        put_proc(WEB, WEB);
        set_procs("3001\n");
        cfg = env.m->cfg;
        cfg.cgroups = (struct cgroup_rule[]) { { "/app.slice", CG_MODE_BALANCE, false, false, 0 }, { "/b.slice", CG_MODE_ADVISE, false, false, 0 } };
        cfg.n_cgroups = 2;
        CHECK(manager_reload(env.m, &cfg) == 0);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->cgs.n, 2);
        CHECK_INT(env.m->procs.n, 2);
        cost_b = env.m->cgs.v[1]->cost_ns[STAGE_READ] + env.m->cgs.v[1]->cost_ns[STAGE_DECIDE];
        CHECK(cost_b > 0 && strcmp(env.m->cgs.v[1]->path, "/b.slice") == 0);

        /* b.slice goes: its record and its process with it. */
        snprintf(path, sizeof(path), "%s/b.slice", env.cgroup);
        tmptree_remove(path);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->cgs.n, 1);
        CHECK(env.m->cgs.n == 1 && strcmp(env.m->cgs.v[0]->path, "/app.slice") == 0);
        CHECK(!rec(WEB) && rec(DB));
        CHECK(env.m->cost.departed_ns[STAGE_READ] + env.m->cost.departed_ns[STAGE_DECIDE] == cost_b);

        /* app.slice opted out: no record left. */
        set_mode(CG_MODE_OFF);
        CHECK_INT(tick(), 0);
        CHECK_INT(env.m->cgs.n, 0);
        CHECK_INT(env.m->procs.n, 0);
        env_done();
}

/* 20,000 opted-in cgroups of one user's subtree (the inherited opt-in of /app.slice):
 * a tick finds each record by its path in constant time. The records were searched
 * linearly: 2 x 10^8 compares of paths with a long common prefix a tick (1.4 s of
 * CPU here, against 0.18 s for the whole tick now, mostly the walk). The time is not
 * checked under valgrind. */
#define USER_SUBTREE "/app.slice/user-1000.slice/user@1000.service/app.slice/tenant.scope"
TEST(twenty_thousand_cgroups_in_a_tick) {
        const unsigned n = 20000;
        char path[PATH_MAX];
        uint64_t t0, slowest = 0;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE, .real_budgets = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        snprintf(path, sizeof(path), "%s" USER_SUBTREE, env.cgroup);
        for (char *slash = strchr(path + strlen(env.cgroup) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = 0;
                (void) mkdir(path, 0755);
                *slash = '/';
        }
        if (mkdir(path, 0755) < 0)
                abort();
        for (unsigned i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s" USER_SUBTREE "/c%05u", env.cgroup, i);
                if (mkdir(path, 0755) < 0)
                        abort();
        }
        put_proc(DB, DB);
        set_procs("3001\n");
        /* CPU time, not wall time: the machine running the tests may be busy. */
        for (int t = 0; t < 3; t++) {
                t0 = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
                CHECK_INT(tick(), 0);
                if (clock_now_ns(CLOCK_THREAD_CPUTIME_ID) - t0 > slowest)
                        slowest = clock_now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
        }
        CHECK_INT(env.m->cgs.n, n + 5);
        CHECK(rec(DB) && rec(DB)->cg == cg_records_find(&env.m->cgs, "/app.slice"));
        CHECK(cg_records_find(&env.m->cgs, USER_SUBTREE "/c12345") != NULL);
        CHECK(cg_records_find(&env.m->cgs, USER_SUBTREE "/c20000") == NULL);
        printf("%u cgroups: slowest of 3 ticks %.3f s of CPU\n", n + 5, slowest / 1e9);
        if (!under_valgrind())
                CHECK(slowest < UINT64_C(700000000));
        env_done();
}

/* A process whose maps cannot be read (unreadable, or a tenant's junk) is backed off
 * like a settled one: read at every tick, a thousand of them were the whole tick. */
TEST(failed_scans_back_off) {
        const uint64_t min = 600000, max = 4 * min;
        char path[PATH_MAX];
        struct proc_rec *p;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .scan_min_ms = min, .scan_max_ms = max }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        /* Its numa_maps a directory: the read fails (EISDIR). */
        snprintf(path, sizeof(path), "%s/%d/numa_maps", env.proc, DB);
        CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0);
        set_procs("3001\n");
        CHECK_INT(tick(), 0);
        p = rec(DB);
        if (!p) {
                CHECK(p);
                env_done();
                return;
        }
        CHECK(p->scans == 0 && p->sched.interval_ms == min && p->sched.next_scan_ms > clock_now_ms() + min / 2);
        /* Due again, failing again: half as often, down to scan_max_ms. */
        for (uint64_t want = 2 * min; want <= 2 * max; want *= 2) {
                p->sched.next_scan_ms = 0;
                CHECK_INT(tick(), 0);
                CHECK_INT(p->sched.interval_ms, want < max ? want : max);
        }
        CHECK_INT(env.n_jobs, 0);
        env_done();
}

/* Each process's parsed maps are freed once it is decided, not held by the tick until
 * its jobs ran: the heap in use while the jobs run is the same as after the tick, not
 * that plus the maps of every process scanned (8 of 4,000 VMAs here: 9 MB, against
 * 80 KiB now). Not checked under valgrind, whose allocator mallinfo2() does not see. */
TEST(maps_freed_before_the_jobs_run) {
        const int n_big = 8, n_vmas = 4000;
        char path[PATH_MAX], list[256] = "3001\n";
        size_t after;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);   /* its plan makes the jobs run */
        for (int i = 0; i < n_big; i++) {
                pid_t pid = 5000 + i;
                FILE *f;

                put_proc(DB, pid);
                snprintf(path, sizeof(path), "%s/%d/numa_maps", env.proc, (int) pid);
                f = fopen(path, "w");
                if (!f)
                        abort();
                for (int v = 0; v < n_vmas; v++)
                        fprintf(f, "%llx default anon=1 dirty=1 N0=1 kernelpagesize_kB=4\n",
                                0x10000000000ull + (unsigned long long) v * 0x10000);
                fclose(f);
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%d\n", (int) pid);
        }
        set_procs(list);
        env.heap_in_jobs = 0;
        if (under_valgrind())   /* every process in one tick, however slow */
                env.m->owner_turn_ns = env.m->read_budget_ns = UINT64_C(1) << 40;
        CHECK_INT(tick(), 0);
        after = heap_in_use();
        CHECK(job(DB) != NULL && env.m->procs.n == (size_t) n_big + 1);
        printf("heap in use while the jobs ran: %zu KiB, after the tick: %zu KiB\n", env.heap_in_jobs / 1024,
               after / 1024);
        if (!under_valgrind())
                CHECK(env.heap_in_jobs < after + (1 << 20));
        env_done();
}

static unsigned n_invalid_logged, n_count_logged;

static void count_invalid_lines(int level, int error, const struct log_fields *fields, const char *msg) {
        n_invalid_logged += strstr(msg, "treating as unset") != NULL;
        n_count_logged += strstr(msg, "not logged one by one") != NULL;
}

/* Junk user.numabalanced values on 2,000 of a user's cgroups: each invalid setting is
 * logged once at most, 10 a minute, the rest counted in one line; the next ticks log
 * nothing. (1,024 were remembered, and the other 976 were logged again every tick.) A
 * setting fixed and broken again is news again. */
TEST(invalid_settings_logged_rate_limited) {
        char path[PATH_MAX];

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        snprintf(path, sizeof(path), "%s/app.slice", env.cgroup);
        if (setxattr(path, "user.numabalanced.probe", "1", 1, 0) < 0) {
                env_done();
                TEST_SKIP("%s takes no user.* xattrs: %m", env.dir);
        }
        for (unsigned i = 0; i < 2000; i++) {
                snprintf(path, sizeof(path), "%s/app.slice/c%04u", env.cgroup, i);
                if (mkdir(path, 0755) < 0 || setxattr(path, "user.numabalanced", "junk", 4, 0) < 0)
                        abort();
        }
        n_invalid_logged = n_count_logged = 0;
        log_set_sink(count_invalid_lines);
        for (int t = 0; t < 3; t++)
                CHECK_INT(tick(), 0);
        CHECK_INT(n_invalid_logged, WALKER_INVALID_LOG_BURST);
        CHECK_INT(n_count_logged, 1);

        /* A minute later (the limiter's interval restarted), c0001 is fixed, then
         * broken again: logged again. */
        env.m->tree_log.invalid_log = LOG_RATELIMIT(60000, WALKER_INVALID_LOG_BURST);
        snprintf(path, sizeof(path), "%s/app.slice/c0001", env.cgroup);
        CHECK(removexattr(path, "user.numabalanced") == 0);
        CHECK_INT(tick(), 0);
        CHECK(setxattr(path, "user.numabalanced", "junk2", 5, 0) == 0);
        CHECK_INT(tick(), 0);
        CHECK_INT(tick(), 0);
        log_set_sink(NULL);
        CHECK_INT(n_invalid_logged, WALKER_INVALID_LOG_BURST + 1);
        CHECK_INT(env.m->tree_log.n_invalid_seen, 2000);
        env_done();
}

/* A tenant (uid 1000) whose 5,000 opted-in cgroups come before root's by name, each
 * listing 40 pids that do not exist: reading them is most of the tick. Root's cgroup
 * is read second (the owners take turns), and its process's moves run once the tick
 * has read for 100 ms, not after the tenant's turn: at least 50 ms before the tick
 * ends. (In path order, with the jobs at the end, they ran at its very end.) */
TEST(a_tenants_cgroups_do_not_delay_roots_moves) {
        struct nb_config cfg;
        char path[PATH_MAX], pids[512];
        uint64_t t0, t1;

        if (geteuid() != 0)
                TEST_SKIP("not root: the tenant's cgroups cannot be given to uid 1000");
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE, .real_budgets = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        snprintf(path, sizeof(path), "%s/app.slice", env.cgroup);
        CHECK(chown(path, 1000, 1000) == 0);
        for (unsigned i = 0; i < 5000; i++) {
                pids[0] = 0;
                for (unsigned k = 0; k < 40; k++)
                        snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%u\n", 4000000 + i * 40 + k);
                snprintf(path, sizeof(path), "%s/app.slice/c%04u", env.cgroup, i);
                if (mkdir(path, 0755) < 0 || chown(path, 1000, 1000) < 0)
                        abort();
                strcat(path, "/cgroup.procs");
                tmptree_write(path, pids);
        }
        snprintf(path, sizeof(path), "%s/z.slice", env.cgroup);
        CHECK(mkdir(path, 0755) == 0);
        strcat(path, "/cgroup.procs");
        tmptree_write(path, "3001\n");
        put_proc(DB, DB);
        cfg = env.m->cfg;
        cfg.cgroups = (struct cgroup_rule[]) { { "/app.slice", CG_MODE_ADVISE, false, false, 0 }, { "/z.slice", CG_MODE_BALANCE, false, false, 0 } };
        cfg.n_cgroups = 2;
        CHECK(manager_reload(env.m, &cfg) == 0);

        env.sink_ns = 0;
        t0 = clock_now_ns(CLOCK_MONOTONIC);
        CHECK_INT(tick(), 0);
        t1 = clock_now_ns(CLOCK_MONOTONIC);
        CHECK(job(DB) != NULL);
        printf("tick %.3f s, root's jobs ran at %.3f s\n", (t1 - t0) / 1e9, (env.sink_ns - t0) / 1e9);
        /* Some of the tenant's reading (its turn is 200 ms) came after. */
        CHECK(env.sink_ns > t0 && t1 > env.sink_ns + UINT64_C(50000000));
        env_done();
}

/* The same tenant: a tick reads its cgroups for OWNER_TURN_NS at most, keeps the rest
 * as they were (their processes too) and starts the next tick where it stopped; so
 * its process in its last cgroup is found within a few ticks, and kept after. (All of
 * its cgroups were read in every tick: the tick's length was the tenant's to choose.) */
TEST(a_tenants_turn_is_bounded_and_goes_round) {
        char path[PATH_MAX], pids[512];
        unsigned kept = 0;
        int ticks;

        if (geteuid() != 0)
                TEST_SKIP("not root: the tenant's cgroups cannot be given to uid 1000");
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE, .real_budgets = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        snprintf(path, sizeof(path), "%s/app.slice", env.cgroup);
        CHECK(chown(path, 1000, 1000) == 0);
        for (unsigned i = 0; i < 5000; i++) {
                pids[0] = 0;
                for (unsigned k = 0; k < 40; k++)
                        snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%u\n", 4000000 + i * 40 + k);
                if (i == 4999)
                        strcat(pids, "3002\n");
                snprintf(path, sizeof(path), "%s/app.slice/c%04u", env.cgroup, i);
                if (mkdir(path, 0755) < 0 || chown(path, 1000, 1000) < 0)
                        abort();
                strcat(path, "/cgroup.procs");
                tmptree_write(path, pids);
        }
        put_proc(WEB, WEB);
        for (ticks = 1; ticks <= 200 && !rec(WEB); ticks++) {
                CHECK_INT(tick(), 0);
                for (size_t i = 0; i < env.m->cgs.n; i++)
                        kept += env.m->cgs.v[i]->kept_tick == env.m->counters.tick;
        }
        printf("the tenant's last cgroup read at tick %d (%u cgroup-ticks kept)\n", ticks - 1, kept);
        CHECK(rec(WEB) != NULL);
        CHECK(kept > 0);
        /* Found, it stays, whether its cgroup is read or kept. */
        for (int i = 0; i < 5; i++) {
                CHECK_INT(tick(), 0);
                CHECK(rec(WEB) != NULL);
        }
        CHECK_INT(env.m->cgs.n, 5001);
        env_done();
}

/* One cgroup listing 300,000 processes (pids that do not exist: a failed read each)
 * and one real process after them: the read stops at the owner's turn (200 ms) and
 * the next tick goes on from where it stopped, so the last process is found within a
 * few ticks, and the processes not reached stay as they were. (A cgroup was read
 * whole in one tick: one cgroup's processes made the tick as long as they liked.) */
TEST(one_big_cgroup_is_read_over_several_ticks) {
        /* Under valgrind fewer: its reading of the list alone takes most of a turn. */
        const pid_t n = under_valgrind() ? 20000 : 300000, last = 400000;
        char path[PATH_MAX];
        struct cg_rec *cg;
        FILE *f;
        int ticks;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE, .real_budgets = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        snprintf(path, sizeof(path), "%s/app.slice/cgroup.procs", env.cgroup);
        f = fopen(path, "w");
        if (!f)
                abort();
        for (pid_t pid = 10000; pid < 10000 + n; pid++)
                fprintf(f, "%d\n", (int) pid);
        fprintf(f, "%d\n", (int) last);
        fclose(f);
        put_proc(WEB, last);

        CHECK_INT(tick(), 0);
        cg = cg_records_find(&env.m->cgs, "/app.slice");
        CHECK(cg != NULL);
        if (!cg) {
                env_done();
                return;
        }
        printf("first tick: %.3f s, stopped at %zu of %d processes\n", env.m->counters.last_tick_ns / 1e9,
               cg->pid_cursor, (int) n + 1);
        CHECK(cg->kept_tick == env.m->counters.tick);
        CHECK(cg->pid_cursor > 0 && cg->pid_cursor < (size_t) n);
        CHECK(rec(last) == NULL);
        for (ticks = 2; ticks <= 60 && !rec(last); ticks++)
                CHECK_INT(tick(), 0);
        printf("the last process found at tick %d\n", ticks - 1);
        CHECK(rec(last) != NULL);
        /* Found, it stays while other parts of the list are read. */
        for (int i = 0; i < 3; i++) {
                CHECK_INT(tick(), 0);
                CHECK(rec(last) != NULL);
        }
        env_done();
}

/* A node change has the process that moved scanned on its own, react_ms later and no
 * sooner than scan_min_ms after its last scan, its time charged to it: no tick, no
 * cgroup read, the other processes untouched. (It brought the whole tick forward: a
 * tenant whose threads kept hopping had every cgroup read every react_ms.) */
TEST(a_node_change_rescans_that_process_only) {
        uint64_t ticks, web_scans, db_scans, web_read, due;
        struct proc_rec *web;

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_ADVISE, .scan_min_ms = 300, .scan_max_ms = 600000 }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        put_proc(DB, DB);
        put_proc(WEB, WEB);
        set_procs("3001\n3002\n");
        CHECK_INT(tick(), 0);
        web = rec(WEB);
        CHECK(web && rec(DB) && web->scans == 1 && rec(DB)->scans == 1);
        if (!web || !rec(DB)) {
                env_done();
                return;
        }
        ticks = env.m->counters.tick;
        web_scans = web->scans;
        db_scans = rec(DB)->scans;
        web_read = web->cost_ns[STAGE_READ];

        react_node_changed(&env.m->react, WEB, 0);
        due = web->sched.react_due_ms;
        CHECK(due >= web->last_scan_ms + 300);
        CHECK_INT(env.m->counters.node_events, 1);
        /* Not due yet: nothing. */
        react_pass(&env.m->react);
        CHECK_INT(web->scans, web_scans);
        /* The cgroup's list empties: a react pass does not read it. */
        set_procs("");
        while (clock_now_ms() < due)
                usleep(10000);
        react_pass(&env.m->react);
        CHECK_INT(web->scans, web_scans + 1);
        CHECK_INT(rec(DB)->scans, db_scans);
        CHECK_INT(env.m->counters.tick, ticks);
        CHECK_INT(env.m->counters.react_scans, 1);
        CHECK(web->cost_ns[STAGE_READ] > web_read);
        CHECK_INT(web->sched.react_due_ms, 0);

        /* A hundred hops right after: one react scan, scan_min_ms after the last. */
        for (int i = 0; i < 100; i++)
                react_node_changed(&env.m->react, WEB, i % 2);
        CHECK(web->sched.react_due_ms >= web->last_scan_ms + 300);
        react_pass(&env.m->react);
        CHECK_INT(web->scans, web_scans + 1);
        CHECK_INT(env.m->counters.react_scans, 1);

        /* A process that left is not scanned: its record goes at the next tick. */
        while (clock_now_ms() < web->sched.react_due_ms)
                usleep(10000);
        CHECK_INT(tick(), 0);       /* the empty list: both forgotten */
        CHECK(rec(WEB) == NULL);
        react_pass(&env.m->react);
        CHECK_INT(env.m->counters.react_scans, 1);
        env_done();
}

/* Ten processes of a tenant (uid 1000's cgroup) with 40 MiB each to move, and root's
 * one with 16 MiB: root's job is second in the run, not last (largest first across
 * everyone put it behind all of the tenant's); and with a rate limit each owner gets
 * at most its share of what the run may move (4 MB/s for 10 s, halved: the tenant's
 * first job only, and root's). */
static void tenant_and_root(uint64_t rate_mb_s) {
        struct nb_config cfg;
        char path[PATH_MAX], list[512] = "";

        snprintf(path, sizeof(path), "%s/app.slice", env.cgroup);
        CHECK(chown(path, 1000, 1000) == 0);
        for (pid_t pid = 5000; pid < 5010; pid++) {
                put_proc(DB, pid);
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%d\n", (int) pid);
        }
        set_procs(list);
        snprintf(path, sizeof(path), "%s/z.slice", env.cgroup);
        CHECK(mkdir(path, 0755) == 0);
        strcat(path, "/cgroup.procs");
        tmptree_write(path, "6000\n");
        put_proc(WEB, 6000);
        cfg = env.m->cfg;
        cfg.cgroups = (struct cgroup_rule[]) { { "/app.slice", CG_MODE_BALANCE, false, false, 0 }, { "/z.slice", CG_MODE_BALANCE, false, false, 0 } };
        cfg.n_cgroups = 2;
        cfg.rate_limit_mb_s = rate_mb_s;
        CHECK(manager_reload(env.m, &cfg) == 0);
        CHECK_INT(tick(), 0);
}

TEST(owners_take_turns_in_a_run) {
        size_t at = SIZE_MAX;

        if (geteuid() != 0)
                TEST_SKIP("not root: the tenant's cgroup cannot be given to uid 1000");
        /* The order within one run is what is asserted; under valgrind the tick's
         * reads outlast PASS_JOBS_EARLY_NS and its jobs run in several calls (seen: 9 jobs
         * in the last, root's at 8), so the run is not one list any more. */
        if (under_valgrind())
                TEST_SKIP("under valgrind the tick's jobs run early, in several calls");
        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .scan_min_ms = 1000, .scan_max_ms = 60000, .real_budgets = true }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        tenant_and_root(0);     /* no rate limit: no share */
        CHECK_INT(env.n_jobs, 11);
        for (size_t i = 0; i < env.n_jobs; i++)
                if (env.jobs[i].pid == 6000)
                        at = i;
        CHECK_INT(at, 1);
        env_done();

        if (!env_start(&(struct env_opts) { .mode = CG_MODE_BALANCE, .scan_min_ms = 1000, .scan_max_ms = 60000 }))
                TEST_SKIP("no CPU of 0-3 to run the service on");
        tenant_and_root(4);
        CHECK_INT(env.n_jobs, 2);
        CHECK(job(6000) != NULL && job(5000) != NULL);
        env_done();
}

DEFINE_TEST_MAIN()
