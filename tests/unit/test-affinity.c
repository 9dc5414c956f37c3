/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/affinity: threads of this test process (no privilege needed for our own
 * threads) narrowed to a CPU and given back: the state file written before each
 * change, undo, a thread the "application" changed, a thread created by a placed
 * thread, processes forked by a placed thread (exec'd or not, their parent alive or
 * exited), a "previous run" killed before its undo, a thread placed again on another
 * node with the daemon killed before or after its change (and a thread it created
 * meanwhile), a format-2 file, state files that must change nothing, and the
 * never-widen rule. Needs two CPUs in this process's affinity (skipped otherwise). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "affinity.h"
#include "log.h"
#include "proc.h"
#include "test.h"
#include "tmptree.h"

static nb_cpumask all_cpus;     /* this process's affinity at start */
static unsigned cpu_a, cpu_b;   /* its first two CPUs */
static char dir[64];            /* the temporary state directory */
static char state[128];         /* <dir>/run/affinity: its directory made by the keeper */
static uint64_t my_start;
static char header[128];        /* a state file's first two lines, as this boot's keeper writes them */
static char header_2[128];      /* the same in format 2, which has no previous placed mask */
#define HEADER_LINES 2
static char logged[16384];      /* what the keeper logged since the last clear_log() */

/* --- threads ------------------------------------------------------------------- */

enum { CMD_WAIT, CMD_SPAWN, CMD_EXIT, CMD_FORK };

/* What a process forked by a worker (CMD_FORK) does: wait, exec /bin/sleep, or set
 * its own mask (own_set) and wait. */
enum { FORK_PAUSE, FORK_EXEC, FORK_OWN_MASK };
static cpu_set_t *own_set;
static size_t own_size;

/* A thread of the "application": reports its tid, then does what it is told. */
struct worker {
        pthread_t th;
        pid_t tid;
        uint64_t start;
        sem_t ready, go;
        int cmd;
        struct worker *child;   /* made on CMD_SPAWN, from this thread: it inherits our mask */
        int fork_mode;          /* CMD_FORK: FORK_* */
        pid_t forked;           /* made on CMD_FORK, from this thread: it inherits our mask */
};

/* The child of fork(): only what is safe after a fork of a threaded process. */
static void forked_main(int mode) {
        if (mode == FORK_EXEC) {
                execl("/bin/sleep", "sleep", "600", (char *) NULL);
                _exit(127);
        }
        if (mode == FORK_OWN_MASK && sched_setaffinity(0, own_size, own_set) < 0)
                _exit(1);
        for (;;)
                pause();
}

static void worker_start(struct worker *w);

static void *worker_main(void *arg) {
        struct worker *w = arg;

        w->tid = (pid_t) syscall(SYS_gettid);
        sem_post(&w->ready);
        for (;;) {
                sem_wait(&w->go);
                if (w->cmd == CMD_EXIT)
                        return NULL;
                if (w->cmd == CMD_SPAWN) {
                        w->child = calloc(1, sizeof(*w->child));
                        worker_start(w->child);
                }
                if (w->cmd == CMD_FORK) {
                        w->forked = fork();
                        if (w->forked == 0)
                                forked_main(w->fork_mode);
                }
                sem_post(&w->ready);
        }
}

static void worker_start(struct worker *w) {
        struct proc_stat st;

        sem_init(&w->ready, 0, 0);
        sem_init(&w->go, 0, 0);
        if (pthread_create(&w->th, NULL, worker_main, w) != 0)
                abort();
        sem_wait(&w->ready);
        if (proc_read_task_stat("/proc", getpid(), w->tid, &st) < 0)
                abort();
        w->start = st.starttime;
}

static void worker_tell(struct worker *w, int cmd) {
        w->cmd = cmd;
        sem_post(&w->go);
        if (cmd == CMD_EXIT)
                pthread_join(w->th, NULL);
        else
                sem_wait(&w->ready);
}

static void worker_stop(struct worker *w) {
        if (w->child) {
                worker_stop(w->child);
                free(w->child);
                w->child = NULL;
        }
        worker_tell(w, CMD_EXIT);
}

/* --- masks --------------------------------------------------------------------- */

static nb_cpumask mask_of(pid_t tid) {
        cpu_set_t *set = CPU_ALLOC(NB_CPUS_MAX);
        size_t size = CPU_ALLOC_SIZE(NB_CPUS_MAX);
        nb_cpumask m = {};

        CPU_ZERO_S(size, set);
        if (sched_getaffinity(tid, size, set) < 0)
                abort();
        for (unsigned c = 0; c < NB_CPUS_MAX; c++)
                if (CPU_ISSET_S(c, size, set))
                        cpumask_set(&m, c);
        CPU_FREE(set);
        return m;
}

/* What the "application" does: its own sched_setaffinity. */
static void set_mask(pid_t tid, const nb_cpumask *m) {
        cpu_set_t *set = CPU_ALLOC(NB_CPUS_MAX);
        size_t size = CPU_ALLOC_SIZE(NB_CPUS_MAX);

        CPU_ZERO_S(size, set);
        CPUMASK_FOREACH(c, m)
                CPU_SET_S((size_t) c, size, set);
        if (sched_setaffinity(tid, size, set) < 0)
                abort();
        CPU_FREE(set);
}

static nb_cpumask one_cpu(unsigned c) {
        nb_cpumask m = {};
        cpumask_set(&m, c);
        return m;
}

static nb_cpumask two_cpus(unsigned a, unsigned b) {
        nb_cpumask m = one_cpu(a);
        cpumask_set(&m, b);
        return m;
}

#define CHECK_MASK(tid, m) do {                                                 \
        nb_cpumask _got = mask_of(tid), _want = (m);                            \
        char _g[64], _w[64];                                                    \
        cpumask_format(&_got, _g, sizeof(_g));                                  \
        cpumask_format(&_want, _w, sizeof(_w));                                 \
        CHECK_MSG(cpumask_equal(&_got, &_want), "thread %d has CPUs %s, expected %s", (int) (tid), _g, _w); \
        } while (0)

/* --- processes ----------------------------------------------------------------- */

static bool comm_is(pid_t pid, const char *comm) {
        char path[64], buf[64] = "";
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return false;
        if (!fgets(buf, sizeof(buf), f))
                buf[0] = 0;
        fclose(f);
        buf[strcspn(buf, "\n")] = 0;
        return strcmp(buf, comm) == 0;
}

/* Waits up to 5 s for cond, checked every ms. */
#define WAIT_FOR(cond) do {                                                     \
        for (int _i = 0; _i < 5000 && !(cond); _i++)                            \
                usleep(1000);                                                   \
        } while (0)

static bool has_mask(pid_t tid, const nb_cpumask *m) {
        nb_cpumask got = mask_of(tid);
        return cpumask_equal(&got, m);
}

/* A process forked by worker x (its thread narrowed or not), doing mode; exec'd (or
 * its own mask set) by the time this returns. */
static pid_t fork_from(struct worker *x, int mode) {
        x->fork_mode = mode;
        worker_tell(x, CMD_FORK);
        if (x->forked < 0)
                abort();
        if (mode == FORK_EXEC)
                WAIT_FOR(comm_is(x->forked, "sleep"));
        if (mode == FORK_OWN_MASK) {
                nb_cpumask want = {};
                for (unsigned c = 0; c < NB_CPUS_MAX; c++)
                        if (CPU_ISSET_S(c, own_size, own_set))
                                cpumask_set(&want, c);
                WAIT_FOR(has_mask(x->forked, &want));
        }
        return x->forked;
}

