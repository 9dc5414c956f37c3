/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cleanup.h"
#include "clock.h"
#include "damon.h"
#include "log.h"
#include "pagesize.h"
#include "page-agg.h"
#include "counters.h"
#include "proc-records.h"
#include "parse.h"
#include "proc.h"
#include "sample-quota.h"
#include "service-cpus.h"
#include "state-dir.h"

#define KDAMONDS "kernel/mm/damon/admin/kdamonds"
/* Intervals (microseconds): a sample every 5 ms and an aggregation every 100 ms are
 * DAMON's own defaults, which 6.12's kdamond ran at 2-3% of one TCG vCPU (measured);
 * each read then covers one aggregation of 20 samples. With fvaddr the regions stay
 * the slow VMAs written (update_us only bounds how often the kdamond checks its
 * attributes; the daemon commits new VMAs itself). */
#define SAMPLE_US 5000
#define AGGR_US 100000
#define UPDATE_US 1000000
/* At least this many monitoring regions: DAMON does not merge regions beyond the
 * monitored size / min_nr_regions, so a hot part is told from a cold one to about
 * 1/100 of the VMAs monitored. */
#define REGIONS_MIN 100
/* One round a second at most: a read covers one aggregation, and the scans that use
 * the counts come every scan_min_ms (1 s) at the most. */
#define ROUND_MS 1000
/* Reads waiting for the event loop, at most (the oldest dropped, counted). */
#define PENDING_MAX (DAMON_PROCS_MAX * 4)
#define JOIN_WAIT_S 5

struct slot {                      /* a kdamond index, as wanted by the event loop */
        pid_t pid;                 /* 0: free */
        uint64_t starttime;
        uint64_t gen;              /* bumped at each change */
        struct damon_range r[DAMON_TARGET_REGIONS_MAX];
        size_t n;
};

struct applied {                   /* as the DAMON thread set it up */
        pid_t pid;
        uint64_t starttime;
        uint64_t gen;
        bool on, failed;
        bool starting;             /* "on" being written: recorded by target pid */
        pid_t kpid;
        bool has_read;
        uint64_t read_ms;          /* of its last read: the next one ROUND_MS later */
};

struct damon {
        char *root;                /* <sys>/kernel/mm/damon/admin/kdamonds */
        char *sys_root;            /* set while recovery is left to the thread */
        bool recover;              /* the thread's first work: damon_recover() */
        char *proc_root;
        char *state_path;
        const char *why;
        char why_buf[768];         /* a reason with its path and error, why points here */
        bool in_use;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* Under lock: */
        struct slot slots[DAMON_PROCS_MAX];
        struct sample_quota_slots turns;
        const struct damon_want *asking;
        struct damon_result pending[PENDING_MAX];
        size_t n_pending;
        struct damon_stats st;
        nb_cpumask cpus;
        uint64_t cold_aggrs;       /* a region not accessed for this many aggregations is cold */
        bool stop;
        bool finished, orphaned;   /* the thread returned; damon_free() left it to free d */
        /* The thread's own: */
        struct applied ap[DAMON_PROCS_MAX];
        bool created;              /* nr_kdamonds set by us */
        uint64_t kd_ino[DAMON_PROCS_MAX];  /* while created: our kdamonds' directories */
        bool affinity_logged;
        bool taken_logged;         /* another tool's nr_kdamonds was logged */
        pthread_t thread;
        bool has_thread;
};

/* The path of a file under the kdamonds root into out. Paths, values and reads live
 * on the stack: a read of 200 regions is 800 files a second per kdamond, which went
 * through the heap at 4 KiB each (ASan's quarantine filled under the unit's MemoryMax). */
static int vpath(const struct damon *d, char *out, size_t size, const char *fmt, va_list ap) {
        int n = snprintf(out, size, "%s/", d->root), m;

        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        m = vsnprintf(out + n, size - (size_t) n, fmt, ap);
        return m < 0 || (size_t) m >= size - (size_t) n ? -ENAMETOOLONG : 0;
}

static int vwr(const struct damon *d, const char *val, const char *fmt, va_list ap) {
        char path[PATH_MAX];
        ssize_t n;
        int fd, r = vpath(d, path, sizeof(path), fmt, ap);

        if (r < 0)
                return r;
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);  /* O_TRUNC: as echo does; sysfs ignores it */
        if (fd < 0)
                return -errno;
        n = write(fd, val, strlen(val));
        r = n < 0 ? -errno : 0;
        close(fd);
        return r;
}

static int wr(const struct damon *d, const char *val, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vwr(d, val, fmt, ap);
        va_end(ap);
        return r;
}

static int wr_u64(const struct damon *d, uint64_t v, const char *fmt, ...) {
        char b[32];
        va_list ap;
        int r;

        snprintf(b, sizeof(b), "%" PRIu64, v);
        va_start(ap, fmt);
        r = vwr(d, b, fmt, ap);
        va_end(ap);
        return r;
}

/* A small sysfs file under the kdamonds root into buf, the newline cut; -EINVAL when
 * it does not fit. */
static int vrd(const struct damon *d, char *buf, size_t size, const char *fmt, va_list ap) {
        char path[PATH_MAX];
        size_t len = 0;
        ssize_t n;
        int fd, r = vpath(d, path, sizeof(path), fmt, ap);

        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        while (len < size && (n = read(fd, buf + len, size - len)) != 0) {
                if (n < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                len += n > 0 ? (size_t) n : 0;
        }
        if (r >= 0 && len == size && read(fd, &(char) { 0 }, 1) > 0)
                r = -EINVAL;    /* more than buf holds */
        close(fd);
        if (r < 0)
                return r;
        while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
                len--;
        if (len >= size)
                return -EINVAL;
        buf[len] = 0;
        return 0;
}

static int rd(const struct damon *d, char *buf, size_t size, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vrd(d, buf, size, fmt, ap);
        va_end(ap);
        return r;
}

static int rd_u64(const struct damon *d, uint64_t max, uint64_t *ret, const char *fmt, ...) {
        char b[32];
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vrd(d, b, sizeof(b), fmt, ap);
        va_end(ap);
        return r < 0 ? r : parse_u64(b, 0, max, ret);
}

/* --- the state file: which kdamonds are ours --- */

/* The kernel makes the kdamonds' directories anew whenever nr_kdamonds is written, by
 * anyone: their inode numbers, taken right after the daemon wrote it, tell its
 * kdamonds from another tool's that happen to be as many. */
static int kdamond_dirs(const struct damon *d, uint64_t ino[DAMON_PROCS_MAX]) {
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                _cleanup_free_ char *p = NULL;
                struct stat st;

                if (asprintf(&p, "%s/%u", d->root, i) < 0)
                        return -ENOMEM;
                if (stat(p, &st) < 0)
                        return -errno;
                ino[i] = (uint64_t) st.st_ino;
        }
        return 0;
}

