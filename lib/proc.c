/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "log.h"
#include "parse.h"
#include "proc.h"

/* status and stat are a few KiB; anything near this is not from the kernel. */
#define PROC_SMALL_FILE_MAX (1024 * 1024)
/* numa_maps of a process with hundreds of thousands of VMAs runs to tens of MiB. */
#define PROC_NUMA_MAPS_MAX (256 * 1024 * 1024)

/* Copies s[0..len) into a fixed buffer, cut to fit: comm and Name are shown, never
 * used as keys, so a cut is better than refusing the process. */
static void copy_cut(char *dst, size_t size, const char *s, size_t len) {
        if (len >= size)
                len = size - 1;
        memcpy(dst, s, len);
        dst[len] = 0;
}

/* ---- stat ---------------------------------------------------------------- */

static int field_u64(const char *s, size_t len, uint64_t max, uint64_t *ret) {
        return parse_u64_n(s, len, 0, max, ret);
}

/* "pid (comm)": comm is whatever the process named itself, spaces and parentheses
 * included; only the last ')' ends it. On success *ret_close points at that ')'. */
static int stat_pid_comm(const char *buf, size_t len, struct proc_stat *st, const char **ret_close) {
        const char *open, *close = NULL, *p;
        uint64_t v;

        open = memchr(buf, '(', len);
        if (!open || open < buf + 2 || open[-1] != ' ')
                return -EINVAL;
        for (p = buf + len; p > open; p--)
                if (p[-1] == ')') {
                        close = p - 1;
                        break;
                }
        if (!close)
                return -EINVAL;
        if (field_u64(buf, (size_t) (open - 1 - buf), INT_MAX, &v) < 0 || v == 0)
                return -EINVAL;
        st->pid = (pid_t) v;
        copy_cut(st->comm, sizeof(st->comm), open + 1, (size_t) (close - open - 1));
        *ret_close = close;
        return 0;
}

/* The fields after comm that we keep, bit n for field n. */
#define STAT_FIELDS_WANTED                                                              \
        (UINT64_C(1) << 3 | UINT64_C(1) << 9 | UINT64_C(1) << 14 | UINT64_C(1) << 15 | \
         UINT64_C(1) << 22 | UINT64_C(1) << 24 | UINT64_C(1) << 39)

/* The exec signature's fields (proc_mm_layout): 1 if field is one, 0 if not, -EINVAL
 * if it is malformed. */
static int stat_layout_field(struct proc_mm_layout *l, unsigned field, const char *f, size_t fl) {
        uint64_t *v;

        switch (field) {
        case 26: v = &l->start_code; break;
        case 27: v = &l->end_code; break;
        case 28: v = &l->start_stack; break;
        case 45: v = &l->start_data; break;
        case 46: v = &l->end_data; break;
        case 47: v = &l->start_brk; break;
        case 48: v = &l->arg_start; break;
        case 49: v = &l->arg_end; break;
        case 50: v = &l->env_start; break;
        case 51: v = &l->env_end; break;
        default:
                return 0;
        }
        return field_u64(f, fl, UINT64_MAX, v) < 0 ? -EINVAL : 1;
}

/* Field number field (3...), f[0..fl), into st: 1 if it is one we keep, 0 if not,
 * -EINVAL if it is malformed. */
static int stat_field(struct proc_stat *st, unsigned field, const char *f, size_t fl) {
        uint64_t v;
        int r;

        switch (field) {
        case 3:
                if (fl != 1)
                        return -EINVAL;
                st->state = f[0];
                return 1;
        case 9:
                r = field_u64(f, fl, ULONG_MAX, &v);
                if (r >= 0)
                        st->flags = (unsigned long) v;
                break;
        case 14:
                r = field_u64(f, fl, UINT64_MAX, &st->utime);
                break;
        case 15:
                r = field_u64(f, fl, UINT64_MAX, &st->stime);
                break;
        case 22:
                r = field_u64(f, fl, UINT64_MAX, &st->starttime);
                break;
        case 24:
                r = field_u64(f, fl, UINT64_MAX, &st->rss_pages);
                break;
        case 39:
                r = field_u64(f, fl, INT_MAX, &v);
                if (r >= 0)
                        st->processor = (int) v;
                break;
        default:
                return stat_layout_field(&st->layout, field, f, fl);
        }
        return r < 0 ? -EINVAL : 1;
}