static void kill_wait(pid_t pid) {
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
}

static uint64_t start_of(pid_t pid) {
        struct proc_stat st;

        if (proc_read_stat("/proc", pid, &st) < 0)
                abort();
        return st.starttime;
}

static char *my_cgroup;         /* this process's cgroup, as /proc/self/cgroup names it */

/* This process's cgroup.procs as the placer would hand it: the candidates. */
static int adopt_from_me(struct affinity_keeper *k, const pid_t *cands, size_t n, struct affinity_counts *c) {
        pid_t me = getpid();
        return affinity_adopt(k, my_cgroup, &me, &my_start, 1, cands, n, c);
}

/* --- the state file ------------------------------------------------------------ */

static char *read_state(void) {
        static char buf[65536];
        FILE *f = fopen(state, "re");
        size_t n;

        buf[0] = 0;
        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        return buf;
}

static void write_state(const char *text) {
        if (tmptree_write(state, text) < 0)
                abort();
        chmod(state, 0600);
}

static unsigned count_lines(const char *s) {
        unsigned n = 0;
        for (; s && *s; s++)
                n += *s == '\n';
        return n;
}

static void clear_log(void) {
        logged[0] = 0;
}

/* The state file's refused copies (<state>.refused-*), oldest first: how many, and the
 * newest's path. */
static unsigned refused_files(char *newest, size_t size) {
        char run[96 + 8];
        struct dirent **names;
        unsigned found = 0;
        int n;

        snprintf(run, sizeof(run), "%s/run", dir);
        n = scandir(run, &names, NULL, alphasort);
        for (int i = 0; i < n; i++) {
                if (strncmp(names[i]->d_name, AFFINITY_STATE_FILE ".refused-", strlen(AFFINITY_STATE_FILE) + 9) == 0) {
                        found++;
                        if (newest && (size_t) snprintf(newest, size, "%s/%s", run, names[i]->d_name) >= size)
                                abort();
                }
                free(names[i]);
        }
        free(names);
        return found;
}

static void remove_refused(void) {
        char path[256];

        while (refused_files(path, sizeof(path)) > 0)
                if (unlink(path) < 0)
                        abort();
}

static char *read_path(const char *path) {
        static char buf[65536];
        FILE *f = fopen(path, "re");
        size_t n;

        buf[0] = 0;
        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        return buf;
}

/* The line a keeper writes for one of our threads, with no previous placed mask. */
static void state_line(char *buf, size_t size, pid_t tid, uint64_t tid_start, const char *original,
                       const char *placed, unsigned flags) {
        snprintf(buf, size, "%d %" PRIu64 " %d %" PRIu64 " %s %s - %u\n", (int) getpid(), my_start, (int) tid,
                 tid_start, original, placed, flags);
}

/* --- a test's setting ---------------------------------------------------------- */

#define N 3
static struct worker w[N];

static void start_workers(void) {
        for (int i = 0; i < N; i++) {
                memset(&w[i], 0, sizeof(w[i]));
                worker_start(&w[i]);
                CHECK_MASK(w[i].tid, all_cpus);
        }
}

static void stop_workers(void) {
        for (int i = 0; i < N; i++)
                worker_stop(&w[i]);
}

/* Places the N workers on cpu_a, each expected to have the mask it has now. */
static int place_workers(struct affinity_keeper *k, const nb_cpumask *node, struct affinity_counts *c) {
        pid_t tids[N];
        uint64_t starts[N];
        nb_cpumask expect[N];

        size_t n = 0;

        for (int i = 0; i < N; i++) {
                if (w[i].tid == 0)
                        continue;    /* exited */
                tids[n] = w[i].tid;
                starts[n] = w[i].start;
                expect[n++] = mask_of(w[i].tid);
        }
        return affinity_place(k, getpid(), my_start, -1, tids, starts, expect, n, node, c);
}

/* The hook: right before each change, the state file already holds the thread's line
 * with its original and the mask about to be set. */
static unsigned hook_calls, hook_found;
static char snapshot[65536];    /* the file as it was at the first change */

static void before_set(void *userdata, pid_t tid, const nb_cpumask *mask) {
        const char *text = read_state();
        char want[64];

        if (hook_calls++ == 0)
                snprintf(snapshot, sizeof(snapshot), "%s", text ? text : "");
        cpumask_format(mask, want, sizeof(want));
        for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                int pid, t;
                unsigned flags;
                uint64_t s1, s2;
                char original[64], placed[64], previous[64];

                if (sscanf(l, "%d %" SCNu64 " %d %" SCNu64 " %63s %63s %63s %u", &pid, &s1, &t, &s2, original,
                           placed, previous, &flags) == 8 && pid == getpid() && t == tid &&
                    strcmp(placed, want) == 0 && flags == 0) {
                        hook_found++;
                        break;
                }
        }
}

/* --- the cases ----------------------------------------------------------------- */

TEST(place_writes_first_then_undo_restores) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);
        int first = -2;
        char *text;

        start_workers();
        hook_calls = hook_found = 0;
        affinity_keeper_set_hook(k, before_set, NULL);
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(c.placed, N);
        CHECK_INT(c.failed, 0);
        CHECK_INT(hook_calls, N);
        CHECK_INT(hook_found, N);      /* each line on disk before its change */
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, node);
        CHECK_MASK((pid_t) syscall(SYS_gettid), all_cpus);     /* not given: not touched */
        CHECK_INT(affinity_held(k), N);
        CHECK(affinity_is_placed(k, getpid(), &first));
        CHECK_INT(first, cpu_a);
        text = read_state();
        CHECK(text && strncmp(text, header, strlen(header)) == 0);
        {
                struct stat st;
                CHECK(stat(state, &st) == 0 && (st.st_mode & 0777) == 0600);
        }

        c = (struct affinity_counts) {};
        CHECK_INT(affinity_check(k, getpid(), my_start, &c), N);
        CHECK_INT(c.left_alone + c.placed + c.gone, 0);

        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, N);
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, all_cpus);
        CHECK_INT(affinity_held(k), 0);
        CHECK(!affinity_is_placed(k, getpid(), NULL));
        CHECK_INT(count_lines(read_state()), HEADER_LINES);    /* the header alone */
        stop_workers();
        affinity_keeper_free(k);
}

TEST(application_change_left_alone) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), mine = one_cpu(cpu_b);

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        set_mask(w[1].tid, &mine);      /* the application pins its thread itself */

        c = (struct affinity_counts) {};
        CHECK_INT(affinity_check(k, getpid(), my_start, &c), N - 1);
        CHECK_INT(c.left_alone, 1);
        CHECK_INT(affinity_held(k), N - 1);
        /* placed again: the thread stays the application's */
        c = (struct affinity_counts) {};
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(c.left_alone, N);     /* two already there, one the application's */
        CHECK_MASK(w[1].tid, mine);

        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, N - 1);
        CHECK_INT(c.left_alone, 1);
        CHECK_MASK(w[0].tid, all_cpus);
        CHECK_MASK(w[1].tid, mine);
        CHECK_MASK(w[2].tid, all_cpus);
        stop_workers();
        affinity_keeper_free(k);
}