static bool same_dirs(const struct damon *d, const uint64_t ino[DAMON_PROCS_MAX]) {
        uint64_t now[DAMON_PROCS_MAX];

        return kdamond_dirs(d, now) >= 0 && memcmp(now, ino, sizeof(now)) == 0;
}

/* The state file's first line, "kdamonds N INO...": N, and the directories' inode
 * numbers (*ret_has_ino false in the file of an older numabalanced, which has none). */
static bool parse_kdamonds(const char *line, uint64_t *ret_n, uint64_t ino[DAMON_PROCS_MAX], bool *ret_has_ino) {
        int off = 0;

        *ret_has_ino = false;
        if (sscanf(line, "kdamonds %" SCNu64 "%n", ret_n, &off) != 1)
                return false;
        line += off;
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++, line += off)
                if (sscanf(line, " %" SCNu64 "%n", &ino[i], &off) != 1)
                        return true;
        *ret_has_ino = true;
        return true;
}

/* Which kdamonds are ours, written atomically (state-dir.h); none: no file. */
static void record(struct damon *d) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f;
        int r;

        if (!d->state_path)
                return;
        if (!d->created) {
                (void) unlink(d->state_path);
                return;
        }
        f = open_memstream(&text, &len);
        if (!f) {
                log_warning_errno(-errno, "Failed to write %s: %m", d->state_path);
                return;
        }
        /* Their number and their directories: the next start tells them by both. */
        fprintf(f, "kdamonds %u", DAMON_PROCS_MAX);
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                fprintf(f, " %" PRIu64, d->kd_ino[i]);
        fputc('\n', f);
        /* A kdamond by its pid; one being turned on, or whose pid is not known, by
         * its target's pid (a crash between "on" and this record leaves no other
         * trace of it). */
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                if (d->ap[i].on && d->ap[i].kpid > 0)
                        fprintf(f, "%u %d\n", i, (int) d->ap[i].kpid);
                else if (d->ap[i].on || d->ap[i].starting)
                        fprintf(f, "%u starting %d\n", i, (int) d->ap[i].pid);
        r = fclose(f) == 0 ? state_dir_write_buf(d->state_path, text, len) : -ENOMEM;
        if (r < 0)
                log_warning_errno(r, "Failed to write %s: %m", d->state_path);
}

static bool all_off(const struct damon *d, uint64_t n) {
        char b[32];

        for (uint64_t i = 0; i < n; i++)
                if (rd(d, b, sizeof(b), "%" PRIu64 "/state", i) < 0 || strcmp(b, "off") != 0)
                        return false;
        return true;
}

/* Kdamond i, recorded while "on" was being written for target pid: off if its
 * pid_target still is that pid and it is not off (another tool would have set its
 * own target since). < 0 when writing "off" failed. */
static int recover_starting(struct damon *d, unsigned i, int pid) {
        uint64_t target;
        char b[32];
        int r;

        if (rd_u64(d, INT32_MAX, &target, "%u/contexts/0/targets/0/pid_target", i) < 0 || target != (uint64_t) pid ||
            rd(d, b, sizeof(b), "%u/state", i) < 0 || strcmp(b, "off") == 0)
                return 0;
        r = wr(d, "off", "%u/state", i);
        log_notice("Turned off kdamond %u (target pid %d) that a previous numabalanced was starting%s", i, pid,
                   r < 0 ? " (failed)" : "");
        return r;
}

int damon_recover(const char *sys_root, const char *state_path) {
        _cleanup_free_ char *buf = NULL;
        struct damon d = {};
        uint64_t nr = 0, ours = 0, ino[DAMON_PROCS_MAX];
        bool left = false, has_ino = false, foreign = false;
        size_t len;
        int r;

        if (!state_path)
                return 0;
        r = state_dir_read(state_path, 4096, 0, &buf, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "Failed to read %s: %m", state_path);
        if (asprintf(&d.root, "%s/" KDAMONDS, sys_root) < 0)
                return -ENOMEM;
        for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                unsigned i;
                int kpid;
                uint64_t now;

                if (parse_kdamonds(line, &ours, ino, &has_ino)) {
                        /* Made anew since (the kernel refuses that while one is on):
                         * none of ours is left, nothing there is ours to touch. */
                        foreign = has_ino && !same_dirs(&d, ino);
                        if (foreign)
                                log_debug("The kdamonds a previous numabalanced recorded are gone: "
                                          "nothing to turn off");
                        continue;
                }
                if (foreign)
                        continue;
                if (sscanf(line, "%u starting %d", &i, &kpid) == 2) {
                        if (i < DAMON_PROCS_MAX && kpid > 0)
                                left |= recover_starting(&d, i, kpid) < 0;
                        continue;
                }
                if (sscanf(line, "%u %d", &i, &kpid) != 2 || i >= DAMON_PROCS_MAX || kpid <= 0)
                        continue;    /* not ours to guess: a bad line turns nothing off */
                if (rd_u64(&d, INT32_MAX, &now, "%u/pid", i) < 0 || now != (uint64_t) kpid)
                        continue;    /* stopped since, or another's now */
                r = wr(&d, "off", "%u/state", i);
                left |= r < 0;
                log_notice("Turned off kdamond %u (pid %d) that a previous numabalanced left%s", i, kpid,
                           r < 0 ? " (failed)" : "");
        }
        if (ours && !foreign && rd_u64(&d, 1024, &nr, "nr_kdamonds") >= 0 && nr == ours && all_off(&d, nr))
                (void) wr(&d, "0", "nr_kdamonds");
        free(d.root);
        /* A kdamond that may still be on keeps the file: the next start tries again. */
        if (!left)
                (void) unlink(state_path);
        return left ? -EBUSY : 0;
}

/* --- choosing --- */

/* Why DAMON cannot be used: what failed, on which file, with its error; on a
 * read-only /sys (systemd's ProtectKernelTunables=yes) what the unit needs. */
static const char *why_errno(struct damon *d, const char *what, const char *op, const char *rel, int r) {
        snprintf(d->why_buf, sizeof(d->why_buf), "%s: %s %s%s%s: %s%s", what, op, d->root, rel ? "/" : "",
                 rel ? rel : "", strerror(r < 0 ? -r : r),
                 r == -EROFS ? " (/sys is read-only to the daemon, as ProtectKernelTunables=yes makes it: its "
                               "unit needs ReadWritePaths=-/sys/kernel/mm/damon/admin)" : "");
        return d->why_buf;
}

