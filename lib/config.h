/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /etc/numabalanced.conf and the NAME.conf files of /etc/numabalanced.conf.d: one
 * table of {section, key, parser, range, field}, parsed strictly (iniparser's own getint/getboolean accept garbage and are not used).
 * Every error is kept, formatted as
 *     FILE:LINE: [section] key: problem (accepted: ...)
 * so that --check-config and a refused SIGHUP reload can print them all. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "build-config.h"
#include "cg-mode.h"
#include "cleanup.h"
#include "nodemask.h"

#define CONFIG_DEFAULT_PATH SYSCONFDIR "/numabalanced.conf"

enum knb_action { KNB_LEAVE, KNB_DISABLE };
enum sample_source { SOURCE_AUTO, SOURCE_PROC, SOURCE_BPF };
/* Page-level sampling: the PMU's precise memory sampling where there is one; the
 * page-faults software event exercises the same path where there is not (tests). */
enum pmu_mode { PMU_MODE_AUTO, PMU_MODE_OFF, PMU_MODE_PAGE_FAULTS, PMU_MODE_SOFTWARE, PMU_MODE_REPLAY };
enum damon_mode { DAMON_MODE_AUTO, DAMON_MODE_OFF };

/* A cgroup named in the config, with the mode it gets (as if its directory had the
 * xattr; the config wins over xattrs on the same directory). [select] cgroups names
 * one path; [select] units names directories by their own name, anywhere under the
 * root (a systemd unit's, a Kubernetes pod's): a rule on a path wins over a rule on a
 * name, and of the names that match, the rule read last. */
struct cgroup_rule {
        char *path;                 /* relative to cgroup_root, starting with '/'; by_name: a
                                     * glob (fnmatch(3)) on a directory's name, no '/' */
        enum cg_mode mode;          /* CG_MODE_UNSET in a share rule */
        bool by_name;               /* a [select] units rule */
        bool share;                 /* a [select] fast_shares rule: share_pct, no mode */
        int share_pct;              /* its share of each fast node (lib/fast-share.h) */
};

/* dst a copy of src with a path of its own. Returns 0 or -ENOMEM (dst->path NULL). */
int config_rule_copy(struct cgroup_rule *dst, const struct cgroup_rule *src);
/* The value of the rule as written: its mode's name, or its share ("40%"). */
const char *config_rule_value(const struct cgroup_rule *r, char buf[static 8]);
/* The key that makes such rules: cgroups, units or fast_shares. */
const char *config_rule_key(const struct cgroup_rule *r);

struct nb_config {
        /* [daemon] */
        nb_cpumask service_cpus;     /* empty: the lowest-numbered online CPU */
        uint64_t tick_ms;            /* base tick */
        uint64_t scan_min_ms;        /* per-process scan interval while misplaced or changing */
        uint64_t scan_max_ms;        /* ... once settled (doubles up to this) */
        int log_level;
        enum knb_action kernel_numa_balancing;

        /* [select] */
        char *cgroup_root;
        struct cgroup_rule *cgroups;
        size_t n_cgroups;
        uint64_t min_rss_kb;         /* processes smaller than this are skipped */

        /* [sample] */
        enum sample_source source;
        uint64_t react_ms;           /* re-decide this long after a thread changes node (BPF) */
        enum pmu_mode pmu;           /* page-level memory-access sampling */
        enum damon_mode damon;       /* DAMON's hot regions as evidence for promotion */
        uint64_t pmu_sample_rate;    /* samples per second per CPU (the PMU's budget) */
        uint64_t software_sample_rate; /* pmu = software: samples per second of a thread's run time */
        char *replay_path;           /* pmu = replay: the file of samples to replay */
        uint64_t huge_vma_kb;        /* a settled process with a VMA this large is sampled, 0: never */

        /* [decide] */
        unsigned min_cpu_share_pct;  /* hysteresis: a node needs this share of CPU time */
        unsigned keep_node_share_pct; /* a node with this share of CPU time keeps its pages */
        uint64_t cooldown_ms;        /* before the same VMA is moved again */
        unsigned free_floor_pct;     /* never fill a target node below this % free */
        bool move_shared;            /* move pages with mapmax > 1 */
        bool move_preferred;         /* move prefer/prefer(many) VMAs within their nodes */
        bool move_mlocked;           /* move locked (mlock) VMAs too */
        uint64_t min_misplaced_kb;   /* a VMA with less misplaced memory is left alone */
        nb_nodemask slow_nodes;      /* a lower memory tier; empty: topology's default rule */
        uint64_t place_hold_ms;      /* mode place: a placement holds at least this long */
        uint64_t place_thread_cost_kb; /* mode place: moving a busy thread, in bytes copied */
        unsigned promote_free_floor_pct; /* promotions leave this % of the fast node free */
        bool exchange;               /* demote cold pages to make room for held promotions */
        uint64_t cold_age_ms;        /* the exchange's cold: not accessed for this long */

        /* [migrate] */
        uint64_t rate_limit_mb_s;    /* global copy budget, 0 = unlimited */
        uint64_t batch_pages;        /* pages per move_pages(2) call, at most */
        uint64_t rate_limit_calls_s; /* move_pages(2) calls that move, per second; 0 = unlimited */
        uint64_t promote_rate_limit_mb_s; /* promotions from slow nodes, MB/s; 0 = none */

        /* [report] */
        char *metrics_path;          /* Prometheus textfile, "" = none */
        char *metrics_group;         /* group (name or number) that may read it, "" = as created */
};

struct config_errors {
        char **msgs;
        size_t n;
};

/* Fills *cfg with the defaults. */
void config_defaults(struct nb_config *cfg);
/* What config_load() read. */
struct config_files {
        bool main_missing;           /* the main file does not exist (CONFIG_MAIN_OPTIONAL) */
        size_t n_dropins;            /* drop-in files read, of every layer */
        struct config_errors notes;  /* what a later file replaced, and the files a layer
                                      * above hid, as "FILE:LINE: ..." or "FILE: ...", for
                                      * the log (config_files_done()) */
};
void config_files_done(struct config_files *f);

/* The drop-in directories of the default file, highest priority first, as systemd
 * lays out its own: the administrator's, the runtime's, the package's. A file of one
 * hides the file of the same name in those after it (a symlink to /dev/null, or an
 * empty file, then masks it); the files of all of them are read in the order of their
 * names. A file named by --config has only its own PATH.d. */
#define CONFIG_LAYERS_MAX 4
#define CONFIG_DROPIN_LAYERS { CONFIG_DEFAULT_PATH ".d", "/run/numabalanced.conf.d", \
                               "/usr/lib/numabalanced.conf.d" }
