/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The affinity keeper's records and their state file (affinity-store.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "affinity-store.h"
#include "cleanup.h"
#include "clock.h"
#include "log.h"
#include "parse.h"
#include "state-dir.h"

/* The first line; the second is "boot " and the boot id it was written in. Format 2,
 * still read, has no previous placed mask on its lines. */
#define STATE_HEADER "numabalanced-affinity 3"
#define STATE_HEADER_2 "numabalanced-affinity 2"
#define STATE_BOOT "boot "
#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
/* A state file bigger than this was not written by us: 65,536 lines of three short
 * lists take a few MiB; the longest lists (every other CPU of 8,192) would take more,
 * and are refused with the file. The writer holds to the same bound
 * (affinity_commit()). */
#define STATE_FILE_MAX (64u << 20)
/* The longest line: three lists and five numbers. */
#define LINE_MAX_BYTES (3 * CPUMASK_STRMAX + 128)
/* The writer's buffer: written out whenever less than a line is left. */
#define OUT_SIZE (256u << 10)
/* Refused files kept aside (<state file>.refused-<time>), the newest ones. */
#define REFUSED_KEEP 3
/* Records written between two calls of the serve callback. */
#define SERVE_EVERY_RECORDS 2048
/* pid_max is at most 4,194,304 (PID_MAX_LIMIT). */
#define PID_LIMIT 4194304

/* --- masks --------------------------------------------------------------------- */

static unsigned used_words(const nb_cpumask *m) {
        unsigned n = ELEMENTSOF(m->w);
        while (n > 0 && m->w[n - 1] == 0)
                n--;
        return n;
}

void affinity_store_original(const struct aff_thread *t, nb_cpumask *ret) {
        *ret = (nb_cpumask) {};
        memcpy(ret->w, t->masks, t->nwords * sizeof(uint64_t));
}

void affinity_store_placed(const struct aff_thread *t, nb_cpumask *ret) {
        *ret = (nb_cpumask) {};
        memcpy(ret->w, t->masks + t->nwords, t->nwords * sizeof(uint64_t));
}

bool affinity_store_previous(const struct aff_thread *t, nb_cpumask *ret) {
        *ret = (nb_cpumask) {};
        if (!t->has_previous)
                return false;
        memcpy(ret->w, t->masks + 2 * t->nwords, t->nwords * sizeof(uint64_t));
        return true;
}

/* Stores the masks trimmed to the words they use: 16 bytes a thread on a machine of
 * 64 CPUs, rather than 2 KiB (24 while it has a previous mask). */
int affinity_store_set_masks(struct aff_thread *t, const nb_cpumask *original, const nb_cpumask *placed,
                             const nb_cpumask *previous) {
        unsigned a = used_words(original), b = used_words(placed), nw = a > b ? a : b;
        size_t n_masks = previous ? 3 : 2;
        uint64_t *m;

        if (previous && used_words(previous) > nw)
                nw = used_words(previous);
        m = calloc(n_masks * (nw ? nw : 1), sizeof(uint64_t));
        if (!m)
                return -ENOMEM;
        memcpy(m, original->w, nw * sizeof(uint64_t));
        memcpy(m + nw, placed->w, nw * sizeof(uint64_t));
        if (previous)
                memcpy(m + 2 * nw, previous->w, nw * sizeof(uint64_t));
        free(t->masks);
        t->masks = m;
        t->nwords = nw;
        t->has_previous = previous != NULL;
        t->drop_previous = false;
        t->line_len = 0;
        return 0;
}

bool affinity_store_placed_equals(const struct aff_thread *t, const nb_cpumask *m) {
        nb_cpumask p;
        affinity_store_placed(t, &p);
        return cpumask_equal(&p, m);
}

bool affinity_store_is_ours(const struct aff_thread *t, const nb_cpumask *m) {
        nb_cpumask p;
        return affinity_store_placed_equals(t, m) || (affinity_store_previous(t, &p) && cpumask_equal(&p, m));
}

void affinity_store_drop_previous(struct affinity_store *s, struct aff_thread *t) {
        if (!t->has_previous)
                return;
        t->drop_previous = true;
        s->dirty = true;
}

static bool cpumask_subset(const nb_cpumask *sub, const nb_cpumask *super) {
        for (size_t i = 0; i < ELEMENTSOF(sub->w); i++)
                if (sub->w[i] & ~super->w[i])
                        return false;
        return true;
}

/* --- records ------------------------------------------------------------------- */