static const char *choose(struct damon *d) {
        const char *what = "DAMON's operations cannot be read", *op = "writing", *rel = "nr_kdamonds";
        char ops[256];
        uint64_t nr;
        struct stat sb;
        int r;

        if (stat(d->root, &sb) < 0)
                return errno == ENOENT ? "the kernel has no DAMON sysfs interface (CONFIG_DAMON_SYSFS)"
                                       : why_errno(d, "DAMON's sysfs interface cannot be used", "looking up", NULL,
                                                   -errno);
        r = rd_u64(d, 1024, &nr, "nr_kdamonds");
        if (r < 0)
                return why_errno(d, "nr_kdamonds cannot be read", "reading", "nr_kdamonds", r);
        if (nr > 0)
                return "another tool uses DAMON (nr_kdamonds is not 0): left alone";
        /* avail_operations lives in a context: one is made to read it, then dropped. */
        r = wr(d, "1", "nr_kdamonds");
        if (r >= 0) {
                rel = "0/contexts/nr_contexts";
                r = wr(d, "1", "%s", rel);
        }
        if (r >= 0) {
                op = "reading";
                rel = "0/contexts/0/avail_operations";
                r = rd(d, ops, sizeof(ops), "%s", rel);
        }
        (void) wr(d, "0", "nr_kdamonds");
        if (r < 0)
                return why_errno(d, what, op, rel, r);
        for (char *save = NULL, *w = strtok_r(ops, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                if (strcmp(w, "fvaddr") == 0)
                        return NULL;
        return "the kernel's DAMON has no fvaddr operations (fixed virtual address ranges)";
}

/* The kdamonds a previous run recorded (the state file's "kdamonds N INO...") when
 * nr_kdamonds still is N and their directories still are those: 0 when there is
 * nothing of it to recover on the thread. */
static uint64_t recorded_kdamonds(struct damon *d) {
        _cleanup_free_ char *buf = NULL;
        uint64_t ours = 0, nr, ino[DAMON_PROCS_MAX];
        bool has_ino;
        size_t len;

        if (state_dir_read(d->state_path, 4096, 0, &buf, &len) < 0)
                return 0;
        buf[strcspn(buf, "\n")] = 0;
        if (!parse_kdamonds(buf, &ours, ino, &has_ino) || ours == 0)
                return 0;
        if (rd_u64(d, 1024, &nr, "nr_kdamonds") < 0 || nr != ours || (has_ino && !same_dirs(d, ino)))
                return 0;
        return ours;
}

static int hold(void *userdata, uint32_t id, bool on) {
        struct damon *d = userdata;

        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                struct slot *s = &d->slots[i];

                if (on && s->pid == 0) {
                        s->pid = (pid_t) id;
                        s->starttime = d->asking->starttime;
                        s->n = d->asking->n;
                        memcpy(s->r, d->asking->r, s->n * sizeof(s->r[0]));
                        s->gen++;
                        return 0;
                }
                if (!on && s->pid == (pid_t) id) {
                        s->pid = 0;
                        s->gen++;
                        return 0;
                }
        }
        return on ? -EBUSY : 0;
}

static void *thread_main(void *arg);

int damon_new(const char *sys_root, const char *state_path, bool enabled, bool thread, struct damon **ret) {
        struct damon *d = calloc(1, sizeof(*d));

        if (!d)
                return -ENOMEM;
        pthread_mutex_init(&d->lock, NULL);
        pthread_cond_init(&d->cond, NULL);
        sample_quota_slots_init(&d->turns, DAMON_PROCS_MAX, hold, d);
        if (asprintf(&d->root, "%s/" KDAMONDS, sys_root) < 0 || (state_path && !(d->state_path = strdup(state_path)))) {
                damon_free(d);
                return -ENOMEM;
        }
        if (!enabled)
                d->why = "off in the config ([sample] damon = off)";
        else if (!state_path)
                d->why = "no state directory to record its kdamonds in";
        else if (thread && recorded_kdamonds(d) > 0) {
                /* A previous run's kdamonds: turning them off may wait on one stuck on a
                 * tenant's mmap lock, so the DAMON thread does it first, not the
                 * caller (the main thread). nr_kdamonds is then ours, not another
                 * tool's; fvaddr was there when they were made. */
                d->recover = true;
                if (!(d->sys_root = strdup(sys_root))) {
                        damon_free(d);
                        return -ENOMEM;
                }
        } else {
                (void) damon_recover(sys_root, state_path);
                d->why = choose(d);
        }
        d->in_use = !d->why;
        if (d->in_use)
                log_info("DAMON evidence: in use for promotion (fvaddr, at most %u processes, one kdamond each, "
                         "on the service CPUs)", DAMON_PROCS_MAX);
        else
                log_info("DAMON evidence: not used: %s", d->why);
        if (d->in_use && thread) {
                int r = pthread_create(&d->thread, NULL, thread_main, d);

                if (r != 0) {
                        log_warning_errno(-r, "Failed to start the DAMON thread, DAMON not used: %m");
                        d->in_use = false;
                        d->why = "its thread could not start";
                } else
                        d->has_thread = true;
        }
        *ret = d;
        return 0;
}

int damon_set_proc_root(struct damon *d, const char *proc_root) {
        char *c = strdup(proc_root);

        if (!c)
                return -ENOMEM;
        free(d->proc_root);
        d->proc_root = c;
        return 0;
}

bool damon_in_use(const struct damon *d) {
        return d && d->in_use;
}

const char *damon_why(const struct damon *d) {
        return !d ? "not set up" : d->in_use ? "in use" : d->why;
}

void damon_set_cold_age(struct damon *d, uint64_t cold_age_ms) {
        if (!damon_in_use(d))
                return;
        pthread_mutex_lock(&d->lock);
        d->cold_aggrs = cold_age_ms * 1000 / AGGR_US;
        pthread_mutex_unlock(&d->lock);
}

void damon_set_cpus(struct damon *d, const nb_cpumask *cpus) {
        if (!damon_in_use(d))
                return;
        pthread_mutex_lock(&d->lock);
        d->cpus = *cpus;
        pthread_mutex_unlock(&d->lock);
}

static struct slot *slot_of(struct damon *d, pid_t pid) {
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                if (d->slots[i].pid == pid)
                        return &d->slots[i];
        return NULL;
}

static bool same_regions(const struct slot *s, const struct damon_want *w) {
        return s->n == w->n && memcmp(s->r, w->r, w->n * sizeof(w->r[0])) == 0;
}

void damon_sync(struct damon *d, const struct damon_want *w, size_t n, uint64_t now_ms) {
        uint64_t before[DAMON_PROCS_MAX];
        bool changed = false;

        if (!damon_in_use(d))
                return;
        pthread_mutex_lock(&d->lock);
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                before[i] = d->slots[i].gen;
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                bool wanted = false;

                for (size_t j = 0; d->slots[i].pid && j < n && !wanted; j++)
                        wanted = w[j].pid == d->slots[i].pid && w[j].n > 0;
                if (d->slots[i].pid && !wanted)
                        sample_quota_slots_forget(&d->turns, (uint32_t) d->slots[i].pid, now_ms);
        }
        for (size_t j = 0; j < n; j++) {
                struct slot *s;

                if (w[j].pid <= 0 || w[j].n == 0 || w[j].n > DAMON_TARGET_REGIONS_MAX)
                        continue;
                d->asking = &w[j];
                (void) sample_quota_slots_ask(&d->turns, (uint32_t) w[j].pid, w[j].owner, now_ms);
                s = slot_of(d, w[j].pid);
                if (s && s->starttime != w[j].starttime) {
                        s->starttime = w[j].starttime;   /* another process: restarted */
                        s->gen++;
                }
                if (s && !same_regions(s, &w[j])) {
                        s->n = w[j].n;
                        memcpy(s->r, w[j].r, s->n * sizeof(s->r[0]));
                        s->gen++;
                }
        }
        /* Ids no longer wanted and never held stay in the turns' table: forget them. */
        for (size_t k = 0; k < d->turns.n; k++) {
                bool wanted = false;

                for (size_t j = 0; j < n && !wanted; j++)
                        wanted = (uint32_t) w[j].pid == d->turns.v[k].id && w[j].n > 0;
                if (!wanted) {
                        sample_quota_slots_forget(&d->turns, d->turns.v[k].id, now_ms);
                        k--;
                }
        }
        d->asking = NULL;
        /* The thread is woken only for a change (every tick would make its rounds, and
         * so its reads, as frequent as the ticks). */
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                changed |= d->slots[i].gen != before[i];
        if (changed)
                pthread_cond_signal(&d->cond);
        pthread_mutex_unlock(&d->lock);
}