/* config_load() flags: a missing main file is the defaults (its .d directory is
 * still read), for the default path; a file named by the operator must exist. */
#define CONFIG_MAIN_OPTIONAL 1u
/* Loads path, then the files "*.conf" of the directory path.d (not hidden, regular
 * files; in bytewise order), over the defaults. A key set in a later file replaces
 * its value; the cgroups rules of every line of every file are put together (a path
 * named twice is an error). Each file, and the directory, must be owned by root (or
 * the reading user) and writable by its owner only. Returns 0 when all are valid,
 * -EINVAL when any has errors (all in *errs, as "FILE:LINE: ..." or "FILE: ...";
 * *cfg is then not to be used), -ENOENT if the main file is missing (without
 * CONFIG_MAIN_OPTIONAL), or another -errno of the main file. Each file is opened and
 * read once. *cfg (and *ret_files, which may be NULL) is written only on success,
 * and then wholly (release what it held before with config_done()); errors are
 * appended to *errs, which starts zeroed. */
int config_load(const char *path, unsigned flags, struct nb_config *cfg, struct config_errors *errs,
                struct config_files *ret_files);
/* config_load() with the drop-in directories given (highest priority first) rather
 * than those of path: for the tests. */
int config_load_layers(const char *path, const char *const *dirs, size_t n_dirs, unsigned flags,
                       struct nb_config *cfg, struct config_errors *errs, struct config_files *ret_files);
/* Loads as config_load() does and, when valid, writes the effective configuration to
 * f: every key, in the table's order and by section, with its value as written and
 * "# FILE:LINE" where it was set (or "# default"), then every rule in the order read,
 * each with its own. Returns what config_load() returns (nothing written unless 0). */
int config_print(const char *path, unsigned flags, FILE *f, struct config_errors *errs);
int config_print_layers(const char *path, const char *const *dirs, size_t n_dirs, unsigned flags, FILE *f,
                        struct config_errors *errs);
/* Releases what *cfg holds (every string and the cgroup rules: the key table says
 * which) and leaves those fields empty; a second call does nothing. */
void config_done(struct nb_config *cfg);
/* Makes *dst a copy of *src that shares nothing with it: the values, and a copy of
 * every string and of the cgroup rules, as the key table says (a new key needs
 * nothing here). *dst is written wholly, and only on success: what it held before is
 * neither read nor released (as with config_load(); dst != src). Returns 0, or
 * -ENOMEM with *dst untouched. A NULL cgroup_root (config_defaults() out of memory,
 * or a config made by hand) is copied as its default "/sys/fs/cgroup", as the
 * daemon's own copy did; other NULL strings stay NULL. Release with config_done(). */
int config_copy(struct nb_config *dst, const struct nb_config *src);
void config_errors_done(struct config_errors *e);
/* Every "section.key" the parser knows, NULL-terminated (for the docs test). */
const char *const *config_keys(void);

/* How the value of a key is held in struct nb_config. */
enum config_storage {
        CONFIG_STORAGE_INLINE,       /* numbers, booleans, enums, CPU masks: in the struct itself */
        CONFIG_STORAGE_STRING,       /* a char * the config owns */
        CONFIG_STORAGE_CGROUPS,      /* cgroups[n_cgroups] and their paths, owned */
};
/* The storage of key name ("section.key") and the offset of its field in struct
 * nb_config (either pointer may be NULL); -ENOENT for an unknown key. For the tests,
 * so that they cover a new key without being told about it. */
int config_key_storage(const char *name, enum config_storage *ret_storage, size_t *ret_offset);

int config_cg_mode_parse(const char *s, size_t len, enum cg_mode *ret);
const char *config_cg_mode_name(enum cg_mode m);
