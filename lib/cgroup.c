/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The select stage: which cgroups opted in, and their processes. See cgroup.h for the
 * rule; docs/OPT-IN.md says it for operators. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include "fast-share.h"
#include <linux/limits.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "cgroup.h"
#include "cleanup.h"
#include "log.h"
#include "parse.h"

#define XATTR_TRUSTED "trusted.numabalanced"
#define XATTR_USER "user.numabalanced"
#define XATTR_TRUSTED_SHARE "trusted.numabalanced.fast_share"
#define XATTR_USER_SHARE "user.numabalanced.fast_share"

/* cgroup.procs of a cgroup with every possible pid (pid_max is at most 2^22, "4194304\n"
 * is 8 bytes) fits in 32 MiB; anything larger is not a cgroup.procs. */
#define PROCS_FILE_MAX (64u << 20)

enum cg_mode cgroup_dir_setting(enum cg_mode from_config, const char *trusted, size_t trusted_len,
                                const char *user, size_t user_len, bool user_counts,
                                enum cg_source *ret_source) {
        enum cg_mode m = CG_MODE_UNSET;
        enum cg_source src = CG_FROM_NONE;

        /* An invalid value counts as unset, so it falls through to the next source
         * rather than hiding it: a typo in trusted.* does not cancel a valid user.*. */
        if (cg_mode_is_set(from_config)) {
                m = from_config;
                src = CG_FROM_CONFIG;
        } else if (trusted && config_cg_mode_parse(trusted, trusted_len, &m) >= 0)
                src = CG_FROM_TRUSTED;
        else if (user && user_counts && config_cg_mode_parse(user, user_len, &m) >= 0)
                src = CG_FROM_USER;
        else
                m = CG_MODE_UNSET;

        if (ret_source)
                *ret_source = src;
        return m;
}

/* The value as it may appear in a log line: printable ASCII stays, a backslash and
 * everything else is escaped (\n, \t, \xNN), so that a value cannot forge log lines or
 * terminal escapes; the result is at most CGROUP_XATTR_VALUE_MAX bytes, ending in
 * "..." when it was cut. */
static char *printable_value(const char *v, size_t len) {
        char buf[4 * (CGROUP_XATTR_VALUE_MAX + 1) + 1];
        size_t o = 0, fit = 0;

        for (size_t i = 0; i < len && o + 4 < sizeof(buf); i++) {
                unsigned char c = (unsigned char) v[i];
                if (c == '\\') {
                        buf[o++] = '\\';
                        buf[o++] = '\\';
                } else if (c == '\n') {
                        buf[o++] = '\\';
                        buf[o++] = 'n';
                } else if (c == '\t') {
                        buf[o++] = '\\';
                        buf[o++] = 't';
                } else if (c >= 0x20 && c < 0x7f)
                        buf[o++] = (char) c;
                else {
                        static const char hex[] = "0123456789abcdef";
                        buf[o++] = '\\';
                        buf[o++] = 'x';
                        buf[o++] = hex[c >> 4];
                        buf[o++] = hex[c & 15];
                }
                /* The last escape boundary that leaves room for "...". */
                if (o <= CGROUP_XATTR_VALUE_MAX - 3)
                        fit = o;
        }
        if (o > CGROUP_XATTR_VALUE_MAX) {
                memcpy(buf + fit, "...", 3);
                o = fit + 3;
        }
        buf[o] = 0;
        return strdup(buf);
}

/* Reads one xattr of the directory. Returns 1 and the value (not NUL-terminated, len
 * bytes) when present, 0 when absent, -EFBIG when longer than CGROUP_XATTR_VALUE_MAX
 * (buf then holds its first bytes, *ret_len of them). */
static int read_setting(int fd, const char *path, const char *name,
                        char buf[static CGROUP_XATTR_VALUE_MAX + 1], size_t *ret_len) {
        ssize_t n;

        /* One byte more than a valid value may have: a full buffer means "too long"
         * without a second call that could race with a change of the value. */
        n = fgetxattr(fd, name, buf, CGROUP_XATTR_VALUE_MAX + 1);
        if (n < 0) {
                switch (errno) {
                case ENODATA:     /* not set, or trusted.* without CAP_SYS_ADMIN */
                case EOPNOTSUPP:  /* no xattrs here (user.* needs 5.7 on cgroupfs) */
                        return 0;
                case ERANGE: {
                        /* Longer than our buffer: read it once more in full (an xattr
                         * value is at most XATTR_SIZE_MAX, 64 KiB), only so that the
                         * report can show how it starts. */
                        _cleanup_free_ char *big = malloc(XATTR_SIZE_MAX);
                        ssize_t m = big ? fgetxattr(fd, name, big, XATTR_SIZE_MAX) : -1;
                        size_t l = m > 0 ? (size_t) m : 0;
                        if (l > CGROUP_XATTR_VALUE_MAX + 1)
                                l = CGROUP_XATTR_VALUE_MAX + 1;
                        if (l > 0)
                                memcpy(buf, big, l);
                        *ret_len = l;
                        return -EFBIG;
                }
                default:
                        /* ENOENT/ENODEV: the cgroup went away under us; treat as unset. */
                        log_debug_errno(-errno, "cgroup: %s: cannot read %s, ignoring: %m", path, name);
                        return 0;
                }
        }
        if ((size_t) n > CGROUP_XATTR_VALUE_MAX) {
                *ret_len = CGROUP_XATTR_VALUE_MAX + 1;
                return -EFBIG;
        }
        *ret_len = (size_t) n;
        return 1;
}