TEST(all_changed_by_the_application_forgotten) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), mine = one_cpu(cpu_b);

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        for (int i = 0; i < N; i++)
                set_mask(w[i].tid, &mine);
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_check(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.left_alone, N);
        CHECK(!affinity_is_placed(k, getpid(), NULL));
        CHECK_INT(count_lines(read_state()), HEADER_LINES);    /* nothing left to undo */
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, 0);
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, mine);
        stop_workers();
        affinity_keeper_free(k);
}

TEST(decision_on_a_stale_mask_not_applied) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), stale = one_cpu(cpu_b);
        pid_t tid;
        uint64_t start;

        start_workers();
        tid = w[0].tid;
        start = w[0].start;
        /* decided on a mask the thread no longer has */
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, &stale, 1, &node, &c), 0);
        CHECK_INT(c.placed, 0);
        CHECK_INT(c.left_alone, 1);
        CHECK_MASK(tid, all_cpus);
        /* a wrong thread start time: another thread with that tid */
        c = (struct affinity_counts) {};
        start++;
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, NULL, 1, &node, &c), 0);
        CHECK_INT(c.gone, 1);
        CHECK_MASK(tid, all_cpus);
        CHECK_INT(affinity_held(k), 0);
        stop_workers();
        affinity_keeper_free(k);
}

TEST(tid_given_twice_placed_once) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);
        pid_t tids[2];
        uint64_t starts[2];

        start_workers();
        tids[0] = tids[1] = w[0].tid;
        starts[0] = starts[1] = w[0].start;
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, tids, starts, NULL, 2, &node, &c), 0);
        CHECK_INT(c.placed, 1);
        CHECK_INT(c.left_alone, 0);
        CHECK_INT(affinity_held(k), 1);
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, 1);
        CHECK_MASK(w[0].tid, all_cpus);
        stop_workers();
        affinity_keeper_free(k);
}

TEST(new_thread_of_a_placed_thread_restored) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);
        struct worker *child, *child2, other;

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        worker_tell(&w[2], CMD_SPAWN);
        child = w[2].child;
        CHECK_MASK(child->tid, node);   /* inherited at clone */

        /* and one born with a mask of its own (from the main thread, never placed) */
        memset(&other, 0, sizeof(other));
        worker_start(&other);

        c = (struct affinity_counts) {};
        CHECK_INT(affinity_check(k, getpid(), my_start, &c), N + 1);
        CHECK_INT(c.placed, 1);
        CHECK_INT(affinity_held(k), N + 1);
        /* its application later sets it to our very mask: still not ours */
        set_mask(other.tid, &node);

        /* one more, created after the last check: undo finds it too */
        worker_tell(child, CMD_SPAWN);
        child2 = child->child;
        CHECK_MASK(child2->tid, node);

        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, N + 2);
        CHECK_MASK(child->tid, all_cpus);
        CHECK_MASK(child2->tid, all_cpus);
        CHECK_MASK(other.tid, node);
        worker_stop(&other);
        stop_workers();
        affinity_keeper_free(k);
}

TEST(crash_then_recover_restores) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), mine = one_cpu(cpu_b);

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        worker_tell(&w[0], CMD_SPAWN);  /* inherits our mask, never checked before the crash */
        affinity_keeper_free(k);        /* killed: no undo */
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, node);
        set_mask(w[2].tid, &mine);      /* changed by the application while no daemon ran */

        k = affinity_keeper_new(state, "/proc");
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_recover(k, &c), 0);
        CHECK_INT(c.restored, N - 1 + 1);
        CHECK_INT(c.left_alone, 1);
        CHECK_MASK(w[0].tid, all_cpus);
        CHECK_MASK(w[0].child->tid, all_cpus);
        CHECK_MASK(w[1].tid, all_cpus);
        CHECK_MASK(w[2].tid, mine);
        CHECK_INT(count_lines(read_state()), HEADER_LINES);
        CHECK_INT(affinity_held(k), 0);
        /* a second start finds nothing to do */
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_recover(k, &c), 0);
        CHECK_INT(c.restored + c.left_alone + c.gone + c.failed, 0);
        stop_workers();
        affinity_keeper_free(k);
}

TEST(killed_between_write_and_change) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);

        start_workers();
        hook_calls = hook_found = 0;
        affinity_keeper_set_hook(k, before_set, NULL);
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(affinity_undo(k, getpid(), my_start, NULL), 0);
        affinity_keeper_free(k);
        /* the file as a daemon killed right before its first change left it */
        CHECK_INT(count_lines(snapshot), HEADER_LINES + N + 1);    /* header, the workers, the main thread as known */
        write_state(snapshot);
        k = affinity_keeper_new(state, "/proc");
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_recover(k, &c), 0);
        CHECK_INT(c.restored, 0);
        CHECK_INT(c.left_alone, N);     /* still their original: nothing to do */
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, all_cpus);
        CHECK_INT(count_lines(read_state()), HEADER_LINES);
        stop_workers();
        affinity_keeper_free(k);
}

/* Whether text has tid's line with these masks (previous "-": none) and no flag. */
static bool has_line(const char *text, pid_t tid, const nb_cpumask *original, const nb_cpumask *placed,
                     const nb_cpumask *previous) {
        char o[64], p[64], q[64] = "-", line[256];
        struct worker *x = NULL;

        for (int i = 0; i < N; i++)
                if (w[i].tid == tid)
                        x = &w[i];
        cpumask_format(original, o, sizeof(o));
        cpumask_format(placed, p, sizeof(p));
        if (previous)
                cpumask_format(previous, q, sizeof(q));
        snprintf(line, sizeof(line), "\n%d %" PRIu64 " %d %" PRIu64 " %s %s %s 0\n", (int) getpid(), my_start,
                 (int) tid, x ? x->start : 0, o, p, q);
        return text && strstr(text, line);
}

/* A recovery from text (the state file a killed daemon left) with the workers' masks
 * as they are now: restored threads, those left alone. */
static void recover_from(const char *text, unsigned restored, unsigned left_alone) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};

        write_state(text);
        CHECK_INT(affinity_recover(k, &c), 0);
        CHECK_INT(c.restored, restored);
        CHECK_INT(c.left_alone, left_alone);
        CHECK_INT(count_lines(read_state()), HEADER_LINES);
        affinity_keeper_free(k);
}

/* A thread placed on cpu_a, placed again on cpu_b: the round's write, before the
 * change, says both. Killed right before the change (the thread still on cpu_a, the
 * file saying cpu_b), the next start gives it back all the same. */
TEST(placed_again_killed_before_the_change) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), on_b = one_cpu(cpu_b);
        pid_t tid;
        uint64_t start;

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK(has_line(read_state(), w[0].tid, &all_cpus, &node, NULL));
        hook_calls = hook_found = 0;
        affinity_keeper_set_hook(k, before_set, NULL);
        tid = w[0].tid;
        start = w[0].start;
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, &node, 1, &on_b, &c), 0);
        CHECK_INT(c.placed, 1);
        CHECK_INT(hook_found, 1);
        CHECK_MASK(w[0].tid, on_b);
        CHECK_MSG(has_line(snapshot, w[0].tid, &all_cpus, &on_b, &node), "the file before the change: %s", snapshot);
        affinity_keeper_free(k);        /* killed: no undo */
        set_mask(w[0].tid, &node);      /* as it was when the file was written: the change not made */
        recover_from(snapshot, N, 0);
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, all_cpus);
        stop_workers();
}

