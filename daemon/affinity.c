/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Threads' CPU affinity narrowed to a node and given back (affinity.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "affinity.h"
#include "cleanup.h"
#include "clock.h"
#include "log.h"
#include "parse.h"
#include "proc.h"
#include "state-dir.h"

/* The first line; the second is "boot " and the boot id it was written in. */
#define STATE_HEADER "numabalanced-affinity 2"
#define STATE_BOOT "boot "
#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
/* A state file bigger than this was not written by us: 65,536 lines of two short lists
 * take a few MiB; the longest lists (every other CPU of 8,192) would take more, and are
 * refused with the file. The writer holds to the same bound (affinity_commit()). */
#define STATE_FILE_MAX (64u << 20)
/* The longest line: two lists and five numbers. */
#define LINE_MAX_BYTES (2 * CPUMASK_STRMAX + 128)
/* The writer's buffer: written out whenever less than a line is left. */
#define OUT_SIZE (256u << 10)
/* Refused files kept aside (<state file>.refused-<time>), the newest ones. */
#define REFUSED_KEEP 3
/* Records written between two calls of the serve callback. */
#define SERVE_EVERY_RECORDS 2048
/* pid_max is at most 4,194,304 (PID_MAX_LIMIT). */
#define PID_LIMIT 4194304

/* A record's flags, as written in the state file. */
enum {
        /* The application (or a cpuset change) set another mask after we placed it:
         * never touched again, never restored. */
        AT_LEFT_ALONE = 1,
        /* A thread of a placed process that we did not narrow: known, so that it is never
         * taken for a new thread that inherited our mask; may be placed later. */
        AT_KNOWN = 2,
};
#define AT_FLAGS_KNOWN (AT_LEFT_ALONE | AT_KNOWN)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct aff_thread {
        pid_t tid;
        unsigned flags;
        unsigned call;             /* the affinity_place() call that last planned it */
        uint64_t tid_start;
        unsigned line_len;         /* its line in the state file, 0: not known since its masks changed */
        unsigned nwords;           /* of each mask in masks */
        uint64_t *masks;           /* the original in [0, nwords), the placed mask in [nwords, 2 nwords) */
};

struct aff_proc {
        pid_t pid;
        uint64_t start_time;
        int node_first;            /* first CPU of the last node_cpus, -1 before */
        /* The clock tick (the unit and clock of a start time) of its first placement,
         * an adopted process's from the process it was adopted from; 0: none yet. */
        uint64_t placed_at;
        /* Adopted (created by a placed thread, affinity_adopt): the placed process it
         * descends from, whose undo gives it back too; 0 when the round placed it. In
         * memory only: a recovery gives every record back anyway. */
        pid_t root_pid;
        uint64_t root_start;
        size_t n, cap;
        struct aff_thread *threads;   /* sorted by tid */
};

struct affinity_keeper {
        char *state_path, *proc_root;
        struct aff_proc *procs;    /* sorted by pid */
        size_t n_procs, cap_procs;
        size_t n_threads;          /* records in all */
        unsigned beyond;           /* threads of this affinity_place() call beyond the bounds */
        unsigned call;             /* affinity_place() calls so far: a tid given twice is planned once */
        size_t max_proc, max_all;  /* the bounds: AFFINITY_THREADS_PROC_MAX, AFFINITY_THREADS_MAX */
        bool dirty;                /* the records differ from the file */
        bool resave;               /* a placed mask the kernel adjusted: the file says another */
        cpu_set_t *set;            /* scratch for the affinity calls */
        size_t set_size;
        affinity_before_set_fn hook;
        void *hook_userdata;
        char boot_id[64];          /* this boot's, "" when it cannot be read */
        bool had_file;             /* load() found a state file */
        bool blocked;              /* a refused file could not be put aside: it is never written over */
        bool batched;              /* changes made, and the file written, by affinity_commit() alone */
        struct group *groups;      /* affinity_place() calls waiting for affinity_commit() */
        size_t n_groups, cap_groups;
        size_t file_max;           /* STATE_FILE_MAX, lower in a test */
        char *out;                 /* the writer's buffer, OUT_SIZE */
        affinity_serve_fn serve;
        void *serve_userdata;
        struct log_ratelimit save_log;
};

static struct affinity_counts no_counts;

/* --- masks --------------------------------------------------------------------- */

static unsigned used_words(const nb_cpumask *m) {
        unsigned n = ELEMENTSOF(m->w);
        while (n > 0 && m->w[n - 1] == 0)
                n--;
        return n;
}

static void thread_original(const struct aff_thread *t, nb_cpumask *ret) {
        *ret = (nb_cpumask) {};
        memcpy(ret->w, t->masks, t->nwords * sizeof(uint64_t));
}

static void thread_placed(const struct aff_thread *t, nb_cpumask *ret) {
        *ret = (nb_cpumask) {};
        memcpy(ret->w, t->masks + t->nwords, t->nwords * sizeof(uint64_t));
}

/* Stores both masks trimmed to the words they use: 16 bytes a thread on a machine of
 * 64 CPUs, rather than 2 KiB. */
static int thread_set_masks(struct aff_thread *t, const nb_cpumask *original, const nb_cpumask *placed) {
        unsigned a = used_words(original), b = used_words(placed), nw = a > b ? a : b;
        uint64_t *m = calloc(2 * (size_t) (nw ? nw : 1), sizeof(uint64_t));

        if (!m)
                return -ENOMEM;
        memcpy(m, original->w, nw * sizeof(uint64_t));
        memcpy(m + nw, placed->w, nw * sizeof(uint64_t));
        free(t->masks);
        t->masks = m;
        t->nwords = nw;
        t->line_len = 0;
        return 0;
}

static bool thread_placed_equals(const struct aff_thread *t, const nb_cpumask *m) {
        nb_cpumask p;
        thread_placed(t, &p);
        return cpumask_equal(&p, m);
}

static bool cpumask_subset(const nb_cpumask *sub, const nb_cpumask *super) {
        for (size_t i = 0; i < ELEMENTSOF(sub->w); i++)
                if (sub->w[i] & ~super->w[i])
                        return false;
        return true;
}

/* --- the kernel: affinity, identity ------------------------------------------ */

static int get_affinity(struct affinity_keeper *k, pid_t tid, nb_cpumask *ret) {
        CPU_ZERO_S(k->set_size, k->set);
        if (sched_getaffinity(tid, k->set_size, k->set) < 0)
                return -errno;
        *ret = (nb_cpumask) {};
        /* Word by word, a zero word skipped: 8,192 CPU_ISSET_S() a call cost more than
         * the system call. */
        for (size_t i = 0; i < k->set_size / sizeof(__cpu_mask); i++) {
                __cpu_mask word = k->set->__bits[i];
                for (unsigned b = 0; word; b++, word >>= 1)
                        if (word & 1)
                                cpumask_set(ret, (unsigned) (i * 8 * sizeof(__cpu_mask) + b));
        }
        return 0;
}

static int set_affinity(struct affinity_keeper *k, pid_t tid, const nb_cpumask *m) {
        if (k->hook)
                k->hook(k->hook_userdata, tid, m);
        CPU_ZERO_S(k->set_size, k->set);
        CPUMASK_FOREACH(c, m)
                CPU_SET_S((size_t) c, k->set_size, k->set);
        if (sched_setaffinity(tid, k->set_size, k->set) < 0)
                return -errno;
        return 0;
}

/* Whether pid is still the process that started at start_time: its pidfd not readable
 * (it has not exited, so the pid is not reused), or without one its start time. */