bool damon_monitored(const struct damon *d, pid_t pid) {
        bool r = false;

        if (!damon_in_use(d) || pid <= 0)
                return false;
        pthread_mutex_lock((pthread_mutex_t *) &d->lock);
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                r |= d->slots[i].pid == pid;
        pthread_mutex_unlock((pthread_mutex_t *) &d->lock);
        return r;
}

size_t damon_regions_of(const struct damon *d, pid_t pid, struct damon_range *out, size_t max) {
        size_t n = 0;

        if (!damon_in_use(d) || pid <= 0)
                return 0;
        pthread_mutex_lock((pthread_mutex_t *) &d->lock);
        for (unsigned i = 0; i < DAMON_PROCS_MAX && !n; i++)
                if (d->slots[i].pid == pid)
                        for (; n < d->slots[i].n && n < max; n++)
                                out[n] = d->slots[i].r[n];
        pthread_mutex_unlock((pthread_mutex_t *) &d->lock);
        return n;
}

size_t damon_take(struct damon *d, struct damon_result **ret) {
        size_t n;

        *ret = NULL;
        if (!damon_in_use(d))
                return 0;
        pthread_mutex_lock(&d->lock);
        n = d->n_pending;
        if (n) {
                *ret = malloc(n * sizeof(**ret));
                if (*ret) {
                        memcpy(*ret, d->pending, n * sizeof(**ret));
                        d->n_pending = 0;
                } else
                        n = 0;
        }
        pthread_mutex_unlock(&d->lock);
        return n;
}

void damon_results_free(struct damon_result *r, size_t n) {
        for (size_t i = 0; r && i < n; i++) {
                free(r[i].hot);
                free(r[i].cold);
        }
        free(r);
}

void damon_get_stats(const struct damon *d, struct damon_stats *ret) {
        *ret = (struct damon_stats) {};
        if (!d)
                return;
        pthread_mutex_lock((pthread_mutex_t *) &d->lock);
        *ret = d->st;
        pthread_mutex_unlock((pthread_mutex_t *) &d->lock);
}

/* --- the DAMON thread: sysfs, never on the event loop --- */

static void count(struct damon *d, uint64_t *field, uint64_t n) {
        pthread_mutex_lock(&d->lock);
        *field += n;
        pthread_mutex_unlock(&d->lock);
}

/* Kdamond i's target regions, s's. */
static int write_regions(struct damon *d, unsigned i, const struct slot *s) {
        int r = wr_u64(d, s->n, "%u/contexts/0/targets/0/regions/nr_regions", i);

        for (size_t k = 0; r >= 0 && k < s->n; k++) {
                char rel[96];

                snprintf(rel, sizeof(rel), "%u/contexts/0/targets/0/regions/%zu", i, k);
                r = wr_u64(d, s->r[k].start, "%s/start", rel);
                r = r < 0 ? r : wr_u64(d, s->r[k].end, "%s/end", rel);
        }
        return r;
}

/* Writes kdamond i's context for s: fvaddr (with vaddr the kernel replaces the
 * target's regions by three covering its whole address space at every update_us, so
 * the slow VMAs written would hold only until the first update; fvaddr keeps them),
 * our intervals, s's pid and regions, one
 * `stat` scheme for every region: those accessed in an aggregation at least half as
 * often as the hottest are hot (dense_only()), those not accessed for cold_aggrs
 * aggregations (their age) cold. */
static int configure(struct damon *d, unsigned i, const struct slot *s) {
        const char *c = "contexts/0";
        int r = 0;

        r = r < 0 ? r : wr(d, "1", "%u/contexts/nr_contexts", i);
        r = r < 0 ? r : wr(d, "fvaddr", "%u/%s/operations", i, c);
        r = r < 0 ? r : wr_u64(d, SAMPLE_US, "%u/%s/monitoring_attrs/intervals/sample_us", i, c);
        r = r < 0 ? r : wr_u64(d, AGGR_US, "%u/%s/monitoring_attrs/intervals/aggr_us", i, c);
        r = r < 0 ? r : wr_u64(d, UPDATE_US, "%u/%s/monitoring_attrs/intervals/update_us", i, c);
        r = r < 0 ? r : wr_u64(d, DAMON_REGIONS_MAX, "%u/%s/monitoring_attrs/nr_regions/max", i, c);
        r = r < 0 ? r : wr_u64(d, REGIONS_MIN, "%u/%s/monitoring_attrs/nr_regions/min", i, c);
        r = r < 0 ? r : wr(d, "1", "%u/%s/targets/nr_targets", i, c);
        r = r < 0 ? r : wr_u64(d, (uint64_t) s->pid, "%u/%s/targets/0/pid_target", i, c);
        r = r < 0 ? r : write_regions(d, i, s);
        r = r < 0 ? r : wr(d, "1", "%u/%s/schemes/nr_schemes", i, c);
        r = r < 0 ? r : wr(d, "stat", "%u/%s/schemes/0/action", i, c);
        r = r < 0 ? r : wr(d, "0", "%u/%s/schemes/0/access_pattern/sz/min", i, c);
        r = r < 0 ? r : wr(d, "18446744073709551615", "%u/%s/schemes/0/access_pattern/sz/max", i, c);
        r = r < 0 ? r : wr(d, "0", "%u/%s/schemes/0/access_pattern/nr_accesses/min", i, c);
        r = r < 0 ? r : wr(d, "4294967295", "%u/%s/schemes/0/access_pattern/nr_accesses/max", i, c);
        r = r < 0 ? r : wr(d, "0", "%u/%s/schemes/0/access_pattern/age/min", i, c);
        r = r < 0 ? r : wr(d, "4294967295", "%u/%s/schemes/0/access_pattern/age/max", i, c);
        return r;
}