/* The same, killed after the change and before the next write (the thread on cpu_b):
 * given back; the next write drops the previous mask. */
TEST(placed_again_killed_after_the_change) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), on_b = one_cpu(cpu_b);
        char *after_change;
        pid_t tid;
        uint64_t start;

        start_workers();
        affinity_keeper_set_batched(k, true);
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(affinity_commit(k), 0);
        tid = w[0].tid;
        start = w[0].start;
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, &node, 1, &on_b, &c), 0);
        CHECK_INT(affinity_commit(k), 0);
        CHECK_INT(c.placed, 1);
        CHECK_MASK(w[0].tid, on_b);
        after_change = strdup(read_state());
        CHECK_MSG(has_line(after_change, w[0].tid, &all_cpus, &on_b, &node), "the file after the change: %s",
                  after_change);
        CHECK(has_line(after_change, w[1].tid, &all_cpus, &node, NULL));
        /* the next round's write: the previous mask is ours no more */
        CHECK_INT(affinity_commit(k), 0);
        CHECK_MSG(has_line(read_state(), w[0].tid, &all_cpus, &on_b, NULL), "the next write: %s", read_state());
        affinity_keeper_free(k);        /* killed: no undo */
        recover_from(after_change, N, 0);
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, all_cpus);
        free(after_change);
        stop_workers();
}

/* Placed again, killed, and its application sets a mask of its own, neither the
 * placed nor the previous one: left alone, as any thread whose mask is not ours. */
TEST(placed_again_then_set_by_the_application) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), on_b = one_cpu(cpu_b), mine = two_cpus(cpu_a, cpu_b);
        pid_t tid;
        uint64_t start;

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        hook_calls = hook_found = 0;
        affinity_keeper_set_hook(k, before_set, NULL);
        tid = w[0].tid;
        start = w[0].start;
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, &node, 1, &on_b, &c), 0);
        CHECK(has_line(snapshot, w[0].tid, &all_cpus, &on_b, &node));
        affinity_keeper_free(k);        /* killed: no undo */
        set_mask(w[0].tid, &mine);
        recover_from(snapshot, N - 1, 1);
        CHECK_MASK(w[0].tid, mine);
        CHECK_MASK(w[1].tid, all_cpus);
        set_mask(w[0].tid, &all_cpus);
        stop_workers();
}

/* The hook that makes w[0] create a thread right before w[0]'s change, once. */
static bool spawn_armed;

static void spawn_before_set(void *userdata, pid_t tid, const nb_cpumask *mask) {
        if (spawn_armed && tid == w[0].tid) {
                spawn_armed = false;
                worker_tell(&w[0], CMD_SPAWN);
        }
}

/* A thread created by a thread placed again, between the round's write and the
 * thread's change, carries the previous mask: still ours, given the original by the
 * next check (live) or by a recovery from the file the round left (killed), though
 * no other thread carries that mask any more. */
TEST(thread_created_before_the_change_followed) {
        nb_cpumask node = one_cpu(cpu_a), on_b = one_cpu(cpu_b), orig;

        for (int killed = 0; killed < 2; killed++) {
                struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
                struct affinity_counts c = {};
                char *after_change;
                pid_t tid;
                uint64_t start;

                start_workers();
                affinity_keeper_set_batched(k, true);
                tid = w[0].tid;
                start = w[0].start;
                CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, NULL, 1, &node, &c), 0);
                CHECK_INT(affinity_commit(k), 0);
                affinity_keeper_set_hook(k, spawn_before_set, NULL);
                spawn_armed = true;
                CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, &node, 1, &on_b, &c), 0);
                CHECK_INT(affinity_commit(k), 0);
                CHECK(w[0].child != NULL);
                CHECK_MASK(w[0].tid, on_b);
                CHECK_MASK(w[0].child->tid, node);
                after_change = strdup(read_state());
                c = (struct affinity_counts) {};
                if (!killed) {
                        CHECK_INT(affinity_check(k, getpid(), my_start, &c), 2);
                        CHECK_INT(c.placed, 1);
                        CHECK(affinity_original(k, getpid(), w[0].child->tid, &orig) &&
                              cpumask_equal(&orig, &all_cpus));
                        CHECK_INT(affinity_commit(k), 0);
                        c = (struct affinity_counts) {};
                        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
                        CHECK_INT(c.restored, 2);
                        affinity_keeper_free(k);
                } else {
                        affinity_keeper_free(k);        /* killed: no undo */
                        recover_from(after_change, 2, 0);
                }
                CHECK_MSG(has_mask(w[0].child->tid, &all_cpus), "case %d: the thread created before the change "
                          "was not given its original back", killed);
                CHECK_MASK(w[0].tid, all_cpus);
                free(after_change);
                stop_workers();
        }
}

/* A thread created by a placed thread after its placement and before any check, its
 * process then placed again: the round takes it for what it is (born with our mask,
 * adopted with the donor's original), not for a thread the application had, and the
 * undo gives it its original back. */
TEST(thread_born_before_a_new_placement_adopted) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), on_b = one_cpu(cpu_b);
        pid_t tid;
        uint64_t start;

        start_workers();
        affinity_keeper_set_batched(k, true);
        tid = w[0].tid;
        start = w[0].start;
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, NULL, 1, &node, &c), 0);
        CHECK_INT(affinity_commit(k), 0);
        worker_tell(&w[0], CMD_SPAWN);
        CHECK(w[0].child != NULL);
        CHECK_MASK(w[0].child->tid, node);
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, &node, 1, &on_b, &c), 0);
        CHECK_INT(affinity_commit(k), 0);
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_MSG(has_mask(w[0].child->tid, &all_cpus), "the thread born before the new placement kept our mask");
        CHECK_MASK(w[0].tid, all_cpus);
        stop_workers();
        affinity_keeper_free(k);
}

/* A state file of format 2 (no previous mask), left by the daemon before an upgrade:
 * acted on, then written in format 3. */
TEST(format_2_file_restored) {
        nb_cpumask node = one_cpu(cpu_a);
        char all[64], a[16], text[1024];

        start_workers();
        remove_refused();
        cpumask_format(&all_cpus, all, sizeof(all));
        snprintf(a, sizeof(a), "%u", cpu_a);
        set_mask(w[0].tid, &node);
        snprintf(text, sizeof(text), "%s%d %" PRIu64 " %d %" PRIu64 " %s %s 0\n", header_2, (int) getpid(), my_start,
                 (int) w[0].tid, w[0].start, all, a);
        recover_from(text, 1, 0);
        CHECK_MASK(w[0].tid, all_cpus);
        CHECK_STR(read_state(), header);
        CHECK_INT(refused_files(NULL, 0), 0);
        stop_workers();
}

/* A thread narrowed to cpu_a as if by a previous run, and a state file (text) for it:
 * recovering from it must leave the thread on cpu_a. */
static void recover_changes_nothing(const char *text, int ret, unsigned restored) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};

        write_state(text);
        CHECK_INT(affinity_recover(k, &c), ret);
        CHECK_INT(c.restored, restored);
        CHECK_INT(count_lines(read_state()), HEADER_LINES);
        affinity_keeper_free(k);
}