int proc_stat_parse(const char *buf, size_t len, struct proc_stat *ret) {
        struct proc_stat st = {};
        const char *close, *p, *end;
        unsigned field;
        uint64_t have = 0; /* the fields we need, bit n for field n */
        int r;

        if (!buf)
                return -EINVAL;
        while (len > 0 && buf[len - 1] == '\n')
                len--;
        end = buf + len;

        r = stat_pid_comm(buf, len, &st, &close);
        if (r < 0)
                return r;

        /* Fields 3... after the last ')', one space apart. */
        p = close + 1;
        for (field = 3; p < end; field++) {
                const char *f, *fe;
                size_t fl;

                if (*p != ' ')
                        return -EINVAL;
                f = p + 1;
                fe = memchr(f, ' ', (size_t) (end - f));
                if (!fe)
                        fe = end;
                fl = (size_t) (fe - f);
                p = fe;
                if (fl == 0)
                        return -EINVAL;

                r = stat_field(&st, field, f, fl);
                if (r < 0)
                        return r;
                if (r > 0)
                        have |= UINT64_C(1) << field;
        }
        if ((have & STAT_FIELDS_WANTED) != STAT_FIELDS_WANTED)
                return -EINVAL;
        *ret = st;
        return 0;
}

/* ---- status -------------------------------------------------------------- */

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* A decimal id in [min, max], then only blanks. */
static int status_id(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *ret) {
        while (len > 0 && is_blank(s[len - 1]))
                len--;
        return parse_u64_n(s, len, min, max, ret);
}

enum {
        S_NAME = 1u << 0, S_STATE = 1u << 1, S_TGID = 1u << 2, S_PID = 1u << 3,
        S_PPID = 1u << 4, S_UID = 1u << 5, S_VMRSS = 1u << 6, S_CPUS = 1u << 7, S_MEMS = 1u << 8,
        S_GID = 1u << 9, S_VMLCK = 1u << 10, S_THREADS = 1u << 11,
};

/* "VmRSS:	   1234 kB" and the like. */
static int status_kb(const char *val, size_t vl, uint64_t *ret) {
        if (vl < 3 || memcmp(val + vl - 3, " kB", 3) != 0)
                return -EINVAL;
        return status_id(val, vl - 3, 0, UINT64_MAX, ret);
}

/* "Uid:" and "Gid:" hold the real, effective, saved and fs ids, tab separated: the
 * first two are required; missing ones stay (uid_t) -1. */
static int status_ids(const char *val, size_t vl, uint32_t ids[static 4]) {
        const char *p = val, *end = val + vl;
        unsigned n = 0;

        while (n < 4 && p < end) {
                const char *t = memchr(p, '\t', (size_t) (end - p));
                uint64_t v;

                if (parse_u64_n(p, (size_t) ((t ? t : end) - p), 0, UINT32_MAX - 1, &v) < 0)
                        return -EINVAL;
                ids[n++] = (uint32_t) v;
                p = t ? t + 1 : end;
        }
        return n >= 2 && p >= end ? 0 : -EINVAL;
}

static int status_uid(const char *val, size_t vl, struct proc_status *st) {
        uint32_t ids[4] = { UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX };

        if (status_ids(val, vl, ids) < 0)
                return -EINVAL;
        st->uid_real = ids[0];
        st->uid_effective = ids[1];
        st->uid_saved = ids[2];
        st->uid_fs = ids[3];
        return 0;
}

static int status_gid(const char *val, size_t vl, struct proc_status *st) {
        uint32_t ids[4] = { UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX };

        if (status_ids(val, vl, ids) < 0)
                return -EINVAL;
        st->gid_real = ids[0];
        st->gid_effective = ids[1];
        st->gid_saved = ids[2];
        st->gid_fs = ids[3];
        return 0;
}

/* One "Key: value" line, the value without its leading blanks. Sets *ret_bit to the
 * key's S_ bit, or to 0 for a key we do not read. */
static int status_field(struct proc_status *st, const char *key, size_t kl, const char *val, size_t vl,
                        unsigned *ret_bit) {
        uint64_t v;
        int r = 0;

#define KEY(k) (kl == sizeof(k) - 1 && memcmp(key, k, kl) == 0)
        if (KEY("Name")) {
                *ret_bit = S_NAME;
                copy_cut(st->name, sizeof(st->name), val, vl);
        } else if (KEY("State")) {
                *ret_bit = S_STATE;
                if (vl == 0 || is_blank(val[0]))
                        return -EINVAL;
                st->state = val[0];
        } else if (KEY("Tgid")) {
                *ret_bit = S_TGID;
                r = status_id(val, vl, 1, INT_MAX, &v);
                st->tgid = (pid_t) v;
        } else if (KEY("Pid")) {
                *ret_bit = S_PID;
                r = status_id(val, vl, 1, INT_MAX, &v);
                st->pid = (pid_t) v;
        } else if (KEY("PPid")) {
                *ret_bit = S_PPID;
                /* 0 for init and kthreadd. */
                r = status_id(val, vl, 0, INT_MAX, &v);
                st->ppid = (pid_t) v;
        } else if (KEY("Uid")) {
                *ret_bit = S_UID;
                r = status_uid(val, vl, st);
        } else if (KEY("Gid")) {
                *ret_bit = S_GID;
                r = status_gid(val, vl, st);
        } else if (KEY("VmRSS")) {
                *ret_bit = S_VMRSS;
                r = status_kb(val, vl, &st->vm_rss_kb);
        } else if (KEY("VmLck")) {
                *ret_bit = S_VMLCK;
                r = status_kb(val, vl, &st->vm_lck_kb);
        } else if (KEY("Threads")) {
                *ret_bit = S_THREADS;
                r = status_id(val, vl, 1, INT_MAX, &v);
                st->threads = (unsigned) v;
        } else if (KEY("Cpus_allowed_list")) {
                *ret_bit = S_CPUS;
                r = idlist_parse_n(val, vl, st->cpus_allowed.w, NB_CPUS_MAX);
                st->has_cpus_allowed = true;
        } else if (KEY("Mems_allowed_list")) {
                *ret_bit = S_MEMS;
                r = nodemask_parse_n(val, vl, &st->mems_allowed);
                st->has_mems_allowed = true;
        } else
                *ret_bit = 0;
#undef KEY
        return r < 0 ? -EINVAL : 0;
}