struct aff_proc *affinity_store_find(const struct affinity_store *s, pid_t pid) {
        size_t lo = 0, hi = s->n_procs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (s->procs[mid].pid == pid)
                        return &s->procs[mid];
                if (s->procs[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

struct aff_proc *affinity_store_add(struct affinity_store *s, pid_t pid, uint64_t start_time) {
        size_t i = 0;

        if (s->n_procs == s->cap_procs) {
                size_t cap = s->cap_procs ? 2 * s->cap_procs : 16;
                struct aff_proc *p = reallocarray(s->procs, cap, sizeof(*p));
                if (!p)
                        return NULL;
                s->procs = p;
                s->cap_procs = cap;
        }
        while (i < s->n_procs && s->procs[i].pid < pid)
                i++;
        memmove(s->procs + i + 1, s->procs + i, (s->n_procs - i) * sizeof(*s->procs));
        s->procs[i] = (struct aff_proc) { .pid = pid, .start_time = start_time, .node_first = -1 };
        s->n_procs++;
        return &s->procs[i];
}

void affinity_store_remove(struct affinity_store *s, struct aff_proc *p) {
        size_t i = (size_t) (p - s->procs);

        for (size_t j = 0; j < p->n; j++)
                free(p->threads[j].masks);
        free(p->threads);
        s->n_threads -= p->n;
        memmove(s->procs + i, s->procs + i + 1, (s->n_procs - i - 1) * sizeof(*s->procs));
        s->n_procs--;
        s->dirty = true;
}

struct aff_thread *affinity_store_thread(const struct aff_proc *p, pid_t tid) {
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
int affinity_store_add_thread(struct affinity_store *s, struct aff_proc *p, pid_t tid, uint64_t tid_start,
                              unsigned flags, const nb_cpumask *original, const nb_cpumask *placed,
                              struct aff_thread **ret) {
        struct aff_thread t = { .tid = tid, .tid_start = tid_start, .flags = flags };
        size_t i = 0;

        if (p->n >= s->max_proc || s->n_threads >= s->max_all)
                return -E2BIG;
        if (p->n == p->cap) {
                size_t cap = p->cap ? 2 * p->cap : 8;
                struct aff_thread *a = reallocarray(p->threads, cap, sizeof(*a));
                if (!a)
                        return -ENOMEM;
                p->threads = a;
                p->cap = cap;
        }
        if (affinity_store_set_masks(&t, original, placed, NULL) < 0)
                return -ENOMEM;
        while (i < p->n && p->threads[i].tid < tid)
                i++;
        memmove(p->threads + i + 1, p->threads + i, (p->n - i) * sizeof(t));
        p->threads[i] = t;
        p->n++;
        s->n_threads++;
        s->dirty = true;
        if (ret)
                *ret = &p->threads[i];
        return 0;
}

void affinity_store_remove_thread(struct affinity_store *s, struct aff_proc *p, struct aff_thread *t) {
        size_t i = (size_t) (t - p->threads);

        free(t->masks);
        memmove(p->threads + i, p->threads + i + 1, (p->n - i - 1) * sizeof(*t));
        p->n--;
        s->n_threads--;
        s->dirty = true;
}

size_t affinity_store_proc_held(const struct aff_proc *p) {
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
        if (t->has_previous)
                s += format_list(t->masks + 2 * t->nwords, t->nwords, s);
        else
                *s++ = '-';
        *s++ = ' ';
        s = put_u64(s, t->flags);
        *s++ = '\n';
        return (size_t) (s - buf);
}

static size_t header_len(const struct affinity_store *s) {
        return strlen(STATE_HEADER "\n" STATE_BOOT "\n") + strlen(s->boot_id);
}

/* The size of the file the records make now: each line's length is kept from the last
 * time it was written or measured. */
size_t affinity_store_size(struct affinity_store *s) {
        size_t size = header_len(s);

        for (size_t i = 0; i < s->n_procs; i++) {
                const struct aff_proc *p = &s->procs[i];
                for (size_t j = 0; j < p->n; j++) {
                        struct aff_thread *t = &p->threads[j];
                        if (t->line_len == 0)
                                t->line_len = (unsigned) format_line(p, t, s->out);
                        size += t->line_len;
                }
        }
        return size;
}

/* Every record to fd, OUT_SIZE at a time; -EFBIG, nothing more written, once the file
 * would exceed what its reader accepts. The serve callback is called every
 * SERVE_EVERY_RECORDS records: the records are not changed meanwhile. */
static int write_records(struct affinity_store *s, int fd) {
        size_t used, total, n = 0;
        int r;

        used = (size_t) snprintf(s->out, OUT_SIZE, "%s\n%s%s\n", STATE_HEADER, STATE_BOOT, s->boot_id);
        total = used;
        for (size_t i = 0; i < s->n_procs; i++) {
                const struct aff_proc *p = &s->procs[i];
                for (size_t j = 0; j < p->n; j++) {
                        struct aff_thread *t = &p->threads[j];

                        if (OUT_SIZE - used < LINE_MAX_BYTES) {
                                r = state_dir_write_all(fd, s->out, used);
                                if (r < 0)
                                        return r;
                                used = 0;
                        }
                        if (t->drop_previous) {
                                /* Its allocation kept, until the masks are set again. */
                                t->has_previous = t->drop_previous = false;
                        }
                        t->line_len = (unsigned) format_line(p, t, s->out + used);
                        used += t->line_len;
                        total += t->line_len;
                        if (total > s->file_max)
                                return -EFBIG;
                        if (++n % SERVE_EVERY_RECORDS == 0 && s->serve)
                                s->serve(s->serve_userdata);
                }
        }
        return state_dir_write_all(fd, s->out, used);
}

static int write_records_to(int fd, void *userdata) {
        return write_records(userdata, fd);
}

/* Every record to the state file, atomically (state_dir_write(): the old file or the
 * new one, never half of one, mode 0600). Never over a file that was refused and could
 * not be put aside (s->blocked), never a file the reader would refuse. */
int affinity_store_save(struct affinity_store *s) {
        int r;

        if (s->blocked)
                return -EPERM;    /* said once, when it was refused */
        r = state_dir_write(s->state_path, write_records_to, s);
        if (r == -EFBIG)
                return log_warning_errno(r, "Not writing %s: its %zu records would take more than the %zu MiB its "
                                         "reader accepts", s->state_path, s->n_threads, s->file_max >> 20);
        if (r < 0)
                return log_warning_errno(r, "Failed to write the threads' original affinities to %s: %m",
                                         s->state_path);
        s->dirty = false;
        return 0;
}

int affinity_store_save_if_dirty(struct affinity_store *s) {
        return s->dirty ? affinity_store_save(s) : 0;
}

/* One line of the state file: "pid start tid tid_start original placed previous
 * flags\n" (format 2: no previous), every field present and valid, the placed and
 * previous masks within the original. Anything else (a line cut by a crash, an edit)
 * is refused: it must not make us change some random thread. */
struct line {
        pid_t pid, tid;
        uint64_t start_time, tid_start;
        unsigned flags;
        bool has_previous;
        nb_cpumask original, placed, previous;
};

/* A placed or previous mask: a CPU list, not empty, within the original. */
static int parse_placed(const char *s, const nb_cpumask *original, nb_cpumask *ret) {
        if (!*s || cpumask_parse(s, ret) < 0)
                return -EINVAL;
        if (cpumask_weight(ret) == 0 || !cpumask_subset(ret, original))
                return -EINVAL;
        return 0;
}

/* Splits s at its spaces into exactly n fields. */
static int split_fields(char *s, char **field, size_t n) {
        size_t i = 0;

        for (char *p = s; i < n; i++) {
                field[i] = p;
                p = strchr(p, ' ');
                if (!p)
                        break;
                *p++ = 0;
        }
        return i == n - 1 && !strchr(field[n - 1], ' ') ? 0 : -EINVAL;
}

static int parse_line(char *s, size_t len, bool format_2, struct line *ret) {
        char *field[8], **rest;
        uint64_t v;

        if (len == 0 || s[len - 1] != '\n' || strlen(s) != len)
                return -EINVAL;    /* cut short, or a NUL byte inside */
        s[len - 1] = 0;
        if (split_fields(s, field, format_2 ? 7 : 8) < 0)
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
        if (!*field[4] || cpumask_parse(field[4], &ret->original) < 0 ||
            parse_placed(field[5], &ret->original, &ret->placed) < 0)
                return -EINVAL;
        rest = field + 6;
        ret->has_previous = false;
        if (!format_2) {
                ret->has_previous = strcmp(field[6], "-") != 0;
                if (ret->has_previous && parse_placed(field[6], &ret->original, &ret->previous) < 0)
                        return -EINVAL;
                rest++;
        }
        if (parse_u64(rest[0], 0, AT_FLAGS_KNOWN, &v) < 0 || v == AT_FLAGS_KNOWN)
                return -EINVAL;
        ret->flags = (unsigned) v;
        return 0;
}

static void load_line(struct affinity_store *s, const struct line *l, unsigned lineno) {
        struct aff_proc *p = affinity_store_find(s, l->pid);
        struct aff_thread *t = NULL;
        int r;

        if (p && p->start_time != l->start_time) {
                log_warning("%s:%u: process %d has another start time than on an earlier line, ignoring the line",
                            s->state_path, lineno, (int) l->pid);
                return;
        }
        if (p && affinity_store_thread(p, l->tid)) {
                log_warning("%s:%u: thread %d of process %d recorded twice, ignoring the line", s->state_path, lineno,
                            (int) l->tid, (int) l->pid);
                return;
        }
        if (!p)
                p = affinity_store_add(s, l->pid, l->start_time);
        if (!p) {
                log_warning_errno(-ENOMEM, "%s:%u: out of memory, ignoring the line", s->state_path, lineno);
                return;
        }
        r = affinity_store_add_thread(s, p, l->tid, l->tid_start, l->flags, &l->original, &l->placed, &t);
        if (r >= 0 && l->has_previous && affinity_store_set_masks(t, &l->original, &l->placed, &l->previous) < 0)
                log_warning_errno(-ENOMEM, "%s:%u: out of memory, thread %d of process %d loaded without its "
                                  "previous mask", s->state_path, lineno, (int) l->tid, (int) l->pid);
        if (r < 0)
                log_warning_errno(r, "%s:%u: thread %d of process %d not loaded: %s", s->state_path, lineno,
                                  (int) l->tid, (int) l->pid, r == -E2BIG ? "too many threads" : "out of memory");
        if (p->n == 0)
                affinity_store_remove(s, p);
}

/* The oldest refused files beyond REFUSED_KEEP removed: their names sort by time. */
static void prune_refused(const struct affinity_store *s) {
        _cleanup_free_ char *dir = strdup(s->state_path);
        struct dirent **names = NULL;
        const char *base;
        char *slash;
        size_t plen;
        int n, kept = 0;

        if (!dir || !(slash = strrchr(dir, '/')))
                return;
        *slash = 0;
        base = s->state_path + (slash - dir) + 1;
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
static void put_aside(struct affinity_store *s, const char *why) {
        _cleanup_free_ char *aside = NULL;
        struct timespec ts = clock_now_ts(CLOCK_REALTIME);
        struct tm tm;
        char when[64];

        gmtime_r(&ts.tv_sec, &tm);
        strftime(when, sizeof(when), "%Y%m%dT%H%M%S", &tm);
        if (asprintf(&aside, "%s.refused-%s.%06ldZ", s->state_path, when, ts.tv_nsec / 1000) < 0) {
                aside = NULL;
                s->blocked = true;
                log_error_errno(-ENOMEM, "%s %s; out of memory: it is kept, and no thread is placed", s->state_path,
                                why);
                return;
        }
        if (rename(s->state_path, aside) < 0) {
                s->blocked = true;
                log_error_errno(-errno, "%s %s, and cannot be renamed to %s (%m): restoring no thread's affinity "
                                "from it, and placing no thread while it is there, so as not to write over it",
                                s->state_path, why, aside);
                return;
        }
        log_warning("%s %s: restoring no thread's affinity from it; kept as %s", s->state_path, why, aside);
        prune_refused(s);
}

/* Opens the state file if it is ours to trust (state_dir_open(): a regular file, not
 * followed through a symlink, owned by us, writable by no one else, of a sane size).
 * -ENOENT: none; another -errno with *why set: refused. */
static int open_state(const struct affinity_store *s, FILE **ret, char *why, size_t size) {
        FILE *f;
        int fd;

        fd = state_dir_open(s->state_path, s->file_max, STATE_DIR_OURS);
        if (fd == -EPERM || fd == -EFBIG) {
                snprintf(why, size, "is not a regular file of ours (owner, mode 0600, at most %zu MiB)",
                         s->file_max >> 20);
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

/* The state file's first two lines (lineno): its format (format 2 read still: its lines
 * have no previous mask), then this boot's id. Returns 0 (go on), 1 (another boot's:
 * put aside, nothing of it loaded) or -EINVAL (put aside). */
static int head_line(struct affinity_store *s, unsigned lineno, char *buf, size_t len, bool *format_2) {
        size_t bl = strlen(STATE_BOOT);
        char why[256];

        if (lineno == 1) {
                *format_2 = strcmp(buf, STATE_HEADER_2 "\n") == 0;
                if (strcmp(buf, STATE_HEADER "\n") == 0 || *format_2)
                        return 0;
                put_aside(s, "does not start with \"" STATE_HEADER "\" (or format 2)");
                return -EINVAL;
        }
        if (strncmp(buf, STATE_BOOT, bl) != 0 || buf[len - 1] != '\n') {
                put_aside(s, "has no boot id on its second line");
                return -EINVAL;
        }
        buf[len - 1] = 0;
        if (!s->boot_id[0] || strcmp(buf + bl, s->boot_id) != 0) {
                snprintf(why, sizeof(why), "was written during another boot (boot id %.40s, this boot's %s): its "
                         "processes are not the ones running", buf + bl, s->boot_id[0] ? s->boot_id : "unknown");
                put_aside(s, why);
                return 1;
        }
        return 0;
}

/* Reads the state file into the records. A file refused whole (see open_state(), its
 * first line, a read error) or written during another boot is put aside and nothing
 * of it is loaded; one with lines not valid is loaded without them and put aside too,
 * whole, for whoever wants to look. Returns 0 (no file, another boot's, loaded), or
 * -errno when it could not be read. */
int affinity_store_load(struct affinity_store *s) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        char why[256];
        size_t size = 0;
        unsigned lineno = 0, bad = 0;
        bool format_2 = false;
        ssize_t len;
        int r;

        s->had_file = false;
        r = open_state(s, &f, why, sizeof(why));
        if (r == -ENOENT)
                return 0;
        s->had_file = true;
        if (r < 0) {
                put_aside(s, why);
                return r;
        }
        while ((len = getline(&buf, &size, f)) >= 0) {
                struct line l;

                lineno++;
                if (lineno <= 2) {
                        r = head_line(s, lineno, buf, (size_t) len, &format_2);
                        if (r != 0)
                                return r > 0 ? 0 : r;
                        continue;
                }
                if (parse_line(buf, (size_t) len, format_2, &l) < 0) {
                        if (bad++ < 10)
                                log_warning("%s:%u: not a valid line, ignoring it", s->state_path, lineno);
                        continue;
                }
                load_line(s, &l, lineno);
        }
        if (ferror(f)) {
                r = -errno ?: -EIO;
                snprintf(why, sizeof(why), "could not be read to its end (%s)", strerror(-r));
                /* What was loaded is acted on: every line is checked against the thread. */
                put_aside(s, why);
                return r;
        }
        if (lineno < 2) {
                put_aside(s, lineno == 0 ? "is empty" : "has no boot id on its second line");
                return -EINVAL;
        }
        if (bad > 0) {
                snprintf(why, sizeof(why), "has %u line%s not valid (ignored, the others acted on)", bad,
                         bad == 1 ? "" : "s");
                put_aside(s, why);
        }
        return 0;
}

/* This boot's id (the state file is trusted only in the boot it was written in: /run
 * need not be a tmpfs, and a pid and start time repeat across boots). Always the
 * machine's, whatever proc_root is. "" when it cannot be read: then no file is. */
static void read_boot_id(struct affinity_store *s) {
        _cleanup_fclose_ FILE *f = fopen(BOOT_ID_PATH, "re");

        s->boot_id[0] = 0;
        if (!f || !fgets(s->boot_id, sizeof(s->boot_id), f)) {
                s->boot_id[0] = 0;
                log_warning("Failed to read this boot's id from %s: no state file of threads' affinities will be "
                            "trusted", BOOT_ID_PATH);
                return;
        }
        s->boot_id[strcspn(s->boot_id, "\n ")] = 0;
}

char *affinity_store_path_default(void) {
        return state_dir_default(AFFINITY_STATE_FILE);
}

/* --- the store ----------------------------------------------------------------- */

int affinity_store_init(struct affinity_store *s, const char *state_path) {
        *s = (struct affinity_store) {
                .max_proc = AFFINITY_THREADS_PROC_MAX,
                .max_all = AFFINITY_THREADS_MAX,
                .file_max = STATE_FILE_MAX,
        };
        s->state_path = strdup(state_path);
        s->out = malloc(OUT_SIZE);
        if (!s->state_path || !s->out) {
                affinity_store_done(s);
                return -ENOMEM;
        }
        read_boot_id(s);
        return 0;
}

void affinity_store_done(struct affinity_store *s) {
        for (size_t i = 0; i < s->n_procs; i++) {
                for (size_t j = 0; j < s->procs[i].n; j++)
                        free(s->procs[i].threads[j].masks);
                free(s->procs[i].threads);
        }
        free(s->procs);
        free(s->out);
        free(s->state_path);
        *s = (struct affinity_store) {};
}