TEST(recover_refuses_what_does_not_match) {
        nb_cpumask node = one_cpu(cpu_a);
        char all[64], a[16], line[256], text[1024];

        start_workers();
        cpumask_format(&all_cpus, all, sizeof(all));
        snprintf(a, sizeof(a), "%u", cpu_a);
        set_mask(w[0].tid, &node);

        /* the thread's start time is not the recorded one: another thread */
        state_line(line, sizeof(line), w[0].tid, w[0].start + 1, all, a, 0);
        snprintf(text, sizeof(text), "%s%s", header, line);
        recover_changes_nothing(text, 0, 0);
        CHECK_MASK(w[0].tid, node);
        /* the process's start time is not the recorded one: another process */
        snprintf(text, sizeof(text), "%s%d %" PRIu64 " %d %" PRIu64 " %s %s - 0\n", header,
                 (int) getpid(), my_start + 1, (int) w[0].tid, w[0].start, all, a);
        recover_changes_nothing(text, 0, 0);
        CHECK_MASK(w[0].tid, node);
        /* the line cut short by a crash (no end of line) */
        state_line(line, sizeof(line), w[0].tid, w[0].start, all, a, 0);
        line[strlen(line) - 1] = 0;
        snprintf(text, sizeof(text), "%s%s", header, line);
        recover_changes_nothing(text, 0, 0);
        CHECK_MASK(w[0].tid, node);
        /* cut inside a list: "0-" */
        snprintf(text, sizeof(text), "%s%d %" PRIu64 " %d %" PRIu64 " 0- %s - 0\n", header,
                 (int) getpid(), my_start, (int) w[0].tid, w[0].start, a);
        recover_changes_nothing(text, 0, 0);
        CHECK_MASK(w[0].tid, node);
        /* placed not within the original; unknown flags; a field too many; a field
         * missing (a format-2 line in a format-3 file); junk */
        snprintf(text, sizeof(text), "%s"
                 "%d %" PRIu64 " %d %" PRIu64 " %u %s - 0\n"
                 "%d %" PRIu64 " %d %" PRIu64 " %s %s - 4\n"
                 "%d %" PRIu64 " %d %" PRIu64 " %s %s - 0 0\n"
                 "%d %" PRIu64 " %d %" PRIu64 " %s %s 0\n"
                 "\x01\xff garbage\n", header,
                 (int) getpid(), my_start, (int) w[0].tid, w[0].start, cpu_b, a,
                 (int) getpid(), my_start, (int) w[0].tid, w[0].start, all, a,
                 (int) getpid(), my_start, (int) w[0].tid, w[0].start, all, a,
                 (int) getpid(), my_start, (int) w[0].tid, w[0].start, all, a);
        recover_changes_nothing(text, 0, 0);
        CHECK_MASK(w[0].tid, node);
        /* no header, or another format */
        state_line(line, sizeof(line), w[0].tid, w[0].start, all, a, 0);
        recover_changes_nothing(line, -EINVAL, 0);
        CHECK_MASK(w[0].tid, node);
        snprintf(text, sizeof(text), "numabalanced-affinity 1\n%s", line);
        recover_changes_nothing(text, -EINVAL, 0);
        CHECK_MASK(w[0].tid, node);
        /* and the same line, valid, is trusted */
        snprintf(text, sizeof(text), "%s%s", header, line);
        recover_changes_nothing(text, 0, 1);
        CHECK_MASK(w[0].tid, all_cpus);
        stop_workers();
}

TEST(recover_refuses_a_symlink) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);
        char all[64], a[16], line[256], target[160], text[512];
        FILE *f;

        start_workers();
        cpumask_format(&all_cpus, all, sizeof(all));
        snprintf(a, sizeof(a), "%u", cpu_a);
        set_mask(w[0].tid, &node);
        state_line(line, sizeof(line), w[0].tid, w[0].start, all, a, 0);
        snprintf(target, sizeof(target), "%s/elsewhere", dir);
        f = fopen(target, "we");
        fprintf(f, "%s%s", header, line);
        fclose(f);
        unlink(state);
        CHECK(symlink(target, state) == 0);
        CHECK(affinity_recover(k, &c) < 0);
        CHECK_INT(c.restored, 0);
        CHECK_MASK(w[0].tid, node);
        /* the link is replaced by a file of ours; its target is untouched */
        {
                struct stat st;
                CHECK(lstat(state, &st) == 0 && S_ISREG(st.st_mode));
                f = fopen(target, "re");
                text[fread(text, 1, sizeof(text) - 1, f)] = 0;
                fclose(f);
                CHECK(strstr(text, line) != NULL);
        }
        unlink(target);
        stop_workers();
        affinity_keeper_free(k);
}

TEST(never_widened) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), both = two_cpus(cpu_a, cpu_b), on_b = one_cpu(cpu_b);
        pid_t tids[2];
        uint64_t starts[2];

        start_workers();
        /* w[0] already narrower than the node: it keeps only the intersection (itself) */
        set_mask(w[0].tid, &on_b);
        tids[0] = w[0].tid;
        starts[0] = w[0].start;
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, tids, starts, NULL, 1, &both, &c), 0);
        CHECK_INT(c.placed, 0);
        CHECK_INT(c.left_alone, 1);
        CHECK_MASK(w[0].tid, on_b);
        /* placed on cpu_a: no CPU in common with its own mask, not touched */
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, tids, starts, NULL, 1, &node, &c), 0);
        CHECK_INT(c.left_alone, 1);
        CHECK_MASK(w[0].tid, on_b);
        /* w[1] may use both: cpu_a alone, the intersection */
        set_mask(w[1].tid, &both);
        tids[1] = w[1].tid;
        starts[1] = w[1].start;
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, tids + 1, starts + 1, NULL, 1, &node, &c), 0);
        CHECK_INT(c.placed, 1);
        CHECK_MASK(w[1].tid, node);
        /* moved to cpu_b's node: the intersection with its original, which is kept */
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, tids + 1, starts + 1, &node, 1, &on_b, &c), 0);
        CHECK_INT(c.placed, 1);
        CHECK_MASK(w[1].tid, on_b);
        CHECK(affinity_is_placed(k, getpid(), NULL));
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, 1);
        CHECK_MASK(w[1].tid, both);
        CHECK_MASK(w[0].tid, on_b);
        stop_workers();
        affinity_keeper_free(k);
}

TEST(exited_thread_and_forget) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        worker_tell(&w[1], CMD_EXIT);
        w[1].tid = 0;
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_check(k, getpid(), my_start, &c), N - 1);
        CHECK_INT(c.gone, 1);
        /* a wrong process start time: that process is gone, its records dropped */
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_check(k, getpid(), my_start + 1, &c), 0);
        CHECK_INT(c.gone, N - 1);
        CHECK_INT(affinity_held(k), 0);
        CHECK_MASK(w[0].tid, node);     /* forgotten, never restored by us */
        set_mask(w[0].tid, &all_cpus);
        set_mask(w[2].tid, &all_cpus);
        CHECK_INT(place_workers(k, &node, &c), 0);
        affinity_forget(k, getpid());
        CHECK_INT(affinity_held(k), 0);
        CHECK_INT(affinity_undo_all(k, &c), 0);
        CHECK_INT(count_lines(read_state()), HEADER_LINES);
        set_mask(w[0].tid, &all_cpus);
        set_mask(w[2].tid, &all_cpus);
        worker_tell(&w[0], CMD_EXIT);
        worker_tell(&w[2], CMD_EXIT);
        affinity_keeper_free(k);
}