/* kdamond i's thread on the service CPUs (again if it moved or was restarted). */
static void pin(struct damon *d, unsigned i, const nb_cpumask *cpus) {
        _cleanup_free_ cpu_set_t *want = NULL, *have = NULL;
        size_t size;
        uint64_t kpid;

        if (rd_u64(d, INT32_MAX, &kpid, "%u/pid", i) < 0 || kpid == 0)
                return;
        d->ap[i].kpid = (pid_t) kpid;
        if (cpumask_weight(cpus) == 0)
                return;
        want = service_cpus_cpuset_new(cpus, &size);
        have = service_cpus_cpuset_new(cpus, &size);
        if (!want || !have)
                return;
        if (sched_getaffinity((pid_t) kpid, size, have) == 0 && CPU_EQUAL_S(size, want, have))
                return;
        if (sched_setaffinity((pid_t) kpid, size, want) < 0) {
                count(d, &d->st.affinity_refused, 1);
                if (!d->affinity_logged)
                        log_warning_errno(-errno, "Failed to pin kdamond %" PRIu64 " to the service CPUs: %m", kpid);
                d->affinity_logged = true;
        }
}

/* Kdamond i off: false when it may still run (writing "off" failed and it does not
 * read "off"), and then it stays recorded, for the next try or the next start. */
static bool turn_off(struct damon *d, unsigned i) {
        char b[32];

        /* Off unless it reads off (stopped by itself: writing off then fails). */
        if (d->ap[i].on && !(rd(d, b, sizeof(b), "%u/state", i) >= 0 && strcmp(b, "off") == 0) &&
            wr(d, "off", "%u/state", i) < 0 && !(rd(d, b, sizeof(b), "%u/state", i) >= 0 && strcmp(b, "off") == 0)) {
                count(d, &d->st.errors, 1);
                return false;
        }
        d->ap[i] = (struct applied) {};
        return true;
}

/* Whether DAMON is ours to use now (1): nr_kdamonds 0 (set to ours) or ours already;
 * 0 when another tool's; < 0 when nr_kdamonds cannot be read: then nothing is
 * forgotten (our kdamonds may well still run) and the round is skipped. */
static int take_damon(struct damon *d) {
        uint64_t nr;
        char b[8];
        int r = rd_u64(d, 1024, &nr, "nr_kdamonds");

        if (r < 0) {
                count(d, &d->st.errors, 1);
                return r;
        }

        /* Another tool may set nr_kdamonds whenever none of ours runs (the kernel
         * refuses it only while one is on): then its kdamonds are in those
         * directories, and nothing more is written there. Ours are known by the
         * directories the kernel made when the daemon wrote nr_kdamonds, not by
         * their number, which the other tool may well have chosen too. */
        if (d->created && nr == DAMON_PROCS_MAX && same_dirs(d, d->kd_ino))
                return 1;
        if (d->created) {
                for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                        d->ap[i] = (struct applied) {};
                d->created = false;
                record(d);
        }
        if (nr != 0) {
                if (!d->taken_logged)
                        log_notice("DAMON is in use by another tool now (nr_kdamonds is not 0): no kdamond of "
                                   "numabalanced's until it is 0 again");
                d->taken_logged = true;
                return 0;
        }
        d->taken_logged = false;
        snprintf(b, sizeof(b), "%u", DAMON_PROCS_MAX);
        if (wr(d, b, "nr_kdamonds") < 0)
                return 0;
        if (kdamond_dirs(d, d->kd_ino) < 0) {
                /* Not to be told from another tool's later: given back at once. */
                count(d, &d->st.errors, 1);
                (void) wr(d, "0", "nr_kdamonds");
                return 0;
        }
        d->created = true;
        record(d);
        return 1;
}

static void give_back(struct damon *d) {
        if (!d->created)
                return;
        bool off = true;

        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                off &= turn_off(d, i);
        /* One still on keeps the record (and nr_kdamonds): tried again next round,
         * or at the next start from the state file. */
        if (!off) {
                record(d);
                return;
        }
        if (all_off(d, DAMON_PROCS_MAX))
                (void) wr(d, "0", "nr_kdamonds");
        d->created = false;
        record(d);
}

/* Whether pid still is the process wanted (its start time): a pid reused meanwhile
 * must not be monitored, nor its regions read as the wanted one's. */
static bool same_process(struct damon *d, pid_t pid, uint64_t starttime) {
        struct proc_stat st;

        if (proc_read_stat(d->proc_root ? d->proc_root : "/proc", pid, &st) >= 0 && st.starttime == starttime)
                return true;
        count(d, &d->st.pid_reused, 1);
        return false;
}

static void start(struct damon *d, unsigned i, const struct slot *s, const nb_cpumask *cpus) {
        int r;

        if (!same_process(d, s->pid, s->starttime)) {
                /* Gone or another process: no kdamond; the slot is freed (free_stopped). */
                d->ap[i] = (struct applied) { .pid = s->pid, .gen = s->gen, .failed = true };
                return;
        }
        r = configure(d, i, s);

        if (r >= 0) {
                /* Recorded before "on": a crash right after it leaves a kdamond the
                 * next start finds by its target. */
                d->ap[i] = (struct applied) { .pid = s->pid, .gen = s->gen, .starting = true };
                record(d);
                r = wr(d, "on", "%u/state", i);
        }
        d->ap[i] = (struct applied) { .pid = s->pid, .starttime = s->starttime, .gen = s->gen, .on = r >= 0,
                                      .failed = r < 0 };
        /* The pid checked before pid_target was written may have been reused since. */
        if (r >= 0 && !same_process(d, s->pid, s->starttime)) {
                if (turn_off(d, i))
                        d->ap[i] = (struct applied) { .pid = s->pid, .gen = s->gen, .failed = true };
                record(d);
                return;
        }
        if (r < 0) {
                count(d, &d->st.errors, 1);
                log_debug_errno(r, "pid=%d: failed to start a kdamond: %m", (int) s->pid);
                record(d);
                return;
        }
        pin(d, i, cpus);
        record(d);
}