static bool proc_same(const struct affinity_keeper *k, pid_t pid, uint64_t start_time, int pidfd) {
        struct proc_stat st;

        if (pidfd >= 0) {
                struct pollfd p = { .fd = pidfd, .events = POLLIN };
                return poll(&p, 1, 0) == 0;
        }
        return proc_read_stat(k->proc_root, pid, &st) == 0 && st.starttime == start_time;
}

/* Whether tid is still a thread of pid that started at tid_start. */
static bool thread_same(const struct affinity_keeper *k, pid_t pid, pid_t tid, uint64_t tid_start) {
        struct proc_stat st;
        return proc_read_task_stat(k->proc_root, pid, tid, &st) == 0 && st.starttime == tid_start;
}

static int thread_start(const struct affinity_keeper *k, pid_t pid, pid_t tid, uint64_t *ret) {
        struct proc_stat st;
        int r = proc_read_task_stat(k->proc_root, pid, tid, &st);
        if (r < 0)
                return r;
        *ret = st.starttime;
        return 0;
}

/* --- records ------------------------------------------------------------------- */

static struct aff_proc *find_proc(const struct affinity_keeper *k, pid_t pid) {
        size_t lo = 0, hi = k->n_procs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (k->procs[mid].pid == pid)
                        return &k->procs[mid];
                if (k->procs[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static struct aff_proc *add_proc(struct affinity_keeper *k, pid_t pid, uint64_t start_time) {
        size_t i = 0;

        if (k->n_procs == k->cap_procs) {
                size_t cap = k->cap_procs ? 2 * k->cap_procs : 16;
                struct aff_proc *p = reallocarray(k->procs, cap, sizeof(*p));
                if (!p)
                        return NULL;
                k->procs = p;
                k->cap_procs = cap;
        }
        while (i < k->n_procs && k->procs[i].pid < pid)
                i++;
        memmove(k->procs + i + 1, k->procs + i, (k->n_procs - i) * sizeof(*k->procs));
        k->procs[i] = (struct aff_proc) { .pid = pid, .start_time = start_time, .node_first = -1 };
        k->n_procs++;
        return &k->procs[i];
}

static void remove_proc(struct affinity_keeper *k, struct aff_proc *p) {
        size_t i = (size_t) (p - k->procs);

        for (size_t j = 0; j < p->n; j++)
                free(p->threads[j].masks);
        free(p->threads);
        k->n_threads -= p->n;
        memmove(k->procs + i, k->procs + i + 1, (k->n_procs - i - 1) * sizeof(*k->procs));
        k->n_procs--;
        k->dirty = true;
}

static struct aff_thread *find_thread(const struct aff_proc *p, pid_t tid) {
        size_t lo = 0, hi = p->n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (p->threads[mid].tid == tid)
                        return &p->threads[mid];
                if (p->threads[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* A new record, within the bounds: -E2BIG beyond them (the caller logs), -ENOMEM.
 * Pointers into p->threads are stale after it. */
static int add_thread(struct affinity_keeper *k, struct aff_proc *p, pid_t tid, uint64_t tid_start, unsigned flags,
                      const nb_cpumask *original, const nb_cpumask *placed, struct aff_thread **ret) {
        struct aff_thread t = { .tid = tid, .tid_start = tid_start, .flags = flags };
        size_t i = 0;

        if (p->n >= k->max_proc || k->n_threads >= k->max_all)
                return -E2BIG;
        if (p->n == p->cap) {
                size_t cap = p->cap ? 2 * p->cap : 8;
                struct aff_thread *a = reallocarray(p->threads, cap, sizeof(*a));
                if (!a)
                        return -ENOMEM;
                p->threads = a;
                p->cap = cap;
        }
        if (thread_set_masks(&t, original, placed) < 0)
                return -ENOMEM;
        while (i < p->n && p->threads[i].tid < tid)
                i++;
        memmove(p->threads + i + 1, p->threads + i, (p->n - i) * sizeof(t));
        p->threads[i] = t;
        p->n++;
        k->n_threads++;
        k->dirty = true;
        if (ret)
                *ret = &p->threads[i];
        return 0;
}

static void remove_thread(struct affinity_keeper *k, struct aff_proc *p, struct aff_thread *t) {
        size_t i = (size_t) (t - p->threads);

        free(t->masks);
        memmove(p->threads + i, p->threads + i + 1, (p->n - i - 1) * sizeof(*t));
        p->n--;
        k->n_threads--;
        k->dirty = true;
}

static size_t proc_held(const struct aff_proc *p) {
        size_t n = 0;
        for (size_t i = 0; i < p->n; i++)
                n += p->threads[i].flags == 0;
        return n;
}

/* --- the state file ------------------------------------------------------------ */

/* v in decimal at s; returns the end. */
static char *put_u64(char *s, uint64_t v) {
        char tmp[20];
        unsigned n = 0;

        do
                tmp[n++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        while (n > 0)
                *s++ = tmp[--n];
        return s;
}

/* The CPU list of nwords words, as cpumask_format() writes it ("0-3,8"), at buf (room
 * for CPUMASK_STRMAX); returns its length. Runs of bits found a word at a time: the
 * saving of 65,536 records spent most of its time testing 8,192 bits a mask one by one. */
static size_t format_list(const uint64_t *w, unsigned nwords, char *buf) {
        unsigned nbits = nwords * 64, i = 0;
        char *s = buf;

        while (i < nbits) {
                unsigned wi = i / 64, first, end;
                uint64_t word = w[wi] & (~UINT64_C(0) << (i % 64));

                while (word == 0 && ++wi < nwords)
                        word = w[wi];
                if (word == 0)
                        break;
                first = wi * 64 + (unsigned) __builtin_ctzll(word);
                /* The first bit clear after it, or nbits. */
                word = ~w[wi] & (~UINT64_C(0) << (first % 64));
                while (word == 0 && ++wi < nwords)
                        word = ~w[wi];
                end = word == 0 ? nbits : wi * 64 + (unsigned) __builtin_ctzll(word);
                if (s != buf)
                        *s++ = ',';
                s = put_u64(s, first);
                if (end - 1 > first) {
                        *s++ = '-';
                        s = put_u64(s, end - 1);
                }
                i = end;
        }
        *s = 0;
        return (size_t) (s - buf);
}

/* t's line of the state file at buf (room for LINE_MAX_BYTES); returns its length. */
static size_t format_line(const struct aff_proc *p, const struct aff_thread *t, char *buf) {
        char *s = buf;

        s = put_u64(s, (uint64_t) p->pid);
        *s++ = ' ';
        s = put_u64(s, p->start_time);
        *s++ = ' ';
        s = put_u64(s, (uint64_t) t->tid);
        *s++ = ' ';
        s = put_u64(s, t->tid_start);
        *s++ = ' ';
        s += format_list(t->masks, t->nwords, s);
        *s++ = ' ';
        s += format_list(t->masks + t->nwords, t->nwords, s);
        *s++ = ' ';
        s = put_u64(s, t->flags);
        *s++ = '\n';
        return (size_t) (s - buf);
}

static size_t header_len(const struct affinity_keeper *k) {
        return strlen(STATE_HEADER "\n" STATE_BOOT "\n") + strlen(k->boot_id);
}

/* The size of the file the records make now: each line's length is kept from the last
 * time it was written or measured. */
static size_t records_size(struct affinity_keeper *k) {
        size_t size = header_len(k);

        for (size_t i = 0; i < k->n_procs; i++) {
                const struct aff_proc *p = &k->procs[i];
                for (size_t j = 0; j < p->n; j++) {
                        struct aff_thread *t = &p->threads[j];
                        if (t->line_len == 0)
                                t->line_len = (unsigned) format_line(p, t, k->out);
                        size += t->line_len;
                }
        }
        return size;
}

/* Every record to fd, OUT_SIZE at a time; -EFBIG, nothing more written, once the file
 * would exceed what its reader accepts. The serve callback is called every
 * SERVE_EVERY_RECORDS records: the records are not changed meanwhile. */
static int write_records(struct affinity_keeper *k, int fd) {
        size_t used, total, n = 0;
        int r;

        used = (size_t) snprintf(k->out, OUT_SIZE, "%s\n%s%s\n", STATE_HEADER, STATE_BOOT, k->boot_id);
        total = used;
        for (size_t i = 0; i < k->n_procs; i++) {
                const struct aff_proc *p = &k->procs[i];
                for (size_t j = 0; j < p->n; j++) {
                        struct aff_thread *t = &p->threads[j];

                        if (OUT_SIZE - used < LINE_MAX_BYTES) {
                                r = state_dir_write_all(fd, k->out, used);
                                if (r < 0)
                                        return r;
                                used = 0;
                        }
                        t->line_len = (unsigned) format_line(p, t, k->out + used);
                        used += t->line_len;
                        total += t->line_len;
                        if (total > k->file_max)
                                return -EFBIG;
                        if (++n % SERVE_EVERY_RECORDS == 0 && k->serve)
                                k->serve(k->serve_userdata);
                }
        }
        return state_dir_write_all(fd, k->out, used);
}

static int write_records_to(int fd, void *userdata) {
        return write_records(userdata, fd);
}

/* Every record to the state file, atomically (state_dir_write(): the old file or the
 * new one, never half of one, mode 0600). Never over a file that was refused and could
 * not be put aside (k->blocked), never a file the reader would refuse. */
static int save(struct affinity_keeper *k) {
        int r;

        if (k->blocked)
                return -EPERM;    /* said once, when it was refused */
        r = state_dir_write(k->state_path, write_records_to, k);
        if (r == -EFBIG)
                return log_warning_errno(r, "Not writing %s: its %zu records would take more than the %zu MiB its "
                                         "reader accepts", k->state_path, k->n_threads, k->file_max >> 20);
        if (r < 0)
                return log_warning_errno(r, "Failed to write the threads' original affinities to %s: %m",
                                         k->state_path);
        k->dirty = false;
        return 0;
}

static int save_if_dirty(struct affinity_keeper *k) {
        return k->dirty ? save(k) : 0;
}

/* After a change that needs no write before it (a record dropped, a thread given back,
 * a new thread recorded): written now, or by the next affinity_commit() when batched.
 * A daemon killed meanwhile leaves lines that a recovery skips or leaves alone (their
 * thread gone, or no longer carrying the placed mask), or that a recovery still gets
 * right (a new thread is adopted from its creator's line). */
static int save_later(struct affinity_keeper *k) {
        return k->batched ? 0 : save_if_dirty(k);
}

/* One line of the state file: "pid start tid tid_start original placed flags\n", every
 * field present and valid, the placed mask within the original. Anything else (a line
 * cut by a crash, an edit) is refused: it must not make us change some random thread. */
struct line {
        pid_t pid, tid;
        uint64_t start_time, tid_start;
        unsigned flags;
        nb_cpumask original, placed;
};

static int parse_line(char *s, size_t len, struct line *ret) {
        char *field[7];
        size_t n = 0;
        uint64_t v;

        if (len == 0 || s[len - 1] != '\n' || strlen(s) != len)
                return -EINVAL;    /* cut short, or a NUL byte inside */
        s[len - 1] = 0;
        for (char *p = s; n < ELEMENTSOF(field); n++) {
                field[n] = p;
                p = strchr(p, ' ');
                if (!p)
                        break;
                *p++ = 0;
        }
        if (n != ELEMENTSOF(field) - 1 || strchr(field[6], ' '))
                return -EINVAL;
        if (parse_u64(field[0], 1, PID_LIMIT, &v) < 0)
                return -EINVAL;
        ret->pid = (pid_t) v;
        if (parse_u64(field[1], 0, UINT64_MAX, &ret->start_time) < 0)
                return -EINVAL;
        if (parse_u64(field[2], 1, PID_LIMIT, &v) < 0)
                return -EINVAL;
        ret->tid = (pid_t) v;
        if (parse_u64(field[3], 0, UINT64_MAX, &ret->tid_start) < 0)
                return -EINVAL;
        if (!*field[4] || !*field[5] || cpumask_parse(field[4], &ret->original) < 0 ||
            cpumask_parse(field[5], &ret->placed) < 0)
                return -EINVAL;
        if (cpumask_weight(&ret->placed) == 0 || !cpumask_subset(&ret->placed, &ret->original))
                return -EINVAL;
        if (parse_u64(field[6], 0, AT_FLAGS_KNOWN, &v) < 0 || v == AT_FLAGS_KNOWN)
                return -EINVAL;
        ret->flags = (unsigned) v;
        return 0;
}

static void load_line(struct affinity_keeper *k, const struct line *l, unsigned lineno) {
        struct aff_proc *p = find_proc(k, l->pid);
        int r;

        if (p && p->start_time != l->start_time) {
                log_warning("%s:%u: process %d has another start time than on an earlier line, ignoring the line",
                            k->state_path, lineno, (int) l->pid);
                return;
        }
        if (p && find_thread(p, l->tid)) {
                log_warning("%s:%u: thread %d of process %d recorded twice, ignoring the line", k->state_path, lineno,
                            (int) l->tid, (int) l->pid);
                return;
        }
        if (!p)
                p = add_proc(k, l->pid, l->start_time);
        if (!p) {
                log_warning_errno(-ENOMEM, "%s:%u: out of memory, ignoring the line", k->state_path, lineno);
                return;
        }
        r = add_thread(k, p, l->tid, l->tid_start, l->flags, &l->original, &l->placed, NULL);
        if (r < 0)
                log_warning_errno(r, "%s:%u: thread %d of process %d not loaded: %s", k->state_path, lineno,
                                  (int) l->tid, (int) l->pid, r == -E2BIG ? "too many threads" : "out of memory");
        if (p->n == 0)
                remove_proc(k, p);
}

/* The oldest refused files beyond REFUSED_KEEP removed: their names sort by time. */
static void prune_refused(const struct affinity_keeper *k) {
        _cleanup_free_ char *dir = strdup(k->state_path);
        struct dirent **names = NULL;
        const char *base;
        char *slash;
        size_t plen;
        int n, kept = 0;

        if (!dir || !(slash = strrchr(dir, '/')))
                return;
        *slash = 0;
        base = k->state_path + (slash - dir) + 1;
        plen = strlen(base);
        n = scandir(*dir ? dir : "/", &names, NULL, alphasort);
        for (int i = n - 1; i >= 0; i--) {
                if (strncmp(names[i]->d_name, base, plen) == 0 &&
                    strncmp(names[i]->d_name + plen, ".refused-", 9) == 0 && ++kept > REFUSED_KEEP) {
                        _cleanup_free_ char *path = NULL;
                        if (asprintf(&path, "%s/%s", dir, names[i]->d_name) >= 0 && unlink(path) < 0)
                                log_warning_errno(-errno, "Failed to remove %s: %m", path);
                }
                free(names[i]);
        }
        free(names);
}

/* A state file not acted on (why) is renamed aside, kept for whoever wants to look
 * (the newest REFUSED_KEEP), so that the next write does not replace it. When it
 * cannot be, nothing is ever written over it: no thread is placed until it is moved. */
static void put_aside(struct affinity_keeper *k, const char *why) {
        _cleanup_free_ char *aside = NULL;
        struct timespec ts;
        struct tm tm;
        char when[64];

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(when, sizeof(when), "%Y%m%dT%H%M%S", &tm);
        if (asprintf(&aside, "%s.refused-%s.%06ldZ", k->state_path, when, ts.tv_nsec / 1000) < 0) {
                aside = NULL;
                k->blocked = true;
                log_error_errno(-ENOMEM, "%s %s; out of memory: it is kept, and no thread is placed", k->state_path,
                                why);
                return;
        }
        if (rename(k->state_path, aside) < 0) {
                k->blocked = true;
                log_error_errno(-errno, "%s %s, and cannot be renamed to %s (%m): restoring no thread's affinity "
                                "from it, and placing no thread while it is there, so as not to write over it",
                                k->state_path, why, aside);
                return;
        }
        log_warning("%s %s: restoring no thread's affinity from it; kept as %s", k->state_path, why, aside);
        prune_refused(k);
}

/* Opens the state file if it is ours to trust (state_dir_open(): a regular file, not
 * followed through a symlink, owned by us, writable by no one else, of a sane size).
 * -ENOENT: none; another -errno with *why set: refused. */
static int open_state(const struct affinity_keeper *k, FILE **ret, char *why, size_t size) {
        FILE *f;
        int fd;

        fd = state_dir_open(k->state_path, k->file_max, STATE_DIR_OURS);
        if (fd == -EPERM || fd == -EFBIG) {
                snprintf(why, size, "is not a regular file of ours (owner, mode 0600, at most %zu MiB)",
                         k->file_max >> 20);
                return -EPERM;
        }
        if (fd < 0) {
                if (fd != -ENOENT)
                        snprintf(why, size, "cannot be opened (%s%s)", strerror(-fd),
                                 fd == -ELOOP ? ": a symbolic link" : "");
                return fd;
        }
        f = fdopen(fd, "r");
        if (!f) {
                close(fd);
                snprintf(why, size, "cannot be read (out of memory)");
                return -ENOMEM;
        }
        *ret = f;
        return 0;
}

/* Reads the state file into the records. A file refused whole (see open_state(), its
 * first line, a read error) or written during another boot is put aside and nothing
 * of it is loaded; one with lines not valid is loaded without them and put aside too,
 * whole, for whoever wants to look. Returns 0 (no file, another boot's, loaded), or
 * -errno when it could not be read. */
static int load(struct affinity_keeper *k) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        char why[256];
        size_t size = 0;
        unsigned lineno = 0, bad = 0;
        ssize_t len;
        int r;

        k->had_file = false;
        r = open_state(k, &f, why, sizeof(why));
        if (r == -ENOENT)
                return 0;
        k->had_file = true;
        if (r < 0) {
                put_aside(k, why);
                return r;
        }
        while ((len = getline(&buf, &size, f)) >= 0) {
                struct line l;

                lineno++;
                if (lineno == 1) {
                        if (strcmp(buf, STATE_HEADER "\n") != 0) {
                                put_aside(k, "does not start with \"" STATE_HEADER "\"");
                                return -EINVAL;
                        }
                        continue;
                }
                if (lineno == 2) {
                        size_t bl = strlen(STATE_BOOT);
                        if (strncmp(buf, STATE_BOOT, bl) != 0 || buf[len - 1] != '\n') {
                                put_aside(k, "has no boot id on its second line");
                                return -EINVAL;
                        }
                        buf[len - 1] = 0;
                        if (!k->boot_id[0] || strcmp(buf + bl, k->boot_id) != 0) {
                                snprintf(why, sizeof(why), "was written during another boot (boot id %.40s, this "
                                         "boot's %s): its processes are not the ones running", buf + bl,
                                         k->boot_id[0] ? k->boot_id : "unknown");
                                put_aside(k, why);
                                return 0;
                        }
                        continue;
                }
                if (parse_line(buf, (size_t) len, &l) < 0) {
                        if (bad++ < 10)
                                log_warning("%s:%u: not a valid line, ignoring it", k->state_path, lineno);
                        continue;
                }
                load_line(k, &l, lineno);
        }
        if (ferror(f)) {
                r = -errno ?: -EIO;
                snprintf(why, sizeof(why), "could not be read to its end (%s)", strerror(-r));
                /* What was loaded is acted on: every line is checked against the thread. */
                put_aside(k, why);
                return r;
        }
        if (lineno < 2) {
                put_aside(k, lineno == 0 ? "is empty" : "has no boot id on its second line");
                return -EINVAL;
        }
        if (bad > 0) {
                snprintf(why, sizeof(why), "has %u line%s not valid (ignored, the others acted on)", bad,
                         bad == 1 ? "" : "s");
                put_aside(k, why);
        }
        return 0;
}

/* --- new threads --------------------------------------------------------------- */

/* The record whose original a new thread carrying `cur` gets: the main thread's if it
 * carries that placed mask, else the first such thread by tid. A thread inherits its
 * creator's mask at clone, and which thread created it is not known: in a process
 * whose threads had one original (the usual case) any of them is right. */
static const struct aff_thread *donor(const struct aff_proc *p, const nb_cpumask *cur) {
        const struct aff_thread *main_thread = find_thread(p, p->pid);

        if (main_thread && main_thread->flags == 0 && thread_placed_equals(main_thread, cur))
                return main_thread;
        for (size_t i = 0; i < p->n; i++)
                if (p->threads[i].flags == 0 && thread_placed_equals(&p->threads[i], cur))
                        return &p->threads[i];
        return NULL;
}

/* A thread that inherited a mask we set and is not recorded: its original now. */
static void give_back_now(struct affinity_keeper *k, pid_t pid, pid_t tid, const nb_cpumask *original,
                          struct affinity_counts *c) {
        int r = set_affinity(k, tid, original);

        if (r >= 0)
                c->restored++;
        else if (r == -ESRCH)
                c->gone++;
        else {
                c->failed++;
                log_warning_errno(r, "Failed to give thread %d of process %d its original affinity back: %m",
                                  (int) tid, (int) pid);
        }
}

/* A thread not recorded whose mask is one we set: recorded with its donor's original,
 * or given that original at once (restore_now, or beyond the bounds). */
static void adopt_one(struct affinity_keeper *k, struct aff_proc *p, pid_t tid, bool restore_now,
                      struct affinity_counts *c) {
        const struct aff_thread *d;
        nb_cpumask cur, original;
        uint64_t start;
        int r;

        if (get_affinity(k, tid, &cur) < 0 || thread_start(k, p->pid, tid, &start) < 0)
                return;    /* gone meanwhile */
        d = donor(p, &cur);
        if (!d) {
                /* Born with a mask of its own: known, so that a mask its application
                 * sets later equal to ours is never taken for one inherited. */
                if (!restore_now)
                        (void) add_thread(k, p, tid, start, AT_KNOWN, &cur, &cur, NULL);
                return;
        }
        thread_original(d, &original);
        if (!restore_now) {
                r = add_thread(k, p, tid, start, 0, &original, &cur, NULL);
                if (r >= 0) {
                        c->placed++;
                        return;
                }
                log_warning_errno(r, "Thread %d of process %d inherited the affinity we set, and cannot be recorded "
                                  "(%s): giving it its original back now", (int) tid, (int) p->pid,
                                  r == -E2BIG ? "too many threads" : "out of memory");
        }
        give_back_now(k, p->pid, tid, &original, c);
}

/* Threads of p created since it was placed that inherited a mask we set. */
static void adopt_new(struct affinity_keeper *k, struct aff_proc *p, bool restore_now, struct affinity_counts *c) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;

        if (proc_list_tasks(k->proc_root, p->pid, &tids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (!find_thread(p, tids[i]))
                        adopt_one(k, p, tids[i], restore_now, c);
}

/* Every thread of p not recorded yet, as known (not ours): so that a thread that
 * existed when the process was placed is never taken for one that inherited our mask. */
static void record_known(struct affinity_keeper *k, struct aff_proc *p) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;

        if (proc_list_tasks(k->proc_root, p->pid, &tids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                nb_cpumask cur;
                uint64_t start;

                if (find_thread(p, tids[i]) || get_affinity(k, tids[i], &cur) < 0 ||
                    thread_start(k, p->pid, tids[i], &start) < 0)
                        continue;
                if (add_thread(k, p, tids[i], start, AT_KNOWN, &cur, &cur, NULL) < 0)
                        return;    /* the bound: placing says so for the threads it is given */
        }
}

/* --- processes created by placed threads ---------------------------------------- */

/* Now, in the clock and unit of a process's start time (field 22 of /proc/PID/stat):
 * clock ticks since boot (CLOCK_BOOTTIME), rounded down as the kernel rounds it. 0 if
 * it cannot be read (then nothing is adopted). */
static uint64_t start_clock_now(void) {
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t ns = clock_now_ns(CLOCK_BOOTTIME);

        if (hz <= 0 || (uint64_t) hz > NSEC_PER_SEC)
                return 0;
        return ns / (NSEC_PER_SEC / (uint64_t) hz);
}

/* The placed process (pid, start) whose undo gives p back: its root, or itself. */
static void root_of(const struct aff_proc *p, pid_t *pid, uint64_t *start) {
        *pid = p->root_pid ? p->root_pid : p->pid;
        *start = p->root_pid ? p->root_start : p->start_time;
}

/* Processes adopted from the placed process (pid, start), at any depth. */
static size_t adopted_from(const struct affinity_keeper *k, pid_t pid, uint64_t start) {
        size_t n = 0;
        for (size_t i = 0; i < k->n_procs; i++)
                n += k->procs[i].root_pid == pid && k->procs[i].root_start == start;
        return n;
}

/* The record of pid if it is the process that started at start and holds threads
 * narrowed since a placement (the donors of affinity_adopt). */
static struct aff_proc *held_proc(const struct affinity_keeper *k, pid_t pid, uint64_t start) {
        struct aff_proc *p = find_proc(k, pid);
        return p && p->start_time == start && p->placed_at > 0 && proc_held(p) > 0 ? p : NULL;
}

/* Whether pid's cgroup (read now) is cgroup. */
static bool in_cgroup(const struct affinity_keeper *k, pid_t pid, const char *cgroup) {
        _cleanup_free_ char *path = NULL;
        return proc_read_cgroup(k->proc_root, pid, &path) >= 0 && strcmp(path, cgroup) == 0;
}

/* Process q (started at q_start, not recorded) when one of its threads carries exactly
 * a mask we set on a thread of one of the donors placed no later than q started, and
 * q and that donor are in cgroup now: recorded, each thread carrying a mask we set
 * with the original of the donor's thread that has it (donor()), the others as known.
 * Beyond the bounds its threads carrying our mask get that original at once. Returns
 * 1 when adopted, 0 when not, -ENOMEM. */
static int adopt_process(struct affinity_keeper *k, const char *cgroup, const pid_t *pids, const uint64_t *starts,
                         size_t n, pid_t q, uint64_t q_start, struct affinity_counts *c) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t nt = 0, di = n;
        struct aff_proc *d, *p;
        pid_t root;
        uint64_t root_start, placed_at;
        int node_first;
        bool beyond;

        if (proc_list_tasks(k->proc_root, q, &tids, &nt) < 0)
                return 0;    /* gone */
        /* Which donor: the first whose placed mask one of q's threads carries. */
        for (size_t t = 0; t < nt && di == n; t++) {
                nb_cpumask cur;

                if (get_affinity(k, tids[t], &cur) < 0)
                        continue;
                for (size_t i = 0; i < n && di == n; i++) {
                        d = held_proc(k, pids[i], starts[i]);
                        if (d && d->placed_at <= q_start && donor(d, &cur))
                                di = i;
                }
        }
        if (di == n)
                return 0;    /* born with a mask of its own, or set one since: not ours */
        /* The cgroups right before acting: a process moved out since cgroup.procs was
         * read is not followed. */
        if (!in_cgroup(k, q, cgroup) || !in_cgroup(k, pids[di], cgroup))
                return 0;
        d = held_proc(k, pids[di], starts[di]);
        root_of(d, &root, &root_start);
        placed_at = d->placed_at;
        node_first = d->node_first;
        beyond = adopted_from(k, root, root_start) >= k->max_proc;
        if (beyond)
                log_warning("Process %d, created by a placed thread of process %d, is not recorded: %zu processes "
                            "followed from process %d already; its threads get their original affinity back now",
                            (int) q, (int) d->pid, k->max_proc, (int) root);
        p = NULL;
        if (!beyond) {
                p = add_proc(k, q, q_start);    /* d moves if the array grows: found again below */
                if (!p)
                        return -ENOMEM;
                p->placed_at = placed_at;
                p->root_pid = root;
                p->root_start = root_start;
                p->node_first = node_first;
        }
        for (size_t t = 0; t < nt; t++) {
                const struct aff_thread *from;
                nb_cpumask cur, original;
                uint64_t start;
                int r;

                d = held_proc(k, pids[di], starts[di]);
                if (!d || get_affinity(k, tids[t], &cur) < 0 || thread_start(k, q, tids[t], &start) < 0)
                        continue;    /* gone meanwhile */
                from = donor(d, &cur);
                if (!from) {
                        if (p)
                                (void) add_thread(k, p, tids[t], start, AT_KNOWN, &cur, &cur, NULL);
                        continue;
                }
                thread_original(from, &original);
                if (p) {
                        r = add_thread(k, p, tids[t], start, 0, &original, &cur, NULL);
                        if (r >= 0) {
                                c->placed++;
                                continue;
                        }
                        log_warning_errno(r, "Thread %d of process %d inherited the affinity we set, and cannot be "
                                          "recorded (%s): giving it its original back now", (int) tids[t], (int) q,
                                          r == -E2BIG ? "too many threads" : "out of memory");
                }
                give_back_now(k, q, tids[t], &original, c);
        }
        if (!p)
                return 0;
        if (proc_held(p) == 0) {
                remove_proc(k, p);
                return 0;
        }
        return 1;
}

int affinity_adopt(struct affinity_keeper *k, const char *cgroup, const pid_t *pids, const uint64_t *starts, size_t n,
                   const pid_t *cands, size_t n_cands, struct affinity_counts *c) {
        uint64_t since = UINT64_MAX;
        pid_t self = getpid();
        int adopted = 0, r;

        c = c ?: &no_counts;
        for (size_t i = 0; i < n; i++) {
                const struct aff_proc *d = held_proc(k, pids[i], starts[i]);
                if (d)
                        since = MIN(since, d->placed_at);
        }
        if (since == UINT64_MAX)
                return 0;
        for (size_t i = 0; i < n_cands; i++) {
                struct proc_stat st;

                /* Recorded already (placed, adopted, a donor), or started before every
                 * placement: one read of its stat, no more. */
                if (cands[i] == self || find_proc(k, cands[i]) || proc_read_stat(k->proc_root, cands[i], &st) < 0 ||
                    st.starttime < since || st.state == 'Z' || st.state == 'X' || (st.flags & PF_KTHREAD_FLAG))
                        continue;
                r = adopt_process(k, cgroup, pids, starts, n, cands[i], st.starttime, c);
                if (r < 0) {
                        (void) save_later(k);
                        return log_warning_errno(r, "Out of memory");
                }
                adopted += r;
        }
        (void) save_later(k);
        return adopted;
}

/* --- placing ------------------------------------------------------------------- */

/* One thread to narrow: what it had before (to go back to if the change is not made). */
struct step {
        pid_t tid;
        uint64_t tid_start;
        unsigned prior_flags;
        nb_cpumask prior_original, cur, target;
};

/* Decides one thread's new mask and records it (not yet in the file). Returns 1 when
 * there is something to change (*s filled), 0 when not (counted). */
static int plan_thread(struct affinity_keeper *k, struct aff_proc *p, pid_t tid, uint64_t tid_start,
                       const nb_cpumask *expect, const nb_cpumask *node_cpus, struct step *s,
                       struct affinity_counts *c) {
        struct aff_thread *t = find_thread(p, tid);
        nb_cpumask original;
        int r;

        if (!thread_same(k, p->pid, tid, tid_start) || get_affinity(k, tid, &s->cur) < 0) {
                c->gone++;
                return 0;
        }
        if (t && t->tid_start != tid_start) {    /* a tid reused: the record was of an exited thread */
                remove_thread(k, p, t);
                t = NULL;
        }
        if (t && t->call == k->call)
                return 0;    /* given twice: the first is planned already */
        if (t && t->flags & AT_LEFT_ALONE) {
                c->left_alone++;
                return 0;
        }
        if (t && t->flags == 0 && !thread_placed_equals(t, &s->cur)) {
                t->flags = AT_LEFT_ALONE;    /* the application set its own mask since we placed it */
                k->dirty = true;
                c->left_alone++;
                return 0;
        }
        if (expect && !cpumask_equal(expect, &s->cur)) {
                c->left_alone++;    /* changed since the decision: decided again next time */
                return 0;
        }
        if (t && t->flags == 0)
                thread_original(t, &original);
        else
                original = s->cur;
        cpumask_and(&s->target, node_cpus, &original);
        if (cpumask_weight(&s->target) == 0 || cpumask_equal(&s->target, &s->cur)) {
                c->left_alone++;    /* no CPU of the node allowed, or there already */
                return 0;
        }
        s->tid = tid;
        s->tid_start = tid_start;
        s->prior_flags = t ? t->flags : AT_KNOWN;
        s->prior_original = t && t->flags == 0 ? original : s->cur;
        if (t) {
                t->flags = 0;
                t->tid_start = tid_start;
                t->call = k->call;
                return thread_set_masks(t, &original, &s->target) < 0 ? -ENOMEM : 1;
        }
        r = add_thread(k, p, tid, tid_start, 0, &original, &s->target, &t);
        if (r == -E2BIG) {
                c->failed++;
                k->beyond++;    /* said once for the call */
                return 0;
        }
        if (r < 0)
                return r;
        t->call = k->call;
        return 1;
}

/* Puts a thread's record back as it was before plan_thread (the change not made). */
static void unplan(struct affinity_keeper *k, struct aff_proc *p, const struct step *s) {
        struct aff_thread *t = find_thread(p, s->tid);

        if (!t)
                return;
        t->flags = s->prior_flags;
        (void) thread_set_masks(t, &s->prior_original, &s->cur);
        k->dirty = true;
}

/* The change itself, after checking again that it still applies. */
static void apply_step(struct affinity_keeper *k, struct aff_proc *p, int pidfd, const struct step *s,
                       struct affinity_counts *c) {
        struct aff_thread *t;
        nb_cpumask now;
        int r;

        if (!proc_same(k, p->pid, p->start_time, pidfd) || !thread_same(k, p->pid, s->tid, s->tid_start) ||
            get_affinity(k, s->tid, &now) < 0) {
                c->gone++;
                t = find_thread(p, s->tid);
                if (t)
                        remove_thread(k, p, t);
                return;
        }
        if (!cpumask_equal(&now, &s->cur)) {
                c->left_alone++;    /* the application changed it a moment ago */
                unplan(k, p, s);
                return;
        }
        r = set_affinity(k, s->tid, &s->target);
        if (r < 0) {
                if (r == -ESRCH)
                        c->gone++;
                else if (r == -EPERM)
                        c->not_permitted++;    /* the placer logs it, rate-limited, and backs off */
                else {
                        c->failed++;
                        log_warning_errno(r, "Failed to set the affinity of thread %d of process %d: %m",
                                          (int) s->tid, (int) p->pid);
                }
                unplan(k, p, s);
                return;
        }
        c->placed++;
        /* The kernel keeps a thread within its cpuset: record what it really got. */
        t = find_thread(p, s->tid);
        if (t && get_affinity(k, s->tid, &now) >= 0 && !cpumask_equal(&now, &s->target)) {
                nb_cpumask original;
                thread_original(t, &original);
                (void) thread_set_masks(t, &original, &now);
                k->dirty = true;
                k->resave = true;
        }
}

/* One affinity_place() call's planned changes, made by affinity_commit(). */
struct group {
        pid_t pid;
        uint64_t start_time;
        int pidfd;
        int node_first;
        struct affinity_counts *c;
        struct step *steps;
        size_t n;
};

static void groups_clear(struct affinity_keeper *k) {
        for (size_t i = 0; i < k->n_groups; i++)
                free(k->groups[i].steps);
        k->n_groups = 0;
}

/* The group's changes not made: its records as before the plan. */
static void unplan_group(struct affinity_keeper *k, struct group *g) {
        struct aff_proc *p = find_proc(k, g->pid);

        g->c->failed += (unsigned) g->n;
        if (!p || p->start_time != g->start_time)
                return;
        for (size_t i = 0; i < g->n; i++)
                unplan(k, p, &g->steps[i]);
        if (proc_held(p) == 0)
                remove_proc(k, p);
}

int affinity_place(struct affinity_keeper *k, pid_t pid, uint64_t start_time, int pidfd, const pid_t *tids,
                   const uint64_t *tid_start, const nb_cpumask *expect, size_t n, const nb_cpumask *node_cpus,
                   struct affinity_counts *c) {
        _cleanup_free_ struct step *steps = NULL;
        struct aff_proc *p;
        size_t m = 0;
        int r;

        c = c ?: &no_counts;
        if (n == 0)
                return 0;
        p = find_proc(k, pid);
        if (p && p->start_time != start_time) {
                remove_proc(k, p);    /* the pid was reused: that process exited */
                p = NULL;
        }
        if (!p && !(p = add_proc(k, pid, start_time)))
                return log_warning_errno(-ENOMEM, "Out of memory");
        /* Each step is a thread of a record of p, planned once: no more than p has or
         * may have, and one more for the one plan_thread fills before it knows. */
        steps = calloc(MIN(n, MAX(k->max_proc, p->n)) + 1, sizeof(*steps));
        if (!steps)
                return log_warning_errno(-ENOMEM, "Out of memory");
        if (k->n_groups == k->cap_groups) {
                size_t cap = k->cap_groups ? 2 * k->cap_groups : 16;
                struct group *g = reallocarray(k->groups, cap, sizeof(*g));

                if (!g)
                        return log_warning_errno(-ENOMEM, "Out of memory");
                k->groups = g;
                k->cap_groups = cap;
        }
        k->beyond = 0;
        if (++k->call == 0)
                k->call = 1;    /* 0: never planned */
        for (size_t i = 0; i < n; i++) {
                r = plan_thread(k, p, tids[i], tid_start[i], expect ? &expect[i] : NULL, node_cpus, &steps[m], c);
                if (r < 0) {
                        for (size_t j = 0; j < m; j++)
                                unplan(k, p, &steps[j]);
                        return log_warning_errno(r, "Out of memory");
                }
                m += (size_t) r;
        }
        if (k->beyond > 0)
                log_warning("Process %d: %u threads not placed, beyond the threads we may record (%zu a process, "
                            "%zu in all)", (int) pid, k->beyond, k->max_proc, k->max_all);
        if (m == 0) {
                if (proc_held(p) == 0)
                        remove_proc(k, p);    /* nothing of it ours */
                (void) save_later(k);
                return 0;
        }
        record_known(k, p);
        k->groups[k->n_groups++] = (struct group) {
                .pid = pid, .start_time = start_time, .pidfd = pidfd, .node_first = cpumask_next(node_cpus, 0),
                .c = c, .steps = TAKE_PTR(steps), .n = m,
        };
        return k->batched ? 0 : affinity_commit(k);
}

/* The planned groups that would make the file bigger than its reader accepts are not
 * placed, the last planned first. */
static void fit(struct affinity_keeper *k) {
        size_t size = records_size(k);

        while (k->n_groups > 0 && size > k->file_max) {
                struct group *g = &k->groups[--k->n_groups];

                unplan_group(k, g);
                log_warning("Process %d: %zu thread(s) not placed: their records would make %s bigger than the "
                            "%zu MiB its reader accepts", (int) g->pid, g->n, k->state_path, k->file_max >> 20);
                free(g->steps);
                size = records_size(k);
        }
}

int affinity_commit(struct affinity_keeper *k) {
        size_t threads = 0;
        int r;

        if (k->n_groups == 0)
                return save_if_dirty(k);
        fit(k);
        /* The originals on disk before the first change: a daemon killed from here on
         * leaves what the next start needs to give them back. One write for every
         * change of the round. */
        r = save(k);
        if (r < 0) {
                for (size_t i = 0; i < k->n_groups; i++) {
                        threads += k->groups[i].n;
                        unplan_group(k, &k->groups[i]);
                }
                if (log_ratelimit_ok(&k->save_log, clock_now_ms(), NULL))
                        log_warning("%zu thread(s) of %zu process(es) not placed, since their original affinity "
                                    "could not be saved", threads, k->n_groups);
                groups_clear(k);
                return r;
        }
        for (size_t i = 0; i < k->n_groups; i++) {
                struct group *g = &k->groups[i];
                struct aff_proc *p = find_proc(k, g->pid);
                unsigned before;

                if (!p || p->start_time != g->start_time) {
                        g->c->gone += (unsigned) g->n;    /* forgotten since it was planned */
                        continue;
                }
                /* Before the first change: a process its threads create from now on
                 * starts in this clock tick or later (affinity_adopt). */
                if (p->placed_at == 0)
                        p->placed_at = start_clock_now();
                before = g->c->placed;
                for (size_t j = 0; j < g->n; j++)
                        apply_step(k, p, g->pidfd, &g->steps[j], g->c);
                p->node_first = g->node_first;
                if (g->c->placed > before)
                        p->root_pid = 0;    /* an adopted process placed by the round: its own placement now */
                if (proc_held(p) == 0)
                        remove_proc(k, p);
                if (k->serve)
                        k->serve(k->serve_userdata);
        }
        groups_clear(k);
        /* A thread the kernel kept within its cpuset carries another mask than the file
         * says: written now, or a kill -9 before the next commit would leave it narrowed
         * for good (recovery restores only a thread carrying the placed mask). What else
         * the changes left (a thread gone meanwhile) waits for the next commit. */
        if (k->resave) {
                k->resave = false;
                return save_if_dirty(k);
        }
        return save_later(k);
}

/* --- checking and undoing ------------------------------------------------------ */

/* The records of p whose thread exited are dropped; a thread of ours carrying another
 * mask than the one we set is left alone from now on. */
static void check_records(struct affinity_keeper *k, struct aff_proc *p, struct affinity_counts *c) {
        for (size_t i = 0; i < p->n;) {
                struct aff_thread *t = &p->threads[i];
                nb_cpumask cur;

                if (!thread_same(k, p->pid, t->tid, t->tid_start) || get_affinity(k, t->tid, &cur) < 0) {
                        if (t->flags == 0)
                                c->gone++;
                        remove_thread(k, p, t);
                        continue;
                }
                if (t->flags == 0 && !thread_placed_equals(t, &cur)) {
                        t->flags = AT_LEFT_ALONE;
                        k->dirty = true;
                        c->left_alone++;
                        log_info("Thread %d of process %d changed the affinity we set: left alone from now on",
                                 (int) t->tid, (int) p->pid);
                }
                i++;
        }
}

/* The process of our records for pid, if it is the one that started at start_time and
 * has not exited; records of another one are dropped. */
static struct aff_proc *live_proc(struct affinity_keeper *k, pid_t pid, uint64_t start_time,
                                  struct affinity_counts *c) {
        struct aff_proc *p = find_proc(k, pid);

        if (!p)
                return NULL;
        if (p->start_time != start_time || !proc_same(k, pid, start_time, -1)) {
                c->gone += (unsigned) proc_held(p);
                remove_proc(k, p);
                return NULL;
        }
        return p;
}

int affinity_check(struct affinity_keeper *k, pid_t pid, uint64_t start_time, struct affinity_counts *c) {
        struct aff_proc *p;
        size_t held;

        c = c ?: &no_counts;
        p = live_proc(k, pid, start_time, c);
        if (!p) {
                (void) save_later(k);
                return 0;
        }
        check_records(k, p, c);
        adopt_new(k, p, false, c);
        held = proc_held(p);
        if (held == 0)
                remove_proc(k, p);    /* nothing of it ours any more: nothing to undo */
        (void) save_later(k);
        return (int) held;
}

static void restore_one(struct affinity_keeper *k, const struct aff_proc *p, const struct aff_thread *t,
                        struct affinity_counts *c) {
        nb_cpumask cur, original;

        if (t->flags & AT_KNOWN)
                return;
        if (t->flags & AT_LEFT_ALONE) {
                c->left_alone++;
                return;
        }
        if (!thread_same(k, p->pid, t->tid, t->tid_start) || get_affinity(k, t->tid, &cur) < 0) {
                c->gone++;
                return;
        }
        if (!thread_placed_equals(t, &cur)) {
                c->left_alone++;    /* changed by the application (or never changed by us: a kill -9 before) */
                return;
        }
        thread_original(t, &original);
        give_back_now(k, p->pid, t->tid, &original, c);
}

/* Undoes p without saving. */
static void undo_proc(struct affinity_keeper *k, struct aff_proc *p, struct affinity_counts *c) {
        /* Its changes planned in this round, not made yet, first: a planned step has
         * already set the record's placed mask to its target, and restore_one would
         * take the mask the thread still carries for the application's and drop it,
         * narrowed (an adopted process planned, then undone with its donor). */
        for (size_t i = 0; i < k->n_groups; i++) {
                struct group *g = &k->groups[i];

                if (g->pid != p->pid || g->start_time != p->start_time)
                        continue;
                for (size_t j = 0; j < g->n; j++)
                        unplan(k, p, &g->steps[j]);
                g->n = 0;
        }
        adopt_new(k, p, true, c);
        for (size_t i = 0; i < p->n; i++)
                restore_one(k, p, &p->threads[i], c);
        remove_proc(k, p);
}

/* Undoes the processes adopted from the placed process (pid, start): alive or not, it
 * does not matter. */
static void undo_adopted(struct affinity_keeper *k, pid_t pid, uint64_t start, struct affinity_counts *c) {
        for (size_t i = 0; i < k->n_procs;) {
                struct aff_proc *p = &k->procs[i];

                if (p->root_pid != pid || p->root_start != start) {
                        i++;
                        continue;
                }
                if (proc_same(k, p->pid, p->start_time, -1))
                        undo_proc(k, p, c);
                else {
                        c->gone += (unsigned) proc_held(p);
                        remove_proc(k, p);
                }
        }
}

int affinity_undo(struct affinity_keeper *k, pid_t pid, uint64_t start_time, struct affinity_counts *c) {
        struct aff_proc *p;

        c = c ?: &no_counts;
        p = live_proc(k, pid, start_time, c);
        if (p)
                undo_proc(k, p, c);
        undo_adopted(k, pid, start_time, c);
        return save_later(k);
}

int affinity_check_adopted(struct affinity_keeper *k, struct affinity_counts *c) {
        size_t held = 0;

        c = c ?: &no_counts;
        for (size_t i = 0; i < k->n_procs;) {
                struct aff_proc *p = &k->procs[i];

                if (!p->root_pid) {
                        i++;
                        continue;
                }
                if (!proc_same(k, p->pid, p->start_time, -1)) {
                        c->gone += (unsigned) proc_held(p);
                        remove_proc(k, p);
                        continue;
                }
                check_records(k, p, c);
                adopt_new(k, p, false, c);
                if (proc_held(p) == 0) {
                        remove_proc(k, p);
                        continue;
                }
                held += proc_held(p);
                i++;
        }
        (void) save_later(k);
        return (int) MIN(held, (size_t) INT_MAX);
}

/* Every process undone, nothing written. */
static void undo_all_records(struct affinity_keeper *k, struct affinity_counts *c) {
        for (size_t i = 0; i < k->n_groups; i++)
                unplan_group(k, &k->groups[i]);    /* planned, never made */
        groups_clear(k);
        while (k->n_procs > 0) {
                struct aff_proc *p = &k->procs[k->n_procs - 1];
                if (proc_same(k, p->pid, p->start_time, -1))
                        undo_proc(k, p, c);
                else {
                        c->gone += (unsigned) proc_held(p);
                        remove_proc(k, p);
                }
        }
}

int affinity_undo_all(struct affinity_keeper *k, struct affinity_counts *c) {
        undo_all_records(k, c ?: &no_counts);
        return save_if_dirty(k);
}

int affinity_recover(struct affinity_keeper *k, struct affinity_counts *c) {
        struct affinity_counts mine = {};
        int r;

        r = load(k);
        if (!k->had_file)
                return r;    /* nothing to recover, and no file made */
        undo_all_records(k, &mine);
        k->dirty = true;
        if (save(k) < 0)
                r = r < 0 ? r : -EIO;
        if (mine.restored + mine.failed > 0)
                log_notice("A numabalanced that did not exit cleanly left threads placed: %u given their original "
                           "affinity back, %u left alone (changed since), %u gone, %u failed",
                           mine.restored, mine.left_alone, mine.gone, mine.failed);
        if (c) {
                c->placed += mine.placed;
                c->restored += mine.restored;
                c->left_alone += mine.left_alone;
                c->gone += mine.gone;
                c->failed += mine.failed;
        }
        return r;
}

void affinity_forget(struct affinity_keeper *k, pid_t pid) {
        struct aff_proc *p = find_proc(k, pid);

        /* Not saved now: a stale line names an exited process, which a recovery skips
         * (start time); the next save drops it. */
        if (p)
                remove_proc(k, p);
}

bool affinity_recover_found_file(const struct affinity_keeper *k) {
        return k->had_file;
}

bool affinity_is_placed(const struct affinity_keeper *k, pid_t pid, int *node_cpus_first) {
        const struct aff_proc *p = find_proc(k, pid);

        if (!p || proc_held(p) == 0)
                return false;
        if (node_cpus_first)
                *node_cpus_first = p->node_first;
        return true;
}

size_t affinity_held(const struct affinity_keeper *k) {
        size_t n = 0;
        for (size_t i = 0; i < k->n_procs; i++)
                n += proc_held(&k->procs[i]);
        return n;
}

/* --- the keeper ---------------------------------------------------------------- */

char *affinity_state_path_default(void) {
        return state_dir_default(AFFINITY_STATE_FILE);
}

/* This boot's id (the state file is trusted only in the boot it was written in: /run
 * need not be a tmpfs, and a pid and start time repeat across boots). Always the
 * machine's, whatever proc_root is. "" when it cannot be read: then no file is. */
static void read_boot_id(struct affinity_keeper *k) {
        _cleanup_fclose_ FILE *f = fopen(BOOT_ID_PATH, "re");

        k->boot_id[0] = 0;
        if (!f || !fgets(k->boot_id, sizeof(k->boot_id), f)) {
                k->boot_id[0] = 0;
                log_warning("Failed to read this boot's id from %s: no state file of threads' affinities will be "
                            "trusted", BOOT_ID_PATH);
                return;
        }
        k->boot_id[strcspn(k->boot_id, "\n ")] = 0;
}

struct affinity_keeper *affinity_keeper_new(const char *state_path, const char *proc_root) {
        struct affinity_keeper *k = calloc(1, sizeof(*k));

        if (k) {
                k->state_path = strdup(state_path);
                k->proc_root = strdup(proc_root);
                k->set = CPU_ALLOC(NB_CPUS_MAX);
                k->set_size = CPU_ALLOC_SIZE(NB_CPUS_MAX);
                k->max_proc = AFFINITY_THREADS_PROC_MAX;
                k->max_all = AFFINITY_THREADS_MAX;
                k->file_max = STATE_FILE_MAX;
                k->out = malloc(OUT_SIZE);
                k->save_log = LOG_RATELIMIT(60000, 1);
                read_boot_id(k);
        }
        if (!k || !k->state_path || !k->proc_root || !k->set || !k->out) {
                affinity_keeper_free(k);
                log_error_errno(-ENOMEM, "Out of memory");
                return NULL;
        }
        return k;
}

void affinity_keeper_free(struct affinity_keeper *k) {
        if (!k)
                return;
        for (size_t i = 0; i < k->n_procs; i++) {
                for (size_t j = 0; j < k->procs[i].n; j++)
                        free(k->procs[i].threads[j].masks);
                free(k->procs[i].threads);
        }
        free(k->procs);
        groups_clear(k);
        free(k->groups);
        free(k->out);
        if (k->set)
                CPU_FREE(k->set);
        free(k->state_path);
        free(k->proc_root);
        free(k);
}

void affinity_keeper_set_limits(struct affinity_keeper *k, size_t per_process, size_t in_all) {
        k->max_proc = per_process;
        k->max_all = in_all;
}

void affinity_keeper_set_hook(struct affinity_keeper *k, affinity_before_set_fn fn, void *userdata) {
        k->hook = fn;
        k->hook_userdata = userdata;
}

void affinity_keeper_set_batched(struct affinity_keeper *k, bool batched) {
        k->batched = batched;
}

void affinity_keeper_set_serve(struct affinity_keeper *k, affinity_serve_fn fn, void *userdata) {
        k->serve = fn;
        k->serve_userdata = userdata;
}

void affinity_keeper_set_file_max(struct affinity_keeper *k, size_t bytes) {
        k->file_max = bytes;
}

/* ---- what the placer and the reports ask of one thread ------------------------ */

static const struct aff_thread *thread_of(const struct affinity_keeper *k, pid_t pid, pid_t tid) {
        const struct aff_proc *p = k ? find_proc(k, pid) : NULL;
        return p ? find_thread(p, tid) : NULL;
}

bool affinity_original(const struct affinity_keeper *k, pid_t pid, pid_t tid, nb_cpumask *ret) {
        const struct aff_thread *t = thread_of(k, pid, tid);

        if (!t || t->flags != 0)
                return false;
        thread_original(t, ret);
        return true;
}

bool affinity_thread_held(const struct affinity_keeper *k, pid_t pid, pid_t tid) {
        const struct aff_thread *t = thread_of(k, pid, tid);
        return t && t->flags == 0;
}

bool affinity_thread_left_alone(const struct affinity_keeper *k, pid_t pid, pid_t tid) {
        const struct aff_thread *t = thread_of(k, pid, tid);
        return t && (t->flags & AT_LEFT_ALONE);
}