TEST(bounds) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);

        start_workers();
        affinity_keeper_set_limits(k, N - 1, 100);
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(c.placed, N - 1);
        CHECK_INT(c.failed, 1);
        CHECK_MASK(w[0].tid, node);
        CHECK_MASK(w[1].tid, node);
        CHECK_MASK(w[2].tid, all_cpus);         /* beyond: not placed */
        /* a thread that inherits our mask and cannot be recorded gets its original at once */
        worker_tell(&w[0], CMD_SPAWN);
        CHECK_MASK(w[0].child->tid, node);
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_check(k, getpid(), my_start, &c), N - 1);
        CHECK_INT(c.restored, 1);
        CHECK_MASK(w[0].child->tid, all_cpus);
        /* the bound in all */
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        affinity_keeper_set_limits(k, 100, 1);
        c = (struct affinity_counts) {};
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(c.placed, 1);
        CHECK_INT(c.failed, N - 1);
        CHECK_INT(affinity_held(k), 1);
        CHECK_INT(affinity_undo_all(k, &c), 0);
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, all_cpus);
        stop_workers();
        affinity_keeper_free(k);
}

/* Processes forked by placed threads inherit the placed mask (across exec too): the
 * next look at the cgroup records them with their donor's original, and undo gives it
 * back. A process started before the placement, and one that set its own mask, are
 * not ours, even when the first carries our very mask. */
TEST(children_of_placed_threads_followed) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), on_b = one_cpu(cpu_b), orig;
        pid_t before, a, b, own, cands[4];

        start_workers();
        /* started before the placement, then pinned to exactly the mask we will set */
        before = fork();
        if (before == 0) {
                CPU_ZERO_S(own_size, own_set);
                CPU_SET_S(cpu_a, own_size, own_set);
                forked_main(FORK_OWN_MASK);
        }
        WAIT_FOR(has_mask(before, &node));
        usleep(30000);  /* 3 clock ticks: its start time is before the placement's */
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(c.placed, N);

        a = fork_from(&w[0], FORK_PAUSE);
        b = fork_from(&w[1], FORK_EXEC);
        CPU_ZERO_S(own_size, own_set);
        CPU_SET_S(cpu_b, own_size, own_set);
        own = fork_from(&w[2], FORK_OWN_MASK);
        CHECK_MASK(a, node);            /* inherited at fork */
        CHECK_MASK(b, node);            /* and kept across exec */
        CHECK_MASK(before, node);
        CHECK_MASK(own, on_b);

        cands[0] = before;
        cands[1] = a;
        cands[2] = b;
        cands[3] = own;
        c = (struct affinity_counts) {};
        CHECK_INT(adopt_from_me(k, cands, 4, &c), 2);
        CHECK_INT(c.placed, 2);
        CHECK(affinity_is_placed(k, a, NULL));
        CHECK(affinity_is_placed(k, b, NULL));
        CHECK(affinity_original(k, a, a, &orig) && cpumask_equal(&orig, &all_cpus));
        CHECK(affinity_original(k, b, b, &orig) && cpumask_equal(&orig, &all_cpus));
        CHECK(!affinity_is_placed(k, before, NULL));
        CHECK(!affinity_is_placed(k, own, NULL));
        CHECK_INT(affinity_held(k), N + 2);
        CHECK_INT(count_lines(read_state()), 2 + N + 1 + 2);  /* header and boot id, workers, main thread, a, b */
        /* a second look records nothing again; a check finds them as they were */
        c = (struct affinity_counts) {};
        CHECK_INT(adopt_from_me(k, cands, 4, &c), 0);
        CHECK_INT(affinity_check_adopted(k, &c), 2);
        CHECK_INT(c.placed + c.left_alone + c.gone + c.restored, 0);

        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, N + 2);
        CHECK_MASK(a, all_cpus);
        CHECK_MASK(b, all_cpus);
        CHECK_MASK(before, node);       /* not ours: left as it was */
        CHECK_MASK(own, on_b);
        CHECK_INT(affinity_held(k), 0);
        CHECK_INT(count_lines(read_state()), 2);
        kill_wait(before);
        kill_wait(a);
        kill_wait(b);
        kill_wait(own);
        stop_workers();
        affinity_keeper_free(k);
}

/* A helper process, placed, that forks a child on each byte it reads and exits at
 * end of file; the child, reparented to this subreaper, waits. */
struct parent {
        pid_t pid, child;
        uint64_t start;
        int cmd, reply;
};

static void parent_start(struct parent *p) {
        int to[2], from[2];

        if (pipe(to) < 0 || pipe(from) < 0)
                abort();
        p->pid = fork();
        if (p->pid == 0) {
                char ch;

                close(to[1]);
                close(from[0]);
                while (read(to[0], &ch, 1) == 1) {
                        pid_t c = fork();
                        if (c == 0)
                                forked_main(FORK_PAUSE);
                        if (write(from[1], &c, sizeof(c)) != sizeof(c))
                                _exit(1);
                }
                _exit(0);
        }
        close(to[0]);
        close(from[1]);
        p->cmd = to[1];
        p->reply = from[0];
        p->start = start_of(p->pid);
}

static pid_t parent_fork(struct parent *p) {
        if (write(p->cmd, "f", 1) != 1 || read(p->reply, &p->child, sizeof(p->child)) != sizeof(p->child))
                abort();
        return p->child;
}

static void parent_exit(struct parent *p) {
        close(p->cmd);
        close(p->reply);
        waitpid(p->pid, NULL, 0);
}

/* The child is its own record: given back when its parent has exited, by an undo of
 * its own (the placer's opt-out of it), at a clean stop and after a kill -9. */
TEST(child_of_an_exited_parent_given_back) {
        nb_cpumask node = one_cpu(cpu_a);

        for (int how = 0; how < 3; how++) {
                struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
                struct affinity_counts c = {};
                struct parent p;
                uint64_t tstart, child_start;
                pid_t child, cands[2];

                parent_start(&p);
                tstart = p.start;       /* its one thread's start time: the process's */
                CHECK_INT(affinity_place(k, p.pid, p.start, -1, &p.pid, &tstart, NULL, 1, &node, &c), 0);
                CHECK_INT(c.placed, 1);
                child = parent_fork(&p);
                child_start = start_of(child);
                CHECK_MASK(child, node);
                cands[0] = p.pid;
                cands[1] = child;
                CHECK_INT(affinity_adopt(k, my_cgroup, &p.pid, &p.start, 1, cands, 2, &c), 1);
                parent_exit(&p);
                c = (struct affinity_counts) {};
                CHECK_INT(affinity_check(k, p.pid, p.start, &c), 0);     /* the parent: gone */
                CHECK_INT(c.gone, 1);
                c = (struct affinity_counts) {};
                CHECK_INT(affinity_check_adopted(k, &c), 1);              /* the child: still ours */
                CHECK(affinity_is_placed(k, child, NULL));
                CHECK_MASK(child, node);
                c = (struct affinity_counts) {};
                if (how == 0)
                        CHECK_INT(affinity_undo(k, child, child_start, &c), 0);
                else if (how == 1)
                        CHECK_INT(affinity_undo_all(k, &c), 0);
                else {
                        affinity_keeper_free(k);        /* killed: no undo */
                        CHECK_MASK(child, node);
                        k = affinity_keeper_new(state, "/proc");
                        CHECK_INT(affinity_recover(k, &c), 0);
                }
                CHECK_MSG(c.restored == 1, "case %d: %u restored", how, c.restored);
                CHECK_MASK(child, all_cpus);
                CHECK_INT(affinity_held(k), 0);
                CHECK_INT(count_lines(read_state()), 2);
                kill_wait(child);
                affinity_keeper_free(k);
        }
}