/* The same process's slow VMAs changed (some promoted whole, a new one): its running
 * kdamond takes the new regions with `commit`, which keeps what it learnt of the rest,
 * where turning it off and on would start from nothing. Failing that, it is restarted.
 * A commit makes the kernel look pid_target up again, by number: the process is
 * checked right before it (a pid reused since the decision would point the kdamond at
 * another process), and a slot now wanted for another process under the same pid is
 * restarted, which checks it too; either way it is not committed. */
static void recommit(struct damon *d, unsigned i, const struct slot *s) {
        int r;

        if (s->starttime != d->ap[i].starttime)
                return;
        r = write_regions(d, i, s);
        if (r >= 0 && !same_process(d, s->pid, s->starttime))
                return;
        if (r >= 0)
                r = wr(d, "commit", "%u/state", i);
        if (r < 0) {
                log_debug_errno(r, "pid=%d: kdamond %u did not take its new regions, restarting it: %m",
                                (int) s->pid, i);
                return;
        }
        /* Reused between the check and the commit: turned off by the caller. */
        if (!same_process(d, s->pid, s->starttime))
                return;
        d->ap[i].gen = s->gen;
        count(d, &d->st.commits, 1);
}

/* One entry of tried_regions: -EINVAL for values that do not make a region. */
static int read_region(struct damon *d, unsigned i, unsigned k, struct damon_range *ret, uint64_t *acc,
                       uint64_t *age) {
        const char *t = "contexts/0/schemes/0/tried_regions";
        int r;

        r = rd_u64(d, UINT64_MAX, &ret->start, "%u/%s/%u/start", i, t, k);
        r = r < 0 ? r : rd_u64(d, UINT64_MAX, &ret->end, "%u/%s/%u/end", i, t, k);
        r = r < 0 ? r : rd_u64(d, UINT32_MAX, acc, "%u/%s/%u/nr_accesses", i, t, k);
        r = r < 0 ? r : rd_u64(d, UINT32_MAX, age, "%u/%s/%u/age", i, t, k);
        if (r == -ENOENT)
                return r;
        if (r < 0 || ret->end <= ret->start)
                return -EINVAL;
        return 0;
}

static void publish(struct damon *d, pid_t pid, uint64_t starttime, struct damon_range *hot, size_t n,
                    struct damon_range *cold, size_t n_cold) {
        pthread_mutex_lock(&d->lock);
        if (d->n_pending == PENDING_MAX) {
                free(d->pending[0].hot);
                free(d->pending[0].cold);
                memmove(d->pending, d->pending + 1, (PENDING_MAX - 1) * sizeof(d->pending[0]));
                d->n_pending--;
                d->st.results_dropped++;
        }
        d->pending[d->n_pending++] = (struct damon_result) { .pid = pid, .starttime = starttime, .hot = hot,
                                                             .n_hot = n, .cold = cold, .n_cold = n_cold };
        d->st.reads++;
        d->st.regions += n;
        pthread_mutex_unlock(&d->lock);
}

/* The hot regions (n, their accesses in acc) at least half as accessed as the
 * hottest (peak), kept in order; returns how many. A region is one sampled page an
 * interval: one that straddles a hot part's edge is found accessed in about the share
 * of it that is hot, and DAMON's regions here are megabytes (DAMON_REGIONS_MAX over
 * the slow VMAs), so counting every region accessed at all promoted up to 12 MiB of
 * cold memory beside each hot window (tiering-big). Mostly hot regions name their
 * pages; the rest of an edge is left to page samples and to later reads, as DAMON
 * splits the region. */
static size_t dense_only(struct damon_range *hot, const uint64_t *acc, size_t n, uint64_t peak) {
        size_t k = 0;

        for (size_t j = 0; j < n; j++)
                if (2 * acc[j] >= peak)
                        hot[k++] = hot[j];
        return k;
}

/* Kdamond i's hot regions of its last aggregation, and its cold ones. */
static void read_hot(struct damon *d, unsigned i) {
        struct damon_range *hot = calloc(DAMON_REGIONS_MAX, sizeof(*hot));
        struct damon_range *cold = calloc(DAMON_REGIONS_MAX, sizeof(*cold));
        uint64_t hot_acc[DAMON_REGIONS_MAX], peak = 0;
        uint64_t t0 = clock_now_usec(), bad = 0, cold_aggrs;
        size_t n = 0, n_cold = 0;
        int r;

        if (!hot || !cold) {
                free(hot);
                free(cold);
                return;
        }
        pthread_mutex_lock(&d->lock);
        cold_aggrs = d->cold_aggrs;
        pthread_mutex_unlock(&d->lock);
        r = wr(d, "update_schemes_tried_regions", "%u/state", i);
        pthread_mutex_lock(&d->lock);
        d->st.last_read_us = clock_now_usec() - t0;
        pthread_mutex_unlock(&d->lock);
        if (r < 0) {
                free(hot);
                free(cold);
                count(d, &d->st.errors, 1);
                return;
        }
        /* At most DAMON_REGIONS_MAX entries, and as many more looked at: a kernel
         * that lists more than it keeps is not followed further. */
        for (unsigned k = 0; k < 2 * DAMON_REGIONS_MAX; k++) {
                struct damon_range g;
                uint64_t acc, age;

                r = read_region(d, i, k, &g, &acc, &age);
                if (r == -ENOENT)
                        break;
                if (r < 0 || n + n_cold == DAMON_REGIONS_MAX) {
                        bad++;
                        continue;
                }
                if (acc >= 1) {
                        hot_acc[n] = acc;
                        peak = acc > peak ? acc : peak;
                        hot[n++] = g;
                } else if (cold_aggrs && age >= cold_aggrs)
                        cold[n_cold++] = g;
        }
        count(d, &d->st.regions_bad, bad);
        n = dense_only(hot, hot_acc, n, peak);
        publish(d, d->ap[i].pid, d->ap[i].starttime, hot, n, cold, n_cold);
}

/* A kdamond that failed to start or stopped by itself (its process exited, or the
 * kernel stopped it) gives its slot up, counted, so that another process gets a turn;
 * its process asks again at the next sync, and so is retried later. */