int proc_status_parse(const char *buf, size_t len, struct proc_status *ret) {
        /* 1 KiB of CPU mask: not for the stack of every caller's caller, but fine here. */
        struct proc_status st = {};
        unsigned have = 0;
        size_t pos = 0;

        if (!buf)
                return -EINVAL;
        /* Unknown is not root: a missing Uid: line must not read as uid 0. */
        st.uid_real = st.uid_effective = st.uid_saved = st.uid_fs = (uid_t) -1;
        st.gid_real = st.gid_effective = st.gid_saved = st.gid_fs = (gid_t) -1;

        while (pos < len) {
                const char *line = buf + pos, *nl, *colon, *val;
                size_t ll, kl, vl;
                unsigned bit;

                nl = memchr(line, '\n', len - pos);
                ll = nl ? (size_t) (nl - line) : len - pos;
                pos += ll + 1;

                colon = memchr(line, ':', ll);
                if (!colon)
                        continue; /* not a "Key: value" line; nothing we read */
                kl = (size_t) (colon - line);
                val = colon + 1;
                vl = ll - kl - 1;
                while (vl > 0 && is_blank(*val)) {
                        val++;
                        vl--;
                }

                if (status_field(&st, line, kl, val, vl, &bit) < 0)
                        return -EINVAL;
                /* A second copy of a line is not the kernel's doing. */
                if (have & bit)
                        return -EINVAL;
                have |= bit;
        }

        if ((have & (S_TGID | S_PID)) != (S_TGID | S_PID))
                return -EINVAL;
        *ret = st;
        return 0;
}

/* ---- readers ------------------------------------------------------------- */

/* A vanished process shows as ENOENT (the directory is gone) or ESRCH (a read
 * through a directory that outlived it): one code for callers. */
static int gone(int r) {
        return r == -ENOENT ? -ESRCH : r;
}

static int read_small(const char *path, char **ret, size_t *ret_len, size_t max) {
        int r = parse_read_file_at(AT_FDCWD, path, max, ret, ret_len);
        if (r < 0)
                return log_debug_errno(gone(r), "Failed to read %s: %m", path);
        return 0;
}

static int read_status_path(const char *path, struct proc_status *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_small(path, &buf, &len, PROC_SMALL_FILE_MAX);
        if (r < 0)
                return r;
        return proc_status_parse(buf, len, ret);
}

int proc_read_status(const char *proc_root, pid_t pid, struct proc_status *ret) {
        _cleanup_free_ char *path = NULL;

        if (!proc_root || pid <= 0)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/status", proc_root, (int) pid) < 0)
                return -ENOMEM;
        return read_status_path(path, ret);
}

int proc_read_task_status(const char *proc_root, pid_t pid, pid_t tid, struct proc_status *ret) {
        _cleanup_free_ char *path = NULL;

        if (!proc_root || pid <= 0 || tid <= 0)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/task/%d/status", proc_root, (int) pid, (int) tid) < 0)
                return -ENOMEM;
        return read_status_path(path, ret);
}

static int read_stat_path(const char *path, struct proc_stat *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_small(path, &buf, &len, PROC_SMALL_FILE_MAX);
        if (r < 0)
                return r;
        /* A process that exits between open() and read() can leave nothing to read. */
        if (len == 0)
                return -ESRCH;
        return proc_stat_parse(buf, len, ret);
}

int proc_read_stat(const char *proc_root, pid_t pid, struct proc_stat *ret) {
        _cleanup_free_ char *path = NULL;

        if (!proc_root || pid <= 0)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/stat", proc_root, (int) pid) < 0)
                return -ENOMEM;
        return read_stat_path(path, ret);
}