/* Killed after the children were recorded: the next start gives them their original
 * back (a child that set its own mask since is left alone), as for threads. */
TEST(children_recovered_after_a_kill) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a), on_b = one_cpu(cpu_b);
        pid_t a, b, d, cands[3];

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        a = fork_from(&w[0], FORK_PAUSE);
        b = fork_from(&w[1], FORK_EXEC);
        d = fork_from(&w[2], FORK_PAUSE);
        cands[0] = a;
        cands[1] = b;
        cands[2] = d;
        CHECK_INT(adopt_from_me(k, cands, 3, &c), 3);
        affinity_keeper_free(k);        /* killed: no undo */
        set_mask(d, &on_b);             /* its application set its own mask since */
        CHECK_MASK(a, node);
        CHECK_MASK(b, node);

        k = affinity_keeper_new(state, "/proc");
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_recover(k, &c), 0);
        CHECK_INT(c.restored, N + 2);
        CHECK_INT(c.left_alone, 1);
        CHECK_MASK(a, all_cpus);
        CHECK_MASK(b, all_cpus);
        CHECK_MASK(d, on_b);
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, all_cpus);
        CHECK_INT(count_lines(read_state()), 2);
        kill_wait(a);
        kill_wait(b);
        kill_wait(d);
        stop_workers();
        affinity_keeper_free(k);
}

/* An adopted process planned onto another node in a round (batched), then undone with
 * its donor before the round's commit: it gets its original back, not left narrowed
 * with its record dropped (the planned step had already set its record's placed mask,
 * and the undo took the mask it still carried for the application's). */
TEST(child_planned_then_undone_with_its_donor) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {}, pc = {};
        nb_cpumask node = one_cpu(cpu_a), on_b = one_cpu(cpu_b), cur = {};
        uint64_t tid_start;
        pid_t a, cands[1];

        start_workers();
        CHECK_INT(place_workers(k, &node, &c), 0);
        a = fork_from(&w[0], FORK_PAUSE);
        cands[0] = a;
        c = (struct affinity_counts) {};
        CHECK_INT(adopt_from_me(k, cands, 1, &c), 1);
        CHECK_MASK(a, node);
        affinity_keeper_set_batched(k, true);
        cur = mask_of(a);
        tid_start = start_of(a);
        CHECK_INT(affinity_place(k, a, start_of(a), -1, &a, &tid_start, &cur, 1, &on_b, &pc), 0);
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(affinity_commit(k), 0);
        CHECK_MASK(a, all_cpus);
        CHECK_INT(affinity_held(k), 0);
        affinity_keeper_set_batched(k, false);
        kill_wait(a);
        stop_workers();
        affinity_keeper_free(k);
}

/* Children count against the threads in all, and against the processes followed from
 * one placed process: beyond either, a child gets its original back at once. */
TEST(children_within_the_bounds) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);
        pid_t a, b, d, cands[3];

        start_workers();
        affinity_keeper_set_limits(k, 100, N + 2);      /* the workers, the main thread, one more */
        CHECK_INT(place_workers(k, &node, &c), 0);
        a = fork_from(&w[0], FORK_PAUSE);
        b = fork_from(&w[1], FORK_PAUSE);
        cands[0] = a;
        cands[1] = b;
        c = (struct affinity_counts) {};
        CHECK_INT(adopt_from_me(k, cands, 2, &c), 1);
        CHECK_INT(c.placed, 1);
        CHECK_INT(c.restored, 1);
        CHECK_MASK(a, node);
        CHECK_MASK(b, all_cpus);
        /* one process followed from this placement at most */
        affinity_keeper_set_limits(k, 1, 100);
        d = fork_from(&w[2], FORK_PAUSE);
        cands[2] = d;
        c = (struct affinity_counts) {};
        CHECK_INT(adopt_from_me(k, cands, 3, &c), 0);
        CHECK_INT(c.restored, 1);
        CHECK_MASK(d, all_cpus);
        c = (struct affinity_counts) {};
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, N + 1);
        CHECK_MASK(a, all_cpus);
        kill_wait(a);
        kill_wait(b);
        kill_wait(d);
        stop_workers();
        affinity_keeper_free(k);
}

/* A file the reader refuses is renamed aside, said in the log with the reason and the
 * name kept, never written over; the newest REFUSED_KEEP (3) are kept. */
TEST(refused_file_kept_aside) {
        nb_cpumask node = one_cpu(cpu_a);
        char all[64], a[16], line[256], text[1024], aside[256];
        const char *kept;

        start_workers();
        remove_refused();
        cpumask_format(&all_cpus, all, sizeof(all));
        snprintf(a, sizeof(a), "%u", cpu_a);
        set_mask(w[0].tid, &node);
        state_line(line, sizeof(line), w[0].tid, w[0].start, all, a, 0);
        /* the format of an earlier version: refused whole */
        snprintf(text, sizeof(text), "numabalanced-affinity 1\n%s", line);
        clear_log();
        recover_changes_nothing(text, -EINVAL, 0);
        CHECK_MASK(w[0].tid, node);
        CHECK_INT(refused_files(aside, sizeof(aside)), 1);
        kept = read_path(aside);
        CHECK_MSG(kept && strcmp(kept, text) == 0, "%s holds %s", aside, kept ? kept : "(nothing)");
        CHECK_MSG(strstr(logged, "does not start with") && strstr(logged, aside),
                  "the log does not say why and where it is kept: %s", logged);
        /* writable by others: refused, kept aside too, whatever else it holds */
        snprintf(text, sizeof(text), "%s%s", header, line);
        write_state(text);
        CHECK(chmod(state, 0666) == 0);
        clear_log();
        {
                struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
                struct affinity_counts c = {};
                CHECK_INT(affinity_recover(k, &c), -EPERM);
                CHECK_INT(c.restored, 0);
                affinity_keeper_free(k);
        }
        CHECK_MASK(w[0].tid, node);
        CHECK_INT(refused_files(aside, sizeof(aside)), 2);
        CHECK_STR(read_path(aside), text);
        CHECK_MSG(strstr(logged, "not a regular file of ours") && strstr(logged, aside), "log: %s", logged);
        CHECK_STR(read_state(), header);     /* a new file of ours, with no thread */
        /* a few more: the newest 3 kept */
        for (int i = 0; i < 3; i++) {
                snprintf(text, sizeof(text), "junk %d\n", i);
                recover_changes_nothing(text, -EINVAL, 0);
        }
        CHECK_INT(refused_files(aside, sizeof(aside)), 3);
        CHECK_STR(read_path(aside), "junk 2\n");
        remove_refused();
        set_mask(w[0].tid, &all_cpus);
        stop_workers();
}

/* The file holds the boot id: one written during another boot is not acted on (the pid
 * and start time may be another process's), logged, kept aside. */