static void free_stopped(struct damon *d, uint64_t now_ms) {
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                pid_t pid = d->ap[i].pid;

                if (!pid || d->ap[i].on || d->ap[i].starting)
                        continue;
                pthread_mutex_lock(&d->lock);
                if (d->slots[i].pid == pid) {
                        sample_quota_slots_forget(&d->turns, (uint32_t) pid, now_ms);
                        d->st.slots_freed++;
                }
                pthread_mutex_unlock(&d->lock);
                d->ap[i] = (struct applied) {};
        }
        record(d);
}

void damon_round(struct damon *d, uint64_t now_ms) {
        struct slot want[DAMON_PROCS_MAX];
        nb_cpumask cpus;
        bool need = false;
        unsigned running = 0;
        char b[32];
        int r;

        pthread_mutex_lock(&d->lock);
        memcpy(want, d->slots, sizeof(want));
        cpus = d->cpus;
        d->st.rounds++;
        pthread_mutex_unlock(&d->lock);
        /* Still ours? (before anything is written into the kdamonds' directories) */
        if (d->created && take_damon(d) < 0)
                return;
        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                if (d->ap[i].pid && want[i].pid == d->ap[i].pid && want[i].gen != d->ap[i].gen && d->ap[i].on)
                        recommit(d, i, &want[i]);
                if (d->ap[i].pid && (want[i].pid != d->ap[i].pid || want[i].gen != d->ap[i].gen)) {
                        turn_off(d, i);
                        record(d);
                }
                need |= want[i].pid != 0;
        }
        if (!need) {
                give_back(d);
        } else if (take_damon(d) > 0) {
                for (unsigned i = 0; i < DAMON_PROCS_MAX; i++)
                        if (want[i].pid && !d->ap[i].pid)
                                start(d, i, &want[i], &cpus);
                for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                        if (!d->ap[i].on)
                                continue;
                        /* A kdamond stops by itself when its process exits. Only a
                         * read saying "off" counts: a failed read is no news (the
                         * kdamond may run, so it stays recorded), the read is skipped. */
                        r = rd(d, b, sizeof(b), "%u/state", i);
                        if (r < 0) {
                                count(d, &d->st.errors, 1);
                                continue;
                        }
                        if (strcmp(b, "off") == 0) {
                                d->ap[i].on = false;
                                record(d);
                                continue;
                        }
                        pin(d, i, &cpus);
                        running++;
                        /* One read per ROUND_MS at most, whatever woke the thread: two
                         * reads closer together would make a page "hot in two reads"
                         * within one aggregation or two. */
                        if (d->ap[i].has_read && now_ms < d->ap[i].read_ms + ROUND_MS)
                                continue;
                        d->ap[i].has_read = true;
                        d->ap[i].read_ms = now_ms;
                        read_hot(d, i);
                }
        }
        free_stopped(d, now_ms);
        pthread_mutex_lock(&d->lock);
        d->st.running = running;
        pthread_mutex_unlock(&d->lock);
}

static void destroy(struct damon *d);

static void *thread_main(void *arg) {
        struct damon *d = arg;
        bool orphan;

        if (d->recover)
                (void) damon_recover(d->sys_root, d->state_path);
        for (;;) {
                damon_round(d, clock_now_ms());
                pthread_mutex_lock(&d->lock);
                if (!d->stop) {
                        struct timespec until = clock_deadline_ts(CLOCK_REALTIME, ROUND_MS * NSEC_PER_MSEC);

                        (void) pthread_cond_timedwait(&d->cond, &d->lock, &until);
                }
                if (d->stop) {
                        pthread_mutex_unlock(&d->lock);
                        break;
                }
                pthread_mutex_unlock(&d->lock);
        }
        give_back(d);
        pthread_mutex_lock(&d->lock);
        d->finished = true;
        orphan = d->orphaned;
        pthread_mutex_unlock(&d->lock);
        if (orphan)
                destroy(d);     /* damon_free() gave up waiting: the thread frees it */
        return NULL;
}

static void destroy(struct damon *d) {
        for (size_t i = 0; i < d->n_pending; i++) {
                free(d->pending[i].hot);
                free(d->pending[i].cold);
        }
        sample_quota_slots_done(&d->turns);
        pthread_mutex_destroy(&d->lock);
        pthread_cond_destroy(&d->cond);
        free(d->root);
        free(d->sys_root);
        free(d->proc_root);
        free(d->state_path);
        free(d);
}

void damon_free(struct damon *d) {
        if (!d)
                return;
        if (d->has_thread) {
                struct timespec until;

                pthread_mutex_lock(&d->lock);
                d->stop = true;
                pthread_cond_signal(&d->cond);
                pthread_mutex_unlock(&d->lock);
                until = clock_deadline_ts(CLOCK_REALTIME, JOIN_WAIT_S * NSEC_PER_SEC);
                if (pthread_timedjoin_np(d->thread, NULL, &until) != 0) {
                        bool finished;

                        /* Stuck in the kernel (a sysfs write waiting for a kdamond held
                         * by a tenant's mmap lock): the stop does not wait. The thread
                         * frees the module when it returns, turning off what it can;
                         * what it cannot, the state file names for the next start. */
                        log_warning("The DAMON thread did not stop within %d s: left to finish on its own, "
                                    "its kdamonds recorded for the next start", JOIN_WAIT_S);
                        pthread_mutex_lock(&d->lock);
                        finished = d->finished;
                        d->orphaned = !finished;
                        pthread_mutex_unlock(&d->lock);
                        if (!finished) {
                                pthread_detach(d->thread);
                                return;
                        }
                        pthread_join(d->thread, NULL);   /* it returned just now */
                }
        } else
                give_back(d);
        destroy(d);
}

/* --- DAMON's reads as page evidence (the tick's, damon_feed) ----------------------- */

struct feed {
        struct page_agg *a;
        unsigned node;
        const struct proc_rec *p;
        uint64_t unmapped;
};

static void damon_page(void *userdata, uint64_t addr) {
        struct feed *f = userdata;

        if (!proc_records_mapped(f->p, addr)) {
                f->unmapped++;
                return;
        }
        (void) page_agg_add_counts(f->a, addr, f->node, 1);
}

/* The read's cold regions become p's (plan.h, rule 8: what the exchange may demote):
 * sorted, as the kdamond lists them. Out of memory, p has none. */
static void keep_cold(struct proc_rec *p, const struct damon_result *res) {
        free(p->cold);
        p->cold = NULL;
        p->n_cold = 0;
        p->cold_ms = clock_now_ms();
        if (!res->n_cold || !(p->cold = calloc(res->n_cold, sizeof(*p->cold))))
                return;
        for (size_t k = 0; k < res->n_cold; k++)
                if (!p->n_cold || res->cold[k].start >= p->cold[p->n_cold - 1].end)
                        p->cold[p->n_cold++] = res->cold[k];
}