/* Where a directory stands for the user.* ownership rule. */
enum owner_state {
        OWNER_ROOT,    /* root-owned (or the root of the walk): user.* counts */
        OWNER_SUBTREE, /* inside a subtree delegated to owner_uid, owned by it: counts */
        OWNER_BROKEN,  /* a different owner on the way down: never counts below, until a root-owned dir */
};

struct walk {
        const struct cgroup_rule *rules;
        size_t n_rules;
        bool *matched;             /* per rule: it decided a directory (NULL: not kept) */
        dev_t dev;
        size_t n_seen;
        struct cgroup_selection sel;
        size_t a_entries, a_invalid, a_others;
        long account;              /* where the walk's time goes now (see struct inherited) */
        uint64_t clock;            /* the thread's CPU time when it began going there */
};

/* What a directory passes down to its children. */
struct inherited {
        enum cg_mode mode;
        enum cg_source source;
        const char *decided_by;   /* an ancestor's path, alive while the walk is below it */
        int fast_share_pct;       /* the share that applies (cgroup_entry), and where it is set: */
        const char *share_by;     /* an ancestor's path as decided_by, NULL: none */
        uid_t covers_uid;         /* of the setting that applies (cgroup_entry) */
        enum owner_state owner;
        uid_t owner_uid;
        uid_t subtree_uid;        /* cgroup_subtree_uid() */
        long account;             /* the directory's CPU time: entry i (>= 0) or other -1 - i */
        long top;                 /* the other of the top-level cgroup it lies in, 0: none yet */
        const char *top_path;     /* that cgroup's path, alive while the walk is below it */
};

/* ---- the walk's CPU time ----------------------------------------------------- */


/* No account: the time goes to the next one. */
#define NO_ACCOUNT LONG_MIN

/* From now on the walk's time goes to account: what it spent since the last switch
 * goes to the previous one. No clock read while the account stays the same. */
static void walk_charge_to(struct walk *w, long account) {
        uint64_t now;

        if (account == w->account)
                return;
        if (w->account == NO_ACCOUNT) {
                w->account = account;
                return;
        }
        now = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
        if (w->account >= 0)
                w->sel.entries[w->account].walk_ns += now - w->clock;
        else
                w->sel.others[-1 - w->account].walk_ns += now - w->clock;
        w->account = account;
        w->clock = now;
}