TEST(another_boot_not_acted_on) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);
        char all[64], a[16], line[256], text[1024], aside[256];

        start_workers();
        remove_refused();
        cpumask_format(&all_cpus, all, sizeof(all));
        snprintf(a, sizeof(a), "%u", cpu_a);
        set_mask(w[0].tid, &node);
        state_line(line, sizeof(line), w[0].tid, w[0].start, all, a, 0);
        snprintf(text, sizeof(text), "numabalanced-affinity 3\nboot 00000000-1111-2222-3333-444444444444\n%s", line);
        write_state(text);
        clear_log();
        CHECK_INT(affinity_recover(k, &c), 0);
        CHECK_INT(c.restored, 0);
        CHECK_MASK(w[0].tid, node);
        CHECK_INT(refused_files(aside, sizeof(aside)), 1);
        CHECK_STR(read_path(aside), text);
        CHECK_MSG(strstr(logged, "another boot") && strstr(logged, aside), "log: %s", logged);
        CHECK_STR(read_state(), header);
        affinity_keeper_free(k);
        /* the same line in this boot's file is acted on */
        snprintf(text, sizeof(text), "%s%s", header, line);
        recover_changes_nothing(text, 0, 1);
        CHECK_MASK(w[0].tid, all_cpus);
        remove_refused();
        stop_workers();
}

/* The writer holds to the reader's bound: a process whose records would make the file
 * bigger is not narrowed at all, and logged; the file is not written bigger. */
TEST(writer_bounded_as_the_reader) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c = {};
        nb_cpumask node = one_cpu(cpu_a);

        start_workers();
        unlink(state);
        /* room for the header and two lines: not for N workers and the main thread */
        affinity_keeper_set_file_max(k, strlen(header) + 2 * 40);
        clear_log();
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(c.placed, 0);
        CHECK_INT(c.failed, N);
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, all_cpus);
        CHECK_INT(affinity_held(k), 0);
        CHECK_MSG(strstr(logged, "bigger than the 0 MiB its reader accepts"), "log: %s", logged);
        CHECK_MSG(!read_state() || count_lines(read_state()) <= HEADER_LINES, "state file: %s", read_state());
        /* and with room, placed */
        affinity_keeper_set_file_max(k, 1 << 20);
        c = (struct affinity_counts) {};
        CHECK_INT(place_workers(k, &node, &c), 0);
        CHECK_INT(c.placed, N);
        CHECK_INT(affinity_undo_all(k, &c), 0);
        for (int i = 0; i < N; i++)
                CHECK_MASK(w[i].tid, all_cpus);
        stop_workers();
        affinity_keeper_free(k);
}

/* Batched (the placer): the file is written once for the round, before its first
 * change, with every thread the round narrows; nothing else writes it before the next
 * commit. */
static ino_t state_inode(void) {
        struct stat st;
        return stat(state, &st) == 0 ? st.st_ino : 0;
}

static ino_t inode_at_first_change;

static void before_set_inode(void *userdata, pid_t tid, const nb_cpumask *mask) {
        if (hook_calls == 0)
                inode_at_first_change = state_inode();
        before_set(userdata, tid, mask);
}

TEST(batched_writes_once_before_the_first_change) {
        struct affinity_keeper *k = affinity_keeper_new(state, "/proc");
        struct affinity_counts c0 = {}, c1 = {}, c = {};
        nb_cpumask node = one_cpu(cpu_a);
        pid_t tid;
        uint64_t start;
        ino_t written;

        start_workers();
        unlink(state);
        affinity_keeper_set_batched(k, true);
        hook_calls = hook_found = 0;
        affinity_keeper_set_hook(k, before_set_inode, NULL);
        /* two calls of the round (two processes in the daemon): nothing changed yet */
        tid = w[0].tid;
        start = w[0].start;
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, NULL, 1, &node, &c0), 0);
        tid = w[1].tid;
        start = w[1].start;
        CHECK_INT(affinity_place(k, getpid(), my_start, -1, &tid, &start, NULL, 1, &node, &c1), 0);
        CHECK(read_state() == NULL);
        CHECK_INT(hook_calls, 0);
        CHECK_MASK(w[0].tid, all_cpus);
        CHECK_INT(affinity_commit(k), 0);
        CHECK_INT(c0.placed, 1);
        CHECK_INT(c1.placed, 1);
        CHECK_INT(hook_calls, 2);
        CHECK_INT(hook_found, 2);       /* both lines there at each change */
        written = state_inode();
        CHECK(written != 0 && inode_at_first_change == written);     /* one write, before the first change */
        CHECK_MASK(w[0].tid, node);
        CHECK_MASK(w[1].tid, node);
        CHECK_MASK(w[2].tid, all_cpus);
        /* an undo in the round: given back now, written by the commit */
        CHECK_INT(affinity_undo(k, getpid(), my_start, &c), 0);
        CHECK_INT(c.restored, 2);
        CHECK_MASK(w[0].tid, all_cpus);
        CHECK_INT(state_inode(), written);
        CHECK_INT(count_lines(read_state()), HEADER_LINES + N + 1);
        CHECK_INT(affinity_commit(k), 0);
        CHECK_INT(count_lines(read_state()), HEADER_LINES);
        CHECK_INT(affinity_commit(k), 0);   /* nothing changed: not written */
        written = state_inode();
        CHECK_INT(affinity_commit(k), 0);
        CHECK_INT(state_inode(), written);
        stop_workers();
        affinity_keeper_free(k);
}

/* --- setup --------------------------------------------------------------------- */

static void quiet(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(logged);

        snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
        if (getenv("TEST_AFFINITY_LOG"))
                fprintf(stderr, "<%d>%s\n", level, msg);
}

static int intro(void) {
        struct proc_stat st;
        int c;

        all_cpus = mask_of(0);
        if (cpumask_weight(&all_cpus) < 2) {
                fprintf(stderr, "skip: fewer than 2 CPUs in this process's affinity\n");
                return 77;
        }
        c = cpumask_next(&all_cpus, 0);
        cpu_a = (unsigned) c;
        cpu_b = (unsigned) cpumask_next(&all_cpus, cpu_a + 1);
        if (proc_read_stat("/proc", getpid(), &st) < 0)
                return 1;
        my_start = st.starttime;
        {
                char id[64] = "";
                FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
                if (!f || !fgets(id, sizeof(id), f))
                        return 1;
                fclose(f);
                id[strcspn(id, "\n")] = 0;
                snprintf(header, sizeof(header), "numabalanced-affinity 3\nboot %s\n", id);
                snprintf(header_2, sizeof(header_2), "numabalanced-affinity 2\nboot %s\n", id);
        }
        snprintf(dir, sizeof(dir), "/tmp/test-affinity-XXXXXX");
        if (!mkdtemp(dir))
                return 1;
        snprintf(state, sizeof(state), "%s/run/%s", dir, AFFINITY_STATE_FILE);
        log_set_sink(quiet);
        if (proc_read_cgroup("/proc", getpid(), &my_cgroup) < 0)
                return 1;
        own_set = CPU_ALLOC(NB_CPUS_MAX);
        own_size = CPU_ALLOC_SIZE(NB_CPUS_MAX);
        /* the children of a parent that exits are reparented here, and reaped */
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        return 0;
}

static void outro(void) {
        char run[96];

        remove_refused();
        unlink(state);
        snprintf(run, sizeof(run), "%s/run", dir);
        rmdir(run);
        rmdir(dir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