void damon_feed_results(const struct damon_result *res, size_t n, struct proc_records *procs,
                        const struct topology *topo, struct counters *c) {
        for (size_t i = 0; i < n; i++) {
                struct proc_rec *p = proc_records_find(procs, res[i].pid);
                struct feed f = {};
                uint64_t capped = 0, fed;

                /* By pid and start time: a read of a pid reused since is not this one's. */
                if (!p || p->starttime != res[i].starttime)
                        continue;
                keep_cold(p, &res[i]);
                if (!p->n_slow)
                        continue;       /* a donor: its cold regions only */
                /* Its page samples cover its accesses, or are coming and not yet judged
                 * (lib/sampled-cold.h): they name its hot pages one by one, where a hot
                 * region of DAMON's carries the cold pages at its edges up with it
                 * (issue 45's cold promotions, all in a hot part's first seconds). */
                if (sampled_cold_names_hot(p->sampled, clock_now_ms()))
                        continue;
                if (p->hot_node < 0 || topology_node_slow(topo, (unsigned) p->hot_node)) {
                        c->damon_no_node++;
                        continue;
                }
                if (!p->seen && page_agg_new(topo, page_size(), &p->seen) < 0)
                        continue;
                if (page_agg_pages(p->seen) >= DAMON_PAGES_HELD_MAX) {
                        c->damon_full++;
                        continue;
                }
                page_agg_set_clock(p->seen, (uint32_t) (clock_now_ms() / 1000));
                f = (struct feed) { .a = p->seen, .node = (unsigned) p->hot_node, .p = p };
                fed = damon_pages_feed(res[i].hot, res[i].n_hot, p->slow, p->n_slow, page_size(),
                                       DAMON_PAGES_PER_READ, damon_page, &f, &capped);
                c->damon_pages += fed - f.unmapped;
                c->damon_capped += capped;
        }
}

void damon_feed(struct damon *d, struct proc_records *procs, const struct topology *topo, struct counters *c) {
        struct damon_result *res = NULL;
        size_t n = damon_take(d, &res);

        damon_feed_results(res, n, procs, topo, c);
        damon_results_free(res, n);
}

/* Whether p wants a kdamond at tick: watched, in a mode that moves or advises. */
static bool damon_may_watch(const struct proc_rec *p, uint64_t tick) {
        return !p->exited && p->cg && p->seen_tick == tick && cg_mode_watched(p->cg->mode);
}

/* Whether p is large enough, and in a mode that moves, to give cold memory up for the
 * exchange (plan.h, rule 8): it is then watched over all its mapped ranges. */
static bool damon_gives(const struct proc_rec *p, uint64_t tick) {
        return damon_may_watch(p, tick) && p->n_mapped && cg_mode_moves(p->cg->mode) &&
               p->rss_kb >= DAMON_DONOR_MIN_KB;
}

/* A donor: one that may give and has none of its memory on a slow node, watched only
 * for its cold regions, with a kdamond left over. */
static bool damon_donor(const struct proc_rec *p, uint64_t tick) {
        return !p->n_slow && damon_gives(p, tick);
}

/* p's wanted regions: its mapped ranges (ranges, *cap of them, grown here), or its
 * slow VMAs alone. A process with slow pages that may give is watched over both:
 * its slow VMAs may be a few pages of a library, and its cold memory, what its own
 * and others' exchange demote, is on the fast node (one run: a donor with 0.9 MiB on
 * node 2 was watched over those alone, and gave nothing). Returns false out of memory. */
static bool want_of(struct damon_want *w, const struct proc_rec *p, bool mapped, struct damon_range **ranges,
                    size_t *cap) {
        const struct damon_range *r = p->slow;
        size_t n = p->n_slow;

        if (mapped) {
                if (p->n_mapped > *cap) {
                        struct damon_range *more = realloc(*ranges, p->n_mapped * sizeof(**ranges));

                        if (!more)
                                return false;
                        *ranges = more;
                        *cap = p->n_mapped;
                }
                for (size_t m = 0; m < p->n_mapped; m++)
                        (*ranges)[m] = (struct damon_range) { p->mapped[m].start, p->mapped[m].end };
                r = *ranges;
                n = p->n_mapped;
        }
        *w = (struct damon_want) { .pid = p->pid, .starttime = p->starttime, .owner = p->cg->turn_uid };
        w->n = damon_pages_targets(r, n, w->r, DAMON_TARGET_REGIONS_MAX);
        return true;
}

/* The at most max largest donors at tick into top, largest first: one pass, an
 * insertion into a list of at most DAMON_PROCS_MAX. Returns how many. */
static size_t largest_donors(const struct proc_records *procs, uint64_t tick, const struct proc_rec **top,
                             size_t max) {
        size_t k = 0;

        for (size_t i = 0; i < procs->n && max; i++) {
                const struct proc_rec *p = procs->v[i];
                size_t j;

                if (!damon_donor(p, tick) || (k == max && p->rss_kb <= top[k - 1]->rss_kb))
                        continue;
                j = k < max ? k++ : k - 1;
                for (; j > 0 && top[j - 1]->rss_kb < p->rss_kb; j--)
                        top[j] = top[j - 1];
                top[j] = p;
        }
        return k;
}

void damon_sync_procs(struct damon *d, const struct proc_records *procs, const struct topology *t, uint64_t tick,
                      const nb_cpumask *cpus, uint64_t now) {
        _cleanup_free_ struct damon_want *w = NULL;
        _cleanup_free_ struct damon_range *ranges = NULL;
        const struct proc_rec *top[DAMON_PROCS_MAX];
        bool tiers = t && !nodemask_empty(&t->slow);
        size_t n = 0, cap = 0, k;

        if (!damon_in_use(d))
                return;
        damon_set_cpus(d, cpus);
        for (size_t i = 0; i < procs->n; i++)
                n += procs->v[i]->n_slow > 0;
        if (!(w = calloc(n + DAMON_PROCS_MAX, sizeof(*w))))
                return;
        n = 0;
        for (size_t i = 0; i < procs->n; i++) {
                const struct proc_rec *p = procs->v[i];

                if (p->n_slow && damon_may_watch(p, tick) && want_of(&w[n], p, damon_gives(p, tick), &ranges, &cap))
                        n++;
        }
        /* The kdamonds left after the processes with pages on a slow node go to donors,
         * the largest first (each tick anew: one that gains slow pages takes its place). */
        k = tiers && n < DAMON_PROCS_MAX ? largest_donors(procs, tick, top, DAMON_PROCS_MAX - n) : 0;
        for (size_t i = 0; i < k && want_of(&w[n], top[i], true, &ranges, &cap); i++)
                n++;
        damon_sync(d, w, n, now);
}