/* A new other, for the top-level cgroup at path (or the root): its account. */
static int add_other(struct walk *w, const char *path, long *ret) {
        if (w->sel.n_others == w->a_others) {
                size_t na = w->a_others ? w->a_others * 2 : 16;
                struct cgroup_walk_cost *p = reallocarray(w->sel.others, na, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                w->sel.others = p;
                w->a_others = na;
        }
        w->sel.others[w->sel.n_others] = (struct cgroup_walk_cost) { .path = strdup(path) };
        if (!w->sel.others[w->sel.n_others].path)
                return -ENOMEM;
        *ret = -1 - (long) w->sel.n_others++;
        return 0;
}

/* Where the time of the directory at path goes from now on (its setting decided, its
 * entry added if it is one): itself when it is opted in, else the top-level cgroup it
 * lies in, made when first needed (a top-level cgroup that is opted in, with a child
 * that opted out, may get more than one other: they have the same path). */
static int dir_account(struct walk *w, const char *path, unsigned depth, bool entry, const struct inherited *parent,
                       struct inherited *here) {
        int r;

        here->top_path = depth <= 1 || !parent ? path : parent->top_path;
        here->top = depth <= 1 || !parent ? 0 : parent->top;
        if (entry)
                here->account = (long) w->sel.n_entries - 1;
        else {
                if (here->top == 0) {
                        r = add_other(w, here->top_path, &here->top);
                        if (r < 0)
                                return r;
                }
                here->account = here->top;
        }
        walk_charge_to(w, here->account);
        return 0;
}

static void walk_done(struct walk *w) {
        cgroup_selection_done(&w->sel);
}

static int add_invalid(struct walk *w, const char *path, const char *xattr,
                       const char *value, size_t len, const char *why) {
        struct cgroup_invalid *inv;

        if (w->sel.n_invalid == w->a_invalid) {
                size_t na = w->a_invalid ? w->a_invalid * 2 : 8;
                struct cgroup_invalid *p = reallocarray(w->sel.invalid, na, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                w->sel.invalid = p;
                w->a_invalid = na;
        }
        inv = &w->sel.invalid[w->sel.n_invalid];
        *inv = (struct cgroup_invalid) {
                .path = strdup(path),
                .xattr = strdup(xattr),
                .value = printable_value(value, len),
                .why = why,
        };
        if (!inv->path || !inv->xattr || !inv->value) {
                free(inv->path);
                free(inv->xattr);
                free(inv->value);
                return -ENOMEM;
        }
        w->sel.n_invalid++;
        log_debug("cgroup: %s: %s=\"%s\": %s, ignoring", inv->path, xattr, inv->value, why);
        return 0;
}

static int add_entry(struct walk *w, const char *path, const struct inherited *eff) {
        struct cgroup_entry *e;

        if (w->sel.n_entries == w->a_entries) {
                size_t na = w->a_entries ? w->a_entries * 2 : 16;
                struct cgroup_entry *p = reallocarray(w->sel.entries, na, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                w->sel.entries = p;
                w->a_entries = na;
        }
        e = &w->sel.entries[w->sel.n_entries];
        *e = (struct cgroup_entry) {
                .path = strdup(path),
                .mode = eff->mode,
                .source = eff->source,
                .decided_by = strdup(eff->decided_by),
                .covers_uid = eff->covers_uid,
                .subtree_uid = eff->subtree_uid,
                .fast_share_pct = eff->fast_share_pct,
                .share_by = eff->share_by ? strdup(eff->share_by) : NULL,
        };
        if (!e->path || !e->decided_by || (eff->share_by && !e->share_by)) {
                free(e->path);
                free(e->decided_by);
                free(e->share_by);
                return -ENOMEM;
        }
        w->sel.n_entries++;
        return 0;
}

ssize_t cgroup_config_rule(const struct cgroup_rule *rules, size_t n_rules, const char *path) {
        const char *name = strrchr(path, '/');
        ssize_t by_name = -1;

        name = name && name[1] ? name + 1 : path;
        for (size_t i = 0; i < n_rules; i++) {
                const struct cgroup_rule *r = &rules[i];

                if (!r->path || r->share)
                        continue;
                if (!r->by_name && strcmp(r->path, path) == 0)
                        return (ssize_t) i;
                if (r->by_name && strcmp(path, "/") != 0 && fnmatch(r->path, name, FNM_PERIOD) == 0)
                        by_name = (ssize_t) i;
        }
        return by_name;
}

/* The config's setting of the directory at path (cgroup_config_rule()); the rule that
 * matched is marked in w->matched (when kept), for the rules that match nothing. */
static enum cg_mode config_mode(const struct walk *w, const char *path) {
        ssize_t i = cgroup_config_rule(w->rules, w->n_rules, path);

        if (i < 0)
                return CG_MODE_UNSET;
        if (w->matched)
                w->matched[i] = true;
        return w->rules[i].mode;
}

ssize_t cgroup_config_share(const struct cgroup_rule *rules, size_t n_rules, const char *path) {
        for (size_t i = 0; i < n_rules; i++)
                if (rules[i].share && rules[i].path && strcmp(rules[i].path, path) == 0)
                        return (ssize_t) i;
        return -1;
}

/* Reports the values of one xattr that cannot count. Returns 0 or -ENOMEM. */
static int check_value(struct walk *w, const char *path, const char *xattr, int r,
                       const char *v, size_t len, bool counts, bool *ret_valid) {
        enum cg_mode m;

        *ret_valid = false;
        if (r == 0)
                return 0;
        if (!counts)
                return add_invalid(w, path, xattr, v, len, "not owned by the subtree's owner");
        if (r == -EFBIG)
                return add_invalid(w, path, xattr, v, len, "too long");
        if (config_cg_mode_parse(v, len, &m) < 0)
                return add_invalid(w, path, xattr, v, len, "unknown value");
        *ret_valid = true;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The daemon ran out of descriptors or memory: the walk cannot go on, and skipping
 * the directory would drop its cgroups from the selection as if they had gone. */
static bool out_of_resources(int e) {
        return e == EMFILE || e == ENFILE || e == ENOMEM;
}

static void free_names(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* The names of the subdirectories of fd, sorted (so that the walk order, and with it
 * the selection and the logs, do not depend on readdir order). At most max names: the
 * rest sets *ret_more. Errors other than -ENOMEM end the listing early: a cgroup being
 * removed returns ENODEV or ENOENT from readdir. */
static int list_subdirs(int fd, const char *path, size_t max, char ***ret, size_t *ret_n, bool *ret_more) {
        _cleanup_closedir_ DIR *d = NULL;
        char **names = NULL;
        size_t n = 0, a = 0;
        int dfd;

        *ret_more = false;
        /* fdopendir takes the fd; a fresh open of "." gives it its own offset. */
        dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                if (out_of_resources(errno))
                        return log_debug_errno(-errno, "cgroup: %s: cannot list: %m", path);
                log_debug_errno(-errno, "cgroup: %s: cannot list, ignoring: %m", path);
                goto done;
        }
        d = fdopendir(dfd);
        if (!d) {
                int e = errno;
                close(dfd);
                if (out_of_resources(e))
                        return log_debug_errno(-e, "cgroup: %s: cannot list: %m", path);
                log_debug_errno(-e, "cgroup: %s: cannot list, ignoring: %m", path);
                goto done;
        }
        for (;;) {
                struct dirent *de;
                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                log_debug_errno(-errno, "cgroup: %s: listing ended early, ignoring: %m", path);
                        break;
                }
                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (n == max) {
                        *ret_more = true;
                        break;
                }
                if (n == a) {
                        size_t na = a ? a * 2 : 16;
                        char **p = reallocarray(names, na, sizeof(*p));
                        if (!p)
                                goto nomem;
                        names = p;
                        a = na;
                }
                names[n] = strdup(de->d_name);
                if (!names[n])
                        goto nomem;
                n++;
        }
done:
        if (n > 1)
                qsort(names, n, sizeof(*names), cmp_str);
        *ret = names;
        *ret_n = n;
        return 0;
nomem:
        free_names(names, n);
        return -ENOMEM;
}

static char *child_path(const char *parent, const char *name) {
        char *p;
        if (asprintf(&p, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, name) < 0)
                return NULL;
        return p;
}

/* Where a directory stands for the ownership rule for user.* (systemd-oomd's for
 * user.oomd_*): it counts on a root-owned directory, or on one owned by the owner of
 * every ancestor up to the first root-owned one, i.e. by the user the subtree was
 * delegated to. The root of the walk counts as root-owned whoever owns it. And the
 * owner of the delegated subtree it lies in (cgroup_subtree_uid), whose turn reads it. */
static void dir_owner(unsigned depth, const struct stat *st, const struct inherited *parent,
                      struct inherited *here) {
        here->subtree_uid = cgroup_subtree_uid(depth, st->st_uid, parent ? parent->subtree_uid : 0);
        here->owner_uid = 0;
        if (depth == 0 || st->st_uid == 0)
                here->owner = OWNER_ROOT;
        else if (parent->owner == OWNER_ROOT) {
                here->owner = OWNER_SUBTREE;
                here->owner_uid = st->st_uid;
        } else if (parent->owner == OWNER_SUBTREE && parent->owner_uid == st->st_uid) {
                here->owner = OWNER_SUBTREE;
                here->owner_uid = st->st_uid;
        } else
                here->owner = OWNER_BROKEN;
}

/* The directory's own setting, from the config file and its two xattrs (reporting the
 * values that cannot count): *ret_mode is CG_MODE_UNSET when it has none. Returns 0
 * or -ENOMEM. */
static int own_setting(struct walk *w, int fd, const char *path, bool user_counts,
                       enum cg_mode *ret_mode, enum cg_source *ret_source) {
        char tv[CGROUP_XATTR_VALUE_MAX + 1], uv[CGROUP_XATTR_VALUE_MAX + 1];
        size_t tlen = 0, ulen = 0;
        bool t_valid, u_valid;
        int rt, ru, r;

        rt = read_setting(fd, path, XATTR_TRUSTED, tv, &tlen);
        ru = read_setting(fd, path, XATTR_USER, uv, &ulen);
        r = check_value(w, path, XATTR_TRUSTED, rt, tv, tlen, true, &t_valid);
        if (r < 0)
                return r;
        r = check_value(w, path, XATTR_USER, ru, uv, ulen, user_counts, &u_valid);
        if (r < 0)
                return r;
        *ret_mode = cgroup_dir_setting(config_mode(w, path), t_valid ? tv : NULL, tlen, u_valid ? uv : NULL,
                                       ulen, user_counts, ret_source);
        return 0;
}

/* The share of the fast tier set on a directory with a setting of its own (fast-share.h):
 * trusted.*, else user.* when root owns the directory (a tenant does not give itself a
 * share of what others may use); values that cannot count are reported. Returns 0 or
 * -ENOMEM; *ret_pct is FAST_SHARE_UNSET when none counts. */
static int own_share(struct walk *w, int fd, const char *path, bool root_owned, int *ret_pct) {
        static const char *const names[] = { XATTR_TRUSTED_SHARE, XATTR_USER_SHARE };
        char v[CGROUP_XATTR_VALUE_MAX + 1];
        ssize_t k = cgroup_config_share(w->rules, w->n_rules, path);

        *ret_pct = FAST_SHARE_UNSET;
        if (k >= 0) {   /* the config wins, and its xattrs are not read */
                if (w->matched)
                        w->matched[k] = true;
                *ret_pct = w->rules[k].share_pct;
                return 0;
        }
        for (size_t i = 0; i < 2; i++) {
                size_t len = 0;
                int rv = read_setting(fd, path, names[i], v, &len), r = 0;

                if (rv == 0)
                        continue;
                if (i == 1 && !root_owned)
                        r = add_invalid(w, path, names[i], v, len, "a share is set by root");
                else if (rv == -EFBIG)
                        r = add_invalid(w, path, names[i], v, len, "too long");
                else if (fast_share_parse(v, len, ret_pct) < 0)
                        r = add_invalid(w, path, names[i], v, len, "not a percentage (0%..100%)");
                else
                        return 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* What applies to the directory at path, given its own setting: the nearest setting
 * wins, its own for itself and below, else its parent's (none at the root). Its owner
 * state (dir_owner) is known. A user.* setting in a delegated subtree covers the
 * subtree owner's processes only. */
static void effective_setting(const char *path, enum cg_mode own, enum cg_source src,
                              const struct inherited *parent, struct inherited *here) {
        if (cg_mode_is_set(own)) {
                here->mode = own;
                here->source = src;
                here->decided_by = path;
                here->covers_uid = src == CG_FROM_USER && here->owner == OWNER_SUBTREE ? here->owner_uid
                                                                                        : CGROUP_COVERS_ALL;
        } else {
                here->mode = parent ? parent->mode : CG_MODE_UNSET;
                here->source = parent ? parent->source : CG_FROM_NONE;
                here->decided_by = parent ? parent->decided_by : path;
                here->covers_uid = parent ? parent->covers_uid : CGROUP_COVERS_ALL;
        }
}

/* At a bound (why): the directory's subdirectories are not walked, and whether there
 * are any decides whether the selection is truncated. Returns 0 or -errno
 * (out_of_resources()). */
static int note_cut(struct walk *w, int fd, const char *path, const char *why) {
        char **names = NULL;
        size_t n_names = 0;
        bool more;
        int r;

        r = list_subdirs(fd, path, 1, &names, &n_names, &more);
        if (r < 0)
                return r;
        if (n_names > 0) {
                w->sel.truncated = true;
                log_debug("cgroup: %s: %s, subdirectories not walked", path, why);
        }
        free_names(names, n_names);
        return 0;
}

static int note_too_deep(struct walk *w, int fd, const char *path) {
        return note_cut(w, fd, path, "at the depth bound");
}

static int note_too_many(struct walk *w, int fd, const char *path) {
        return note_cut(w, fd, path, "its share of the cgroup count bound is used up");
}

/* Opens the subdirectory name of the directory open as fd (at path) for the walk.
 * Returns its fd (and *ret_st), -1 when it is not walked: gone, not a directory, a
 * symlink, unreadable, or on another file system, or -errno (out_of_resources()). */
static int open_child(const struct walk *w, int fd, const char *path, const char *name, struct stat *ret_st) {
        _cleanup_close_ int cfd = -1;

        /* Relative to the parent's fd, never by path string: a rename or a symlink
         * swapped in cannot redirect the walk. O_NOFOLLOW|O_DIRECTORY refuses symlinks
         * (ELOOP/ENOTDIR) and files. */
        cfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0) {
                if (out_of_resources(errno))
                        return log_debug_errno(-errno, "cgroup: %s/%s: cannot open: %m", path, name);
                /* ENOENT: removed since the listing (rmdir race), silently. */
                if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
                        log_debug_errno(-errno, "cgroup: %s/%s: cannot open, ignoring: %m", path, name);
                return -1;
        }
        if (fstat(cfd, ret_st) < 0 || !S_ISDIR(ret_st->st_mode))
                return -1;
        /* Stay on the root's file system: another mount below is not a cgroup. */
        if (ret_st->st_dev != w->dev)
                return -1;
        return TAKE_FD(cfd);
}

static int walk_dir(struct walk *w, int fd, const char *path, const struct stat *st,
                    unsigned depth, const struct inherited *parent, size_t budget, size_t *ret_used);

/* Walks the subdirectories of the directory open as fd (at path, passing here down),
 * in name order, visiting at most budget cgroups among them and below. The budget is
 * shared out, not first come first served: of k subdirectories, each gets an equal
 * part of what is left when its turn comes, and what one does not use goes to those
 * after it. So every subtree is walked as far as its fair share at least, and one
 * user's 100,000 cgroups cannot leave the rest of the tree unvisited (depth first
 * with one global count, the first subtree in name order took it all). *ret_used:
 * the cgroups visited. Returns 0 or -errno (out_of_resources()). */
static int walk_children(struct walk *w, int fd, const char *path, unsigned depth,
                         const struct inherited *here, size_t budget, size_t *ret_used) {
        char **names = NULL;
        size_t n_names = 0, used = 0;
        bool more;
        int r;

        *ret_used = 0;
        if (budget == 0)
                return note_too_many(w, fd, path);
        r = list_subdirs(fd, path, budget, &names, &n_names, &more);
        if (r < 0)
                return r;
        if (more) {
                w->sel.truncated = true;
                log_debug("cgroup: %s: more than %zu subdirectories for its share of the walk, not all walked",
                          path, budget);
        }

        for (size_t i = 0; i < n_names && r >= 0; i++) {
                _cleanup_close_ int cfd = -1;
                _cleanup_free_ char *cpath = NULL;
                size_t share = (budget - used) / (n_names - i), child_used = 0;
                struct stat cst;

                /* Never 0 (at most budget names, each using at most its share), but a
                 * walk_dir with no budget would go past the bound: checked. */
                if (share == 0) {
                        w->sel.truncated = true;
                        break;
                }
                cfd = open_child(w, fd, path, names[i], &cst);
                if (cfd < -1) {
                        r = cfd;
                        break;
                }
                if (cfd < 0)
                        continue;
                cpath = child_path(path, names[i]);
                if (!cpath) {
                        r = -ENOMEM;
                        break;
                }
                r = walk_dir(w, cfd, cpath, &cst, depth + 1, here, share, &child_used);
                used += child_used;
                walk_charge_to(w, here->account);
        }
        free_names(names, n_names);
        *ret_used = used;
        return r;
}

/* The setting of the directory open as fd (at path, stat'ed as st, depth levels below
 * the root), its parent's being parent (NULL at the root), into here. Returns 0 or
 * -ENOMEM. */
static int visit_dir(struct walk *w, int fd, const char *path, const struct stat *st, unsigned depth,
                     const struct inherited *parent, struct inherited *here) {
        enum cg_mode own;
        enum cg_source src;
        int r;

        dir_owner(depth, st, parent, here);
        r = own_setting(w, fd, path, here->owner != OWNER_BROKEN, &own, &src);
        if (r < 0)
                return r;
        effective_setting(path, own, src, parent, here);
        /* Shares are looked for only where a setting is (two reads more there), and
         * the nearest one on the path applies. */
        here->fast_share_pct = parent ? parent->fast_share_pct : FAST_SHARE_UNSET;
        here->share_by = parent ? parent->share_by : NULL;
        if (cg_mode_is_set(own)) {
                int pct;

                r = own_share(w, fd, path, st->st_uid == 0 || depth == 0, &pct);
                if (r < 0)
                        return r;
                if (pct != FAST_SHARE_UNSET) {
                        here->fast_share_pct = pct;
                        here->share_by = path;
                }
        }
        return 0;
}

/* Visits the directory open as fd (at path, stat'ed as st), then its subdirectories.
 * Returns 0, or -errno when the daemon ran out of descriptors or memory (the only
 * errors that end the walk). */
static int walk_dir(struct walk *w, int fd, const char *path, const struct stat *st,
                    unsigned depth, const struct inherited *parent, size_t budget, size_t *ret_used) {
        struct inherited here;
        size_t below = 0;
        bool entry;
        int r;

        /* budget >= 1: walk_children gives every subdirectory it visits a share of
         * at least one (it lists no more names than its budget). */
        *ret_used = 1;
        w->n_seen++;
        r = visit_dir(w, fd, path, st, depth, parent, &here);
        if (r < 0)
                return r;
        entry = cg_mode_watched(here.mode);
        if (entry) {
                r = add_entry(w, path, &here);
                if (r < 0)
                        return r;
        }
        r = dir_account(w, path, depth, entry, parent, &here);
        if (r < 0)
                return r;

        /* A directory's link count is 2 + its subdirectories on cgroupfs (kernfs), as on
         * ext4 and tmpfs: 2 is a leaf, and most cgroups are; its listing (an open, two
         * getdents and a close) is skipped. Other counts (btrfs says 1) are listed. */
        if (st->st_nlink == 2)
                return 0;
        if (depth >= CGROUP_WALK_MAX_DEPTH)
                return note_too_deep(w, fd, path);
        r = walk_children(w, fd, path, depth, &here, budget - 1, &below);
        *ret_used += below;
        return r;
}

int cgroup_select(const char *root, const struct cgroup_rule *rules, size_t n_rules,
                  struct cgroup_selection *ret) {
        return cgroup_select_max(root, rules, n_rules, CGROUP_WALK_MAX_CGROUPS, ret);
}

int cgroup_select_max(const char *root, const struct cgroup_rule *rules, size_t n_rules, size_t max_cgroups,
                      struct cgroup_selection *ret) {
        _cleanup_close_ int fd = -1;
        struct walk w = { .rules = rules, .n_rules = n_rules, .account = NO_ACCOUNT, .clock = clock_now_ns(CLOCK_THREAD_CPUTIME_ID) };
        struct stat st;
        size_t used;
        int r;

        if (!root || !ret || max_cgroups == 0)
                return -EINVAL;
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_debug_errno(-errno, "cgroup: cannot open root %s: %m", root);
        if (fstat(fd, &st) < 0)
                return log_debug_errno(-errno, "cgroup: cannot stat root %s: %m", root);
        w.dev = st.st_dev;
        w.matched = w.sel.rule_matched = calloc(n_rules ? n_rules : 1, sizeof(bool));
        if (!w.matched)
                return -ENOMEM;
        w.sel.n_rules = n_rules;

        r = walk_dir(&w, fd, "/", &st, 0, NULL, max_cgroups, &used);
        if (r < 0) {
                walk_done(&w);
                return r;
        }
        walk_charge_to(&w, NO_ACCOUNT);
        log_debug("cgroup: %zu cgroup(s) walked under %s, %zu opted in, %zu invalid setting(s)%s",
                  w.n_seen, root, w.sel.n_entries, w.sel.n_invalid,
                  w.sel.truncated ? ", walk bound hit" : "");
        *ret = w.sel;
        return 0;
}

/* The next component of the path at *p ("/a/b": "a", then "b"): its length, with *p
 * past it; 0 at the end; -EINVAL for an empty, "." or ".." component. */
static ssize_t next_component(const char **p, const char **ret_name) {
        const char *s = *p, *e;

        if (*s == 0)
                return 0;
        if (*s != '/')
                return -EINVAL;
        s++;
        e = strchrnul(s, '/');
        if (e == s || (e - s == 1 && s[0] == '.') || (e - s == 2 && s[0] == '.' && s[1] == '.') ||
            e - s > NAME_MAX)
                return -EINVAL;
        *ret_name = s;
        *p = e;
        return e - s;
}

/* Goes down one level from fd (at parent_path) to its child name (at path): the
 * child's setting into here. Returns the child's fd, or -errno. */
static int descend(struct walk *w, int fd, const char *parent_path, const char *name, const char *path,
                   unsigned depth, const struct inherited *parent, struct inherited *here) {
        _cleanup_close_ int cfd = -1;
        struct stat st;
        int r;

        cfd = open_child(w, fd, parent_path, name, &st);
        if (cfd < 0)
                return -ENOENT;
        r = visit_dir(w, cfd, path, &st, depth, parent, here);
        return r < 0 ? r : TAKE_FD(cfd);
}

int cgroup_setting_of(const char *root, const struct cgroup_rule *rules, size_t n_rules, const char *path,
                      struct cgroup_setting *ret) {
        _cleanup_free_ char *at = NULL, *below = NULL;
        _cleanup_close_ int fd = -1;
        struct walk w = { .rules = rules, .n_rules = n_rules };
        struct inherited here = {}, parent;
        const char *p = path, *name;
        unsigned depth = 0;
        struct stat st;
        ssize_t l = 0;
        int r;

        if (!root || !path || path[0] != '/' || !ret)
                return -EINVAL;
        /* The path so far and one level further, as the walk names them (config rules
         * match them). */
        at = malloc(strlen(path) + 2);
        below = malloc(strlen(path) + 2);
        if (!at || !below)
                return -ENOMEM;
        strcpy(at, "/");
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        w.dev = st.st_dev;
        r = visit_dir(&w, fd, at, &st, 0, NULL, &here);
        if (strcmp(path, "/") == 0)
                p++;    /* the root itself: no component */
        while (r >= 0 && (l = next_component(&p, &name)) > 0) {
                char cname[NAME_MAX + 1];
                int cfd;

                if (++depth > CGROUP_WALK_MAX_DEPTH) {
                        here = (struct inherited) { .mode = CG_MODE_UNSET, .covers_uid = CGROUP_COVERS_ALL };
                        break;
                }
                memcpy(cname, name, (size_t) l);
                cname[l] = 0;
                memcpy(below, path, (size_t) (p - path));
                below[p - path] = 0;
                parent = here;
                cfd = descend(&w, fd, at, cname, below, depth, &parent, &here);
                if (cfd < 0)
                        r = cfd;
                else {
                        close(fd);
                        fd = cfd;
                        char *t = at;
                        at = below;
                        below = t;
                }
        }
        walk_done(&w);
        if (r >= 0 && l < 0)
                r = (int) l;
        if (r < 0)
                return r;
        *ret = (struct cgroup_setting) { here.mode, here.source, here.covers_uid };
        return 0;
}

void cgroup_selection_done(struct cgroup_selection *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_entries; i++) {
                free(s->entries[i].path);
                free(s->entries[i].decided_by);
                free(s->entries[i].share_by);
        }
        free(s->entries);
        for (size_t i = 0; i < s->n_invalid; i++) {
                free(s->invalid[i].path);
                free(s->invalid[i].xattr);
                free(s->invalid[i].value);
        }
        free(s->invalid);
        for (size_t i = 0; i < s->n_others; i++)
                free(s->others[i].path);
        free(s->others);
        free(s->rule_matched);
        *s = (struct cgroup_selection) {};
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

int cgroup_read_memory_current(const char *root, const char *path, uint64_t *ret) {
        _cleanup_free_ char *file = NULL, *buf = NULL;
        size_t len;
        int r;

        if (!root || !path || path[0] != '/' || !ret)
                return -EINVAL;
        if (asprintf(&file, "%s%s/memory.current", root, strcmp(path, "/") == 0 ? "" : path) < 0)
                return -ENOMEM;
        r = parse_read_file_at(AT_FDCWD, file, 64, &buf, &len);
        if (r < 0)
                return r;
        while (len > 0 && buf[len - 1] == '\n')
                len--;
        return parse_u64_n(buf, len, 0, UINT64_MAX, ret) < 0 ? -EINVAL : 0;
}

int cgroup_read_cpu_usage(const char *root, const char *path, uint64_t *ret_usec) {
        _cleanup_free_ char *file = NULL, *buf = NULL;
        const char *p, *end;
        size_t len;
        int r;

        if (!root || !path || path[0] != '/' || !ret_usec)
                return -EINVAL;
        if (asprintf(&file, "%s%s/cpu.stat", root, strcmp(path, "/") == 0 ? "" : path) < 0)
                return -ENOMEM;
        r = parse_read_file_at(AT_FDCWD, file, 4096, &buf, &len);
        if (r < 0)
                return r;
        /* "usage_usec N" is its first line; looked for anywhere, one line at a time. */
        for (p = buf, end = buf + len; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t l = nl ? (size_t) (nl - p) : (size_t) (end - p);

                if (l > 11 && memcmp(p, "usage_usec ", 11) == 0)
                        return parse_u64_n(p + 11, l - 11, 0, UINT64_MAX, ret_usec) < 0 ? -EINVAL : 0;
                p += l + 1;
        }
        return -ENODATA;
}

int cgroup_read_procs(const char *root, const char *path, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ char *file = NULL, *buf = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        size_t len, n = 0, a = 0, junk = 0;
        const char *p, *end;
        int r;

        if (!root || !path || path[0] != '/' || !ret || !ret_n)
                return -EINVAL;
        if (asprintf(&file, "%s%s/cgroup.procs", root, strcmp(path, "/") == 0 ? "" : path) < 0)
                return -ENOMEM;
        r = parse_read_file_at(AT_FDCWD, file, PROCS_FILE_MAX, &buf, &len);
        if (r < 0)
                return log_debug_errno(r, "cgroup: cannot read %s: %m", file);

        end = buf + len;
        for (p = buf; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t l = nl ? (size_t) (nl - p) : (size_t) (end - p);
                uint64_t v;

                if (l > 0) {
                        /* pid 0 never appears in cgroup.procs; pid_t is a signed int. */
                        if (parse_u64_n(p, l, 1, INT32_MAX, &v) < 0)
                                junk++;
                        else {
                                if (n == a) {
                                        size_t na = a ? a * 2 : 64;
                                        pid_t *np = reallocarray(pids, na, sizeof(*np));
                                        if (!np)
                                                return -ENOMEM;
                                        pids = np;
                                        a = na;
                                }
                                pids[n++] = (pid_t) v;
                        }
                }
                p += l + 1;
        }
        if (junk > 0)
                log_debug("cgroup: %s: %zu line(s) that are not a pid, ignoring", file, junk);

        if (n > 1) {
                size_t o = 1;
                qsort(pids, n, sizeof(*pids), cmp_pid);
                /* A process can be listed twice if it migrates while the file is read. */
                for (size_t i = 1; i < n; i++)
                        if (pids[i] != pids[o - 1])
                                pids[o++] = pids[i];
                n = o;
        }
        *ret = n > 0 ? TAKE_PTR(pids) : NULL;
        *ret_n = n;
        return 0;
}