int proc_statm_parse(const char *buf, size_t len, uint64_t *ret_resident_pages) {
        char tmp[128], *end;
        unsigned long long size, resident;

        /* "size resident shared text lib data dt\n": numbers only, short. */
        if (!buf || len == 0 || len >= sizeof(tmp))
                return -EINVAL;
        memcpy(tmp, buf, len);
        tmp[len] = 0;
        errno = 0;
        /* strtoull() would take "-1" for a number: digits only. */
        if (tmp[0] < '0' || tmp[0] > '9')
                return -EINVAL;
        size = strtoull(tmp, &end, 10);
        if (*end != ' ' || end[1] < '0' || end[1] > '9')
                return -EINVAL;
        resident = strtoull(end + 1, &end, 10);
        if (errno || (*end != ' ' && *end != '\n' && *end) || resident > size)
                return -EINVAL;
        *ret_resident_pages = resident;
        return 0;
}

int proc_read_statm_resident(const char *proc_root, pid_t pid, uint64_t *ret_pages) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        size_t len;
        int r;

        if (!proc_root || pid <= 0)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/statm", proc_root, (int) pid) < 0)
                return -ENOMEM;
        r = read_small(path, &buf, &len, PROC_SMALL_FILE_MAX);
        if (r < 0)
                return r;
        if (len == 0)
                return -ESRCH;
        return proc_statm_parse(buf, len, ret_pages);
}

int proc_read_task_stat(const char *proc_root, pid_t pid, pid_t tid, struct proc_stat *ret) {
        _cleanup_free_ char *path = NULL;

        if (!proc_root || pid <= 0 || tid <= 0)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/task/%d/stat", proc_root, (int) pid, (int) tid) < 0)
                return -ENOMEM;
        return read_stat_path(path, ret);
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

int proc_list_tasks_max(const char *proc_root, pid_t pid, size_t max, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ char *path = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0, alloc = 0;
        struct dirent *de;

        if (!proc_root || pid <= 0 || !ret || !ret_n)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/task", proc_root, (int) pid) < 0)
                return -ENOMEM;
        d = opendir(path);
        if (!d)
                return log_debug_errno(gone(-errno), "Failed to open %s: %m", path);

        for (;;) {
                uint64_t v;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno)
                                return log_debug_errno(gone(-errno), "Failed to read %s: %m", path);
                        break;
                }
                /* ".", ".." and anything else that is not a thread id. */
                if (parse_u64(de->d_name, 1, INT_MAX, &v) < 0)
                        continue;
                if (n == max)
                        return -E2BIG;
                if (n == alloc) {
                        size_t na = alloc ? alloc * 2 : 16;
                        pid_t *t;

                        if (na > max)
                                na = max;
                        t = realloc(tids, na * sizeof(*tids));
                        if (!t)
                                return -ENOMEM;
                        tids = t;
                        alloc = na;
                }
                tids[n++] = (pid_t) v;
        }
        if (n > 1)
                qsort(tids, n, sizeof(*tids), cmp_pid);
        *ret = TAKE_PTR(tids);
        *ret_n = n;
        return 0;
}

int proc_list_tasks(const char *proc_root, pid_t pid, pid_t **ret, size_t *ret_n) {
        return proc_list_tasks_max(proc_root, pid, SIZE_MAX, ret, ret_n);
}

int proc_read_cgroup(const char *proc_root, pid_t pid, char **ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        const char *found = NULL;
        size_t len, found_len = 0;
        int r;

        if (!proc_root || pid <= 0 || !ret)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/cgroup", proc_root, (int) pid) < 0)
                return -ENOMEM;
        r = read_small(path, &text, &len, PROC_SMALL_FILE_MAX);
        if (r < 0)
                return r;
        for (size_t pos = 0; pos < len;) {
                const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
                size_t ll = nl ? (size_t) (nl - line) : len - pos;

                pos += ll + 1;
                if (ll < 3 || memcmp(line, "0::", 3) != 0)
                        continue;
                if (found)
                        return -ENODATA;
                found = line + 3;
                found_len = ll - 3;
        }
        if (!found || found_len == 0 || memchr(found, 0, found_len))
                return -ENODATA;
        *ret = strndup(found, found_len);
        return *ret ? 0 : -ENOMEM;
}

int proc_read_numa_maps(const char *proc_root, pid_t pid, char **ret, size_t *ret_len) {
        _cleanup_free_ char *path = NULL;

        if (!proc_root || pid <= 0 || !ret)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/numa_maps", proc_root, (int) pid) < 0)
                return -ENOMEM;
        return read_small(path, ret, ret_len, PROC_NUMA_MAPS_MAX);
}
