/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The configuration file: one table (conf_keys[] below) says, for every key, its
 * section, how its value is parsed, the accepted range, where it goes in struct
 * nb_config and how it is held there, its default and what it is for. Everything
 * else here is driven by it: the defaults, the parsing, the error messages, the
 * copy, the release and config_keys().
 *
 * The file is opened and read once, and that one text goes to both readers: the
 * scan here (struct config_lines) splits it into iniparser 4.1's lines (comments,
 * sections, "key = value", backslash continuations) with the line of every section
 * and key, so that the unknown ones, the duplicates and the lines iniparser would
 * reject are reported where they are; and iniparser, the project's parser, is fed
 * the same bytes through a memfd (4.1 loads only from a path: it opens
 * /proc/self/fd/N, never the file again) and gives the values. (It used to be read
 * twice, a file replaced in between giving one file's lines and the other's values.)
 * A file with a line iniparser rejects gets no dictionary from it: the scan's own
 * values, taken with iniparser's sscanf() patterns, stand in, so that every other
 * line is still checked and reported. The values are parsed by the checked helpers
 * of parse.h, never by iniparser's getint/getboolean, which turn "12abc" into 12 and
 * "yesterday" into true. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <iniparser.h>
#include "cleanup.h"
#include "config.h"
#include "fast-share.h"
#include "log.h"
#include "parse.h"

/* The longest logical line (continuations joined): iniparser 4.1 reads lines into a
 * 1024-byte buffer and gives up on the whole file beyond that, so a longer line is
 * refused here too, with its line number. */
#define CONF_LINE_MAX 1000
#define CONF_FILE_MAX (1024 * 1024)
/* The files of a .d directory read at most: one per cgroup set is the expected use;
 * with CONF_FILE_MAX a file, a bound on what one load holds at once (one file's
 * text, the config built so far). */
#define CONF_DIR_FILES_MAX 1024
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

struct conf_key;
/* Parses value into field (a member of struct nb_config). On failure returns -errno,
 * leaves the field untouched and writes what is wrong into problem. */
typedef int (*conf_parse_fn)(const struct conf_key *k, const char *value, void *field,
                             char *problem, size_t size);
/* Writes the accepted values, for "(accepted: ...)". */
typedef void (*conf_accepted_fn)(const struct conf_key *k, char *buf, size_t size);

struct conf_type {
        conf_parse_fn parse;
        conf_accepted_fn accepted;
        /* What the parser leaves in the field: the storage alone decides how the
         * field is released (config_done) and copied (config_copy). */
        enum config_storage storage;
};

struct conf_enum {
        const char *name;
        int value;
};

struct conf_key {
        const char *name;              /* "section.key" */
        const char *section, *key;
        const struct conf_type *type;
        uint64_t min, max;             /* numbers and sizes (sizes in bytes) */
        size_t offset;                 /* of the field in struct nb_config */
        const char *def;               /* the default, as it would be written in the file */
        const char *help;
        const struct conf_enum *values;  /* enums: NULL-terminated by name */
};

/* ---- value helpers ---------------------------------------------------------- */

/* A value quoted in a message: cut, and with control bytes shown as '?', so that a
 * binary or huge value cannot garble the terminal or the journal. */
static const char *quote(const char *s, char *buf, size_t size) {
        size_t i = 0, o = 0;

        if (size < 8)
                return "";
        buf[o++] = '"';
        for (; s[i] && o < size - 5 && i < 64; i++)
                buf[o++] = (unsigned char) s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
        if (s[i]) {
                memcpy(buf + o, "...", 3);
                o += 3;
        }
        buf[o++] = '"';
        buf[o] = 0;
        return buf;
}

static void number_problem(int r, const char *value, char *problem, size_t size) {
        char q[80];

        if (!*value)
                snprintf(problem, size, "empty value");
        else if (r == -ERANGE)
                snprintf(problem, size, "%s is out of range", quote(value, q, sizeof(q)));
        else if (isdigit((unsigned char) value[0]))
                snprintf(problem, size, "%s has junk after the number", quote(value, q, sizeof(q)));
        else
                snprintf(problem, size, "%s is not a number", quote(value, q, sizeof(q)));
}

static void format_size(uint64_t bytes, char *buf, size_t size) {
        static const char units[] = "TGMK";

        for (unsigned i = 0; i < 4 && bytes; i++) {
                unsigned shift = 10 * (4 - i);
                if (bytes % (UINT64_C(1) << shift) == 0) {
                        snprintf(buf, size, "%" PRIu64 "%c", bytes >> shift, units[i]);
                        return;
                }
        }
        snprintf(buf, size, "%" PRIu64, bytes);
}

/* ---- the types -------------------------------------------------------------- */

static int parse_u64_field(const struct conf_key *k, const char *value, void *field,
                           char *problem, size_t size) {
        uint64_t v;
        int r = parse_u64(value, k->min, k->max, &v);
        if (r < 0) {
                number_problem(r, value, problem, size);
                return r;
        }
        *(uint64_t *) field = v;
        return 0;
}

static int parse_uint_field(const struct conf_key *k, const char *value, void *field,
                            char *problem, size_t size) {
        uint64_t v;
        int r = parse_u64(value, k->min, k->max, &v);
        if (r < 0) {
                number_problem(r, value, problem, size);
                return r;
        }
        *(unsigned *) field = (unsigned) v;
        return 0;
}

static void accepted_range(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, "%" PRIu64 "..%" PRIu64, k->min, k->max);
}

/* Sizes are written in bytes with an optional K/M/G/T suffix and kept in kB. */
static int parse_size_kb_field(const struct conf_key *k, const char *value, void *field,
                               char *problem, size_t size) {
        uint64_t v;
        int r = parse_size(value, k->min, k->max, &v);
        if (r < 0) {
                char q[80];
                if (r == -EINVAL && *value && isdigit((unsigned char) value[0]))
                        snprintf(problem, size, "%s has junk after the number (or an unknown unit)",
                                 quote(value, q, sizeof(q)));
                else
                        number_problem(r, value, problem, size);
                return r;
        }
        *(uint64_t *) field = v / 1024 + (v % 1024 != 0);
        return 0;
}

static void accepted_size(const struct conf_key *k, char *buf, size_t size) {
        char a[32], b[32];
        format_size(k->min, a, sizeof(a));
        format_size(k->max, b, sizeof(b));
        snprintf(buf, size, "%s..%s bytes, with an optional K, M, G or T suffix", a, b);
}

static int parse_bool_field(const struct conf_key *k, const char *value, void *field,
                            char *problem, size_t size) {
        bool b;
        int r = parse_bool(value, &b);
        if (r < 0) {
                char q[80];
                snprintf(problem, size, "%s is not a boolean", quote(value, q, sizeof(q)));
                return r;
        }
        *(bool *) field = b;
        return 0;
}

static void accepted_bool(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, "yes, no, true, false, on, off, 1, 0");
}

/* Enum names are matched exactly, lower case, like the kernel's own control files:
 * a value that is not one of the words is a mistake worth hearing about. */
static int parse_enum_field(const struct conf_key *k, const char *value, void *field,
                            char *problem, size_t size) {
        char q[80];

        for (const struct conf_enum *e = k->values; e->name; e++)
                if (strcmp(value, e->name) == 0) {
                        *(int *) field = e->value;
                        return 0;
                }
        snprintf(problem, size, "%s is not a known value", quote(value, q, sizeof(q)));
        return -EINVAL;
}

static void accepted_enum(const struct conf_key *k, char *buf, size_t size) {
        size_t o = 0;

        buf[0] = 0;
        for (const struct conf_enum *e = k->values; e->name && o < size; e++) {
                int n = snprintf(buf + o, size - o, "%s%s", e == k->values ? "" : ", ", e->name);
                if (n < 0)
                        break;
                o += (size_t) n;
        }
}

static int parse_cpus_field(const struct conf_key *k, const char *value, void *field,
                            char *problem, size_t size) {
        nb_cpumask m;
        int r = cpumask_parse(value, &m);
        if (r < 0) {
                char q[80];
                snprintf(problem, size, "%s %s", quote(value, q, sizeof(q)),
                         r == -ERANGE ? "names a CPU beyond the limit" : "is not a CPU list");
                return r;
        }
        *(nb_cpumask *) field = m;
        return 0;
}

static void accepted_cpus(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, "a CPU list such as 0-1,8 with CPUs below %u, or empty for the lowest-numbered online CPU",
                 NB_CPUS_MAX);
}

static int parse_nodes_field(const struct conf_key *k, const char *value, void *field,
                             char *problem, size_t size) {
        nb_nodemask m;
        int r = nodemask_parse(value, &m);
        if (r < 0) {
                char q[80];
                snprintf(problem, size, "%s %s", quote(value, q, sizeof(q)),
                         r == -ERANGE ? "names a node beyond the limit" : "is not a node list");
                return r;
        }
        *(nb_nodemask *) field = m;
        return 0;
}

static void accepted_nodes(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, "a node list such as 2-3 with nodes below %u, or empty for the default rule",
                 NB_NODES_MAX);
}

static void free_string(void *field) {
        char **s = field;
        free(*s);
        *s = NULL;
}

/* An absolute path; k->min == 1 means it may not be empty. */
static int parse_path_field(const struct conf_key *k, const char *value, void *field,
                            char *problem, size_t size) {
        char q[80];
        char *copy;

        if (!*value && k->min) {
                snprintf(problem, size, "empty value");
                return -EINVAL;
        }
        if (*value && value[0] != '/') {
                snprintf(problem, size, "%s is not an absolute path", quote(value, q, sizeof(q)));
                return -EINVAL;
        }
        if (strlen(value) >= PATH_MAX) {
                snprintf(problem, size, "path is too long");
                return -ENAMETOOLONG;
        }
        copy = strdup(value);
        if (!copy) {
                snprintf(problem, size, "out of memory");
                return -ENOMEM;
        }
        free_string(field);
        *(char **) field = copy;
        return 0;
}

static void accepted_path(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, k->min ? "an absolute path" : "an absolute path, or empty for none");
}

/* A group name (the portable set: letters, digits, '_', '-', '.', not starting with
 * '-', at most 32 bytes) or a number, or empty. Resolved when the file is written:
 * the group may be created after the daemon starts. */
static int parse_group_field(const struct conf_key *k, const char *value, void *field,
                             char *problem, size_t size) {
        size_t len = strlen(value);
        char q[80];
        char *copy;

        if (len > 32 || value[0] == '-' ||
            strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != len) {
                snprintf(problem, size, "%s is not a group name or number", quote(value, q, sizeof(q)));
                return -EINVAL;
        }
        copy = strdup(value);
        if (!copy) {
                snprintf(problem, size, "out of memory");
                return -ENOMEM;
        }
        free_string(field);
        *(char **) field = copy;
        return 0;
}

static void accepted_group(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, "a group name or number, or empty for the group the file is created with");
}

static void rules_free(struct cgroup_rule *rules, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(rules[i].path);
        free(rules);
}

/* A cgroup path as written in a rule: absolute, no empty, "." or ".." components
 * (nothing may point outside the cgroup root, and one cgroup has one spelling), no
 * trailing slash except for the root "/" itself. */
static const char *cgroup_path_problem(const char *p, size_t len) {
        if (len == 0 || p[0] != '/')
                return "path must start with '/'";
        if (len >= PATH_MAX)
                return "path is too long";
        if (len == 1)
                return NULL;
        for (size_t i = 1; i <= len; i++) {
                size_t start = i, n;
                while (i < len && p[i] != '/')
                        i++;
                n = i - start;
                if (n == 0)
                        return "path has an empty component (\"//\" or a trailing '/')";
                if ((n == 1 && p[start] == '.') || (n == 2 && p[start] == '.' && p[start + 1] == '.'))
                        return "path has a \".\" or \"..\" component";
        }
        return NULL;
}

/* A [select] units name as written in a rule: a glob on one directory's name. */
static const char *unit_name_problem(const char *p, size_t len) {
        if (len == 0)
                return "name is empty";
        if (len > NAME_MAX)
                return "name is longer than a directory name can be";
        if (memchr(p, '/', len))
                return "name has a '/' (accepted: a directory's own name; a path goes in cgroups)";
        if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
                return "name is \".\" or \"..\"";
        return NULL;
}

/* One rule's item, "PATH=MODE" (or "NAME=MODE"), split at its last '=' (modes never
 * contain one), checked against the rules of the same line before it. */
/* The value after '=': a mode, or for a fast_shares rule (ret->share) a percentage. */
static int parse_rule_value(const char *v, size_t len, struct cgroup_rule *ret) {
        if (ret->share) {
                ret->mode = CG_MODE_UNSET;
                return fast_share_parse(v, len, &ret->share_pct);
        }
        return config_cg_mode_parse(v, len, &ret->mode);
}

static int parse_rule(const char *start, const char *end, const char *eq, bool by_name,
                      const struct cgroup_rule *rules, size_t n, struct cgroup_rule *ret, char *problem, size_t size) {
        char item[PATH_MAX + 16], q[80];
        size_t len = (size_t) (end - start);
        const char *what;

        snprintf(item, sizeof(item), "%.*s", (int) (len < sizeof(item) ? len : sizeof(item) - 1), start);
        if (!eq) {
                snprintf(problem, size, "%s has no '=%s'", quote(item, q, sizeof(q)), ret->share ? "SHARE" : "MODE");
                return -EINVAL;
        }
        what = by_name ? unit_name_problem(start, (size_t) (eq - start)) : cgroup_path_problem(start, (size_t) (eq - start));
        if (what) {
                snprintf(problem, size, "%s: %s", quote(item, q, sizeof(q)), what);
                return -EINVAL;
        }
        if (parse_rule_value(eq + 1, (size_t) (end - eq - 1), ret) < 0) {
                snprintf(problem, size, "%s: %s", quote(item, q, sizeof(q)),
                         ret->share ? "not a percentage (0%..100%)" : "unknown mode");
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++)
                if (strlen(rules[i].path) == (size_t) (eq - start) && memcmp(rules[i].path, start, (size_t) (eq - start)) == 0) {
                        snprintf(problem, size, "%s: the %s is named twice", quote(item, q, sizeof(q)),
                                 by_name ? "name" : "path");
                        return -EINVAL;
                }
        ret->by_name = by_name;
        ret->path = strndup(start, (size_t) (eq - start));
        if (!ret->path) {
                snprintf(problem, size, "out of memory");
                return -ENOMEM;
        }
        return 0;
}

/* "/db.slice=balance /batch.slice=advise": rules separated by whitespace or commas. */
static int parse_rules(const struct conf_key *k, const char *value, void *field, bool by_name, bool share,
                       char *problem, size_t size) {
        struct nb_config *cfg = (struct nb_config *) ((char *) field - k->offset);
        struct cgroup_rule *rules = NULL;
        const char *p = value;
        size_t n = 0;
        int r = 0;

        for (;;) {
                const char *start, *eq = NULL;
                struct cgroup_rule *nr;

                while (*p && (isspace((unsigned char) *p) || *p == ','))
                        p++;
                if (!*p)
                        break;
                start = p;
                while (*p && !isspace((unsigned char) *p) && *p != ',') {
                        if (*p == '=')
                                eq = p;
                        p++;
                }
                nr = realloc(rules, (n + 1) * sizeof(*rules));
                if (!nr) {
                        snprintf(problem, size, "out of memory");
                        r = -ENOMEM;
                        break;
                }
                rules = nr;
                rules[n] = (struct cgroup_rule) { .share = share };
                r = parse_rule(start, p, eq, by_name, rules, n, &rules[n], problem, size);
                if (r < 0)
                        break;
                n++;
        }
        if (r < 0) {
                rules_free(rules, n);
                return r;
        }
        rules_free(cfg->cgroups, cfg->n_cgroups);
        cfg->cgroups = rules;
        cfg->n_cgroups = n;
        return 0;
}

static int parse_cgroups_field(const struct conf_key *k, const char *value, void *field,
                               char *problem, size_t size) {
        return parse_rules(k, value, field, false, false, problem, size);
}

static int parse_units_field(const struct conf_key *k, const char *value, void *field,
                             char *problem, size_t size) {
        return parse_rules(k, value, field, true, false, problem, size);
}

static int parse_shares_field(const struct conf_key *k, const char *value, void *field,
                              char *problem, size_t size) {
        return parse_rules(k, value, field, false, true, problem, size);
}

static void accepted_shares(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, "/PATH=N%% with N 0..100, separated by spaces or commas; PATH without . or .. "
                 "components, a cgroup with a setting of its own");
}

static void accepted_units(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, "NAME=place|balance|advise|off, separated by spaces or commas; NAME a cgroup "
                 "directory's own name or a glob of it (postgresql@*.service), without '/'");
}

static void accepted_cgroups(const struct conf_key *k, char *buf, size_t size) {
        snprintf(buf, size, "/PATH=place|balance|advise|off, separated by spaces or commas; PATH without . or .. components");
}

static const struct conf_type type_u64 = { parse_u64_field, accepted_range, CONFIG_STORAGE_INLINE };
static const struct conf_type type_uint = { parse_uint_field, accepted_range, CONFIG_STORAGE_INLINE };
static const struct conf_type type_size_kb = { parse_size_kb_field, accepted_size, CONFIG_STORAGE_INLINE };
static const struct conf_type type_bool = { parse_bool_field, accepted_bool, CONFIG_STORAGE_INLINE };
static const struct conf_type type_enum = { parse_enum_field, accepted_enum, CONFIG_STORAGE_INLINE };
static const struct conf_type type_cpus = { parse_cpus_field, accepted_cpus, CONFIG_STORAGE_INLINE };
static const struct conf_type type_nodes = { parse_nodes_field, accepted_nodes, CONFIG_STORAGE_INLINE };
static const struct conf_type type_path = { parse_path_field, accepted_path, CONFIG_STORAGE_STRING };
static const struct conf_type type_group = { parse_group_field, accepted_group, CONFIG_STORAGE_STRING };
static const struct conf_type type_cgroups = { parse_cgroups_field, accepted_cgroups, CONFIG_STORAGE_CGROUPS };
/* The units rules go in the same array as the cgroups rules (by_name), which the
 * cgroups key owns: field_free() and field_copy() act for that key alone. */
static const struct conf_type type_units = { parse_units_field, accepted_units, CONFIG_STORAGE_CGROUPS };
static const struct conf_type type_shares = { parse_shares_field, accepted_shares, CONFIG_STORAGE_CGROUPS };

/* ---- the table -------------------------------------------------------------- */

static const struct conf_enum log_levels[] = {
        { "err", LOG_LVL_ERR }, { "warning", LOG_LVL_WARNING }, { "notice", LOG_LVL_NOTICE },
        { "info", LOG_LVL_INFO }, { "debug", LOG_LVL_DEBUG }, {},
};
static const struct conf_enum knb_actions[] = { { "leave", KNB_LEAVE }, { "disable", KNB_DISABLE }, {} };
static const struct conf_enum sources[] = {
        { "auto", SOURCE_AUTO }, { "proc", SOURCE_PROC }, { "bpf", SOURCE_BPF }, {},
};
static const struct conf_enum pmu_modes[] = {
        { "auto", PMU_MODE_AUTO }, { "off", PMU_MODE_OFF }, { "page-faults", PMU_MODE_PAGE_FAULTS },
        { "software", PMU_MODE_SOFTWARE }, { "replay", PMU_MODE_REPLAY }, {},
};
static const struct conf_enum damon_modes[] = { { "auto", DAMON_MODE_AUTO }, { "off", DAMON_MODE_OFF }, {} };

#define F(member) offsetof(struct nb_config, member)
#define KEY(s, k) .name = s "." k, .section = s, .key = k
#define HOUR_MS UINT64_C(3600000)
#define DAY_MS (24 * HOUR_MS)
#define TIB (UINT64_C(1) << 40)

/* The order is the order of conf/numabalanced.conf and of the man page. */
static const struct conf_key conf_keys[] = {
        { KEY("daemon", "service_cpus"), &type_cpus, 0, 0, F(service_cpus), "",
          "CPUs the daemon and all its threads run on; empty: the lowest-numbered online CPU" },
        { KEY("daemon", "tick_ms"), &type_u64, 100, 60000, F(tick_ms), "1000",
          "base tick: how often the pipeline runs" },
        { KEY("daemon", "scan_min_ms"), &type_u64, 100, DAY_MS, F(scan_min_ms), "1000",
          "scan interval of a process while it is misplaced or changing (at most scan_max_ms)" },
        { KEY("daemon", "scan_max_ms"), &type_u64, 100, DAY_MS, F(scan_max_ms), "30000",
          "scan interval of a settled process (the interval doubles up to this)" },
        { KEY("daemon", "log_level"), &type_enum, 0, 0, F(log_level), "info",
          "messages below this level are not logged (--log-level wins)", log_levels },
        { KEY("daemon", "kernel_numa_balancing"), &type_enum, 0, 0, F(kernel_numa_balancing), "leave",
          "disable: set kernel.numa_balancing=0 at start and restore it at exit", knb_actions },

        { KEY("select", "cgroup_root"), &type_path, 1, 0, F(cgroup_root), "/sys/fs/cgroup",
          "where the cgroup v2 hierarchy is mounted" },
        { KEY("select", "cgroups"), &type_cgroups, 0, 0, F(cgroups), "",
          "cgroups opted in (or out) here rather than with the numabalanced xattr" },
        { KEY("select", "units"), &type_units, 0, 0, F(cgroups), "",
          "cgroups opted in (or out) by their directory's own name, anywhere under cgroup_root: a systemd "
          "unit's (postgresql@*.service), a Kubernetes pod's; a cgroups rule on the same directory wins" },
        { KEY("select", "fast_shares"), &type_shares, 0, 0, F(cgroups), "",
          "the share of each fast node a cgroup keeps when the exchange takes other opted-in processes' cold "
          "memory for one's hot memory: /PATH=N%, on a cgroup with a setting of its own (wins over its "
          "numabalanced.fast_share xattr)" },
        { KEY("select", "min_rss"), &type_size_kb, 0, TIB, F(min_rss_kb), "16M",
          "processes with less resident memory are skipped" },

        { KEY("sample", "source"), &type_enum, 0, 0, F(source), "auto",
          "where thread placement comes from: auto (BPF when available), proc, bpf", sources },
        { KEY("sample", "react_ms"), &type_u64, 0, 60000, F(react_ms), "50",
          "BPF source: decide again this long after a thread of a watched process changes node; 0: off" },
        { KEY("sample", "pmu"), &type_enum, 0, 0, F(pmu), "auto",
          "page-level sampling: auto (the PMU's precise memory sampling where the CPU has it, with BPF), "
          "off, page-faults (the page-fault software event: first touches only, for tests), software "
          "(timer samples of the threads of processes spanning nodes, their accesses decoded: x86-64, "
          "a real CPU), replay (samples read from replay_path: for tests)", pmu_modes },
        { KEY("sample", "damon"), &type_enum, 0, 0, F(damon), "auto",
          "DAMON's hot regions as evidence for promotion off slow nodes: auto (where the kernel has "
          "DAMON's sysfs with vaddr and no other tool uses it), off", damon_modes },
        { KEY("sample", "pmu_sample_rate"), &type_u64, 1, 100000, F(pmu_sample_rate), "1000",
          "PMU samples per second per CPU: the bound on the sampling overhead" },
        { KEY("sample", "software_sample_rate"), &type_u64, 1, 10000, F(software_sample_rate), "100",
          "pmu = software: samples per second of each sampled thread's run time" },
        { KEY("sample", "replay_path"), &type_path, 0, 0, F(replay_path), "",
          "pmu = replay: the file whose lines \"TGID CPU ADDR\" are replayed as page-level samples as "
          "they are appended (tests)" },
        { KEY("sample", "huge_vma"), &type_size_kb, 0, TIB, F(huge_vma_kb), "1G",
          "a settled process with a mapping this large is checked by sampling its pages instead of "
          "reading numa_maps, whose walk holds its mmap lock; 0: always read numa_maps" },

        { KEY("decide", "min_cpu_share_pct"), &type_uint, 1, 100, F(min_cpu_share_pct), "60",
          "a node must have run this share of a process's CPU time before memory follows it" },
        { KEY("decide", "keep_node_share_pct"), &type_uint, 1, 100, F(keep_node_share_pct), "20",
          "pages on a node where a process spends at least this share of its CPU time stay there "
          "(its threads there may be the ones using them); 100: only the hot node's" },
        { KEY("decide", "cooldown_ms"), &type_u64, 0, DAY_MS, F(cooldown_ms), "30000",
          "time before the same memory range is moved again" },
        { KEY("decide", "free_floor_pct"), &type_uint, 0, 99, F(free_floor_pct), "5",
          "never move memory to a node with less than this share of its memory free" },
        { KEY("decide", "move_shared"), &type_bool, 0, 0, F(move_shared), "yes",
          "move a group's shared memory, a page only when every process mapping it is a member" },
        { KEY("decide", "move_preferred"), &type_bool, 0, 0, F(move_preferred), "no",
          "also move memory with a preferred policy, within its preferred nodes" },
        { KEY("decide", "move_mlocked"), &type_bool, 0, 0, F(move_mlocked), "no",
          "also move memory locked with mlock(2)" },
        { KEY("decide", "min_misplaced"), &type_size_kb, 0, TIB, F(min_misplaced_kb), "2M",
          "a memory range with less misplaced memory is left alone" },
        { KEY("decide", "slow_nodes"), &type_nodes, 0, 0, F(slow_nodes), "",
          "nodes whose memory is a slower tier: never a target, and memory there is not misplaced for "
          "being there; empty: the nodes the kernel puts in a tier below DRAM's "
          "(/sys/devices/virtual/memory_tiering), and nodes without CPUs unless the kernel puts them in a "
          "faster tier" },
        { KEY("decide", "promote_free_floor_pct"), &type_uint, 0, 99, F(promote_free_floor_pct), "10",
          "hot pages on a slow node are promoted only while the fast node keeps this share of its memory "
          "free (free_floor_pct when higher), so that the kernel does not demote them again" },
        { KEY("decide", "exchange"), &type_bool, 0, 0, F(exchange), "yes",
          "when hot pages wait at a full fast node's promotion floor, demote as many bytes of cold pages "
          "there (not accessed for cold_age_ms, by DAMON; the same process's first, then other opted-in "
          "processes') to a slow node, and promote into the room" },
        { KEY("decide", "cold_age_ms"), &type_u64, 1000, DAY_MS, F(cold_age_ms), "10000",
          "the exchange demotes only memory DAMON saw no access to for this long" },

        { KEY("decide", "place_hold_ms"), &type_u64, 0, DAY_MS, F(place_hold_ms), "60000",
          "mode place: a process whose threads were placed on a node stays there at least this long" },
        { KEY("decide", "place_thread_cost"), &type_size_kb, 0, TIB, F(place_thread_cost_kb), "16M",
          "mode place: what moving one busy thread to another node is taken to cost, as bytes of "
          "memory copied (its caches refill there); threads move to their memory when that is cheaper" },

        { KEY("migrate", "rate_limit_mb_s"), &type_u64, 0, 1048576, F(rate_limit_mb_s), "1024",
          "copy budget for all migrations together in MB/s; 0: unlimited" },
        { KEY("migrate", "batch_pages"), &type_u64, 1, 1048576, F(batch_pages), "65536",
          "pages per move_pages(2) call at most; a stop request waits for the batch" },
        { KEY("migrate", "rate_limit_calls_s"), &type_u64, 0, 1000000, F(rate_limit_calls_s), "100",
          "move_pages(2) calls that move pages, per second for all migrations together; 0: unlimited" },
        { KEY("migrate", "promote_rate_limit_mb_s"), &type_u64, 0, 1048576, F(promote_rate_limit_mb_s), "256",
          "promotion of hot pages from slow nodes to fast ones in MB/s, within rate_limit_mb_s; 0: none" },

        { KEY("report", "metrics_path"), &type_path, 0, 0, F(metrics_path), "",
          "Prometheus textfile written every tick; empty: none" },
        { KEY("report", "metrics_group"), &type_group, 0, 0, F(metrics_group), "",
          "group that may read the metrics file (mode 0640): node_exporter's; empty: root's" },
};

static const char *const sections[] = { "daemon", "select", "sample", "decide", "migrate", "report" };

const char *const *config_keys(void) {
        /* Filled from the table on each call: the same pointers every time. */
        static const char *names[ELEMENTSOF(conf_keys) + 1];
        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++)
                names[i] = conf_keys[i].name;
        return names;
}

int config_key_storage(const char *name, enum config_storage *ret_storage, size_t *ret_offset) {
        for (size_t i = 0; name && i < ELEMENTSOF(conf_keys); i++)
                if (strcmp(conf_keys[i].name, name) == 0) {
                        if (ret_storage)
                                *ret_storage = conf_keys[i].type->storage;
                        if (ret_offset)
                                *ret_offset = conf_keys[i].offset;
                        return 0;
                }
        return -ENOENT;
}

static const struct conf_key *key_find(const char *section, const char *key) {
        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++)
                if (strcmp(conf_keys[i].section, section) == 0 && strcmp(conf_keys[i].key, key) == 0)
                        return &conf_keys[i];
        return NULL;
}

static bool section_known(const char *section) {
        for (size_t i = 0; i < ELEMENTSOF(sections); i++)
                if (strcmp(sections[i], section) == 0)
                        return true;
        return false;
}

/* ---- defaults, release and copy --------------------------------------------- */

/* Releases what the field of k holds in cfg, and leaves it empty. */
static void field_free(const struct conf_key *k, struct nb_config *cfg) {
        switch (k->type->storage) {
        case CONFIG_STORAGE_INLINE:
                break;
        case CONFIG_STORAGE_STRING:
                free_string((char *) cfg + k->offset);
                break;
        case CONFIG_STORAGE_CGROUPS:
                if (k->type != &type_cgroups)
                        break;  /* the units rules are the cgroups key's to release */
                rules_free(cfg->cgroups, cfg->n_cgroups);
                cfg->cgroups = NULL;
                cfg->n_cgroups = 0;
                break;
        }
}

/* Makes the field of k in dst, a byte copy of src, a copy of its own. On failure
 * the field still points into src. */
static int field_copy(const struct conf_key *k, struct nb_config *dst, const struct nb_config *src) {
        switch (k->type->storage) {
        case CONFIG_STORAGE_INLINE:
                return 0;
        case CONFIG_STORAGE_STRING: {
                const char *s = *(char *const *) ((const char *) src + k->offset);
                char *copy = NULL;

                /* NULL only after config_defaults() ran out of memory, or in a config
                 * made by hand: a path that may not be empty (cgroup_root) gets its
                 * default, as the daemon's own copy always did; the others stay NULL. */
                if (!s && k->min)
                        s = k->def;
                if (s && !(copy = strdup(s)))
                        return -ENOMEM;
                *(char **) ((char *) dst + k->offset) = copy;
                return 0;
        }
        case CONFIG_STORAGE_CGROUPS: {
                struct cgroup_rule *rules = NULL;
                size_t n = 0;

                if (k->type != &type_cgroups)
                        return 0;       /* copied with the cgroups key's */
                if (src->n_cgroups && !(rules = calloc(src->n_cgroups, sizeof(*rules))))
                        return -ENOMEM;
                for (; n < src->n_cgroups; n++)
                        if (config_rule_copy(&rules[n], &src->cgroups[n]) < 0) {
                                rules_free(rules, n);
                                return -ENOMEM;
                        }
                dst->cgroups = rules;
                dst->n_cgroups = n;
                return 0;
        }
        }
        return -EINVAL;
}

void config_done(struct nb_config *cfg) {
        if (!cfg)
                return;
        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++)
                field_free(&conf_keys[i], cfg);
}

int config_copy(struct nb_config *dst, const struct nb_config *src) {
        struct nb_config c;
        size_t i;
        int r = 0;

        /* Bytes first (every inline value, padding included), then each owned field
         * replaced by a copy, in table order. */
        memcpy(&c, src, sizeof(c));
        for (i = 0; i < ELEMENTSOF(conf_keys); i++) {
                r = field_copy(&conf_keys[i], &c, src);
                if (r < 0)
                        break;
        }
        if (r < 0) {
                /* The fields before i are c's own; the others still point into src. */
                while (i-- > 0)
                        field_free(&conf_keys[i], &c);
                return r;
        }
        memcpy(dst, &c, sizeof(c));
        return 0;
}

static int config_defaults_full(struct nb_config *cfg) {
        *cfg = (struct nb_config) {};
        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++) {
                const struct conf_key *k = &conf_keys[i];
                char problem[256];
                int r = k->type->parse(k, k->def, (char *) cfg + k->offset, problem, sizeof(problem));
                if (r < 0) {
                        /* Only out of memory: the defaults are checked by the tests. */
                        log_debug_errno(r, "config: default of %s: %s", k->name, problem);
                        config_done(cfg);
                        return r;
                }
        }
        return 0;
}

void config_defaults(struct nb_config *cfg) {
        /* The only possible failure is strdup() of a default path; the fields are then
         * NULL, which every user of cgroup_root/metrics_path must handle anyway. */
        (void) config_defaults_full(cfg);
}

void config_errors_done(struct config_errors *e) {
        if (!e)
                return;
        for (size_t i = 0; i < e->n; i++)
                free(e->msgs[i]);
        free(e->msgs);
        e->msgs = NULL;
        e->n = 0;
}

static int errors_add(struct config_errors *e, const char *fmt, ...) _printf_(2, 3);
static int errors_add(struct config_errors *e, const char *fmt, ...) {
        va_list ap;
        char *msg, **nm;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        nm = realloc(e->msgs, (e->n + 1) * sizeof(*nm));
        if (!nm) {
                free(msg);
                return -ENOMEM;
        }
        e->msgs = nm;
        e->msgs[e->n++] = msg;
        return 0;
}

/* ---- the lines of the file --------------------------------------------------- */

/* A section header, a key with its value, or a line iniparser would reject. */
struct config_line {
        char *section;          /* lower case, as iniparser stores it */
        char *key;              /* NULL: a section header (or a syntax error) */
        char *value;            /* of a key: as iniparser_load() would store it; NULL: the
                                 * key is on the last line, which ends in a '\' */
        char *error;            /* a line iniparser would reject: what is wrong with it */
        unsigned line;          /* first line of the entry */
};

/* The file's entries, in its order. */
struct config_lines {
        struct config_line *v;
        size_t n;
};

static void config_lines_done(struct config_lines *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->v[i].section);
                free(s->v[i].key);
                free(s->v[i].value);
                free(s->v[i].error);
        }
        free(s->v);
        *s = (struct config_lines) {};
}

static char *strip_lower(const char *s, size_t len) {
        char *r;
        while (len && isspace((unsigned char) *s))
                s++, len--;
        while (len && isspace((unsigned char) s[len - 1]))
                len--;
        r = strndup(s, len);
        if (r)
                for (char *c = r; *c; c++)
                        *c = (char) tolower((unsigned char) *c);
        return r;
}

/* Takes key, value and error (any may be NULL) in all cases. */
static int config_lines_add(struct config_lines *s, const char *section, char *key, char *value, char *error,
                            unsigned line) {
        struct config_line *nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
        char *sec = strdup(section);

        if (nv)
                s->v = nv;
        if (!nv || !sec) {
                free(sec);
                free(key);
                free(value);
                free(error);
                return -ENOMEM;
        }
        s->v[s->n++] = (struct config_line) { sec, key, value, error, line };
        return 0;
}

static int config_lines_error(struct config_lines *s, unsigned line, const char *msg) {
        char *m = strdup(msg);
        if (!m)
                return -ENOMEM;
        return config_lines_add(s, "", NULL, NULL, m, line);
}

#define CONF_LINE_WIDTH STRINGIFY(CONF_LINE_MAX)

/* The value of "key = value" (b: a logical line of at most CONF_LINE_MAX bytes, not
 * starting with a blank, with a key before its first '=') as iniparser 4.1's
 * iniparser_line() reads it, with its very sscanf() patterns (the widths never cut a
 * line this short): a value in "..." or '...' is what is between the quotes, blanks
 * included, and what follows the closing quote is ignored; otherwise the value ends
 * at the first ';' or '#', without the blanks around it, and "" or '' is empty;
 * "key =", "key = ;..." and "key = #..." are empty. Returns the value (NULL: out of
 * memory) in *ret, or -EINVAL where iniparser would see a syntax error. */
static int config_lines_value(const char *b, char **ret) {
        char key[CONF_LINE_MAX + 1], value[CONF_LINE_MAX + 1];

        if (sscanf(b, "%" CONF_LINE_WIDTH "[^=] = \"%" CONF_LINE_WIDTH "[^\"]\"", key, value) == 2 ||
            sscanf(b, "%" CONF_LINE_WIDTH "[^=] = '%" CONF_LINE_WIDTH "[^']'", key, value) == 2) {
                /* Quoted: kept as it is. */
        } else if (sscanf(b, "%" CONF_LINE_WIDTH "[^=] = %" CONF_LINE_WIDTH "[^;#]", key, value) == 2) {
                size_t start = 0, len = strlen(value);

                while (len && isspace((unsigned char) value[len - 1]))
                        len--;
                while (start < len && isspace((unsigned char) value[start]))
                        start++;
                memmove(value, value + start, len - start);
                value[len - start] = 0;
                if (strcmp(value, "\"\"") == 0 || strcmp(value, "''") == 0)
                        value[0] = 0;
        } else if (sscanf(b, "%" CONF_LINE_WIDTH "[^=] = %" CONF_LINE_WIDTH "[;#]", key, value) == 2 ||
                   sscanf(b, "%" CONF_LINE_WIDTH "[^=] %" CONF_LINE_WIDTH "[=]", key, value) == 2) {
                value[0] = 0;
        } else
                return -EINVAL;
        *ret = strdup(value);
        return *ret ? 0 : -ENOMEM;
}

/* One logical line (continuations joined, trailing blanks dropped), b[0..blen)
 * with a NUL after it: blank, a comment, a section header (which becomes
 * *section), "key = value", or a line iniparser would reject. unfinished: the last
 * line of the file, ending in a '\' (which is still in b), which iniparser drops:
 * a key there has no value. */
static int config_lines_logical(struct config_lines *s, char **section, const char *b, size_t blen,
                                unsigned first, bool unfinished) {
        const char *eq;
        char *key, *value = NULL;
        int r;

        while (*b && isspace((unsigned char) *b))
                b++, blen--;
        if (!*b || *b == '#' || *b == ';')
                return 0;
        if (b[0] == '[' && b[blen - 1] == ']') {
                char *name = strip_lower(b + 1, blen >= 2 ? blen - 2 : 0);
                if (!name)
                        return -ENOMEM;
                free(*section);
                *section = name;
                return config_lines_add(s, *section, NULL, NULL, NULL, first);
        }
        eq = strchr(b, '=');
        if (!eq)
                return config_lines_error(s, first, "syntax error (accepted: [section], key = value, or a comment starting with # or ;)");
        key = strip_lower(b, (size_t) (eq - b));
        if (!key)
                return -ENOMEM;
        if (!*key) {
                free(key);
                return config_lines_error(s, first, "syntax error: no key before '=' (accepted: key = value)");
        }
        r = unfinished ? 0 : config_lines_value(b, &value);
        if (r < 0) {
                free(key);
                return r == -ENOMEM ? r :
                        config_lines_error(s, first, "syntax error (accepted: [section], key = value, or a comment starting with # or ;)");
        }
        return config_lines_add(s, *section, key, value, NULL, first);
}

/* Splits text into logical lines the way iniparser 4.1 does (trailing whitespace
 * dropped; a line ending in '\' continues on the next one, even a comment line) and
 * records every section header and key, with its line and value, and the lines
 * iniparser would reject. */
static int config_lines_scan(const char *text, size_t text_len, struct config_lines *s) {
        _cleanup_free_ char *section = strdup("");
        _cleanup_free_ char *logical = malloc(CONF_LINE_MAX + 2);
        const char *p = text, *end = text + text_len;
        unsigned lineno = 0, first = 0;
        size_t llen = 0;
        int r;

        if (!section || !logical)
                return -ENOMEM;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                size_t len = eol ? (size_t) (eol - p) : (size_t) (end - p);
                const char *line = p;
                bool continued;

                p = eol ? eol + 1 : end;
                lineno++;
                if (llen == 0)
                        first = lineno;

                while (len && isspace((unsigned char) line[len - 1]))
                        len--;
                if (memchr(line, 0, len)) {
                        r = config_lines_error(s, lineno, "a NUL byte (accepted: text)");
                        if (r < 0)
                                return r;
                        llen = 0;
                        continue;
                }
                if (llen + len > CONF_LINE_MAX) {
                        r = config_lines_error(s, first, "line too long (accepted: at most " STRINGIFY(CONF_LINE_MAX) " characters)");
                        if (r < 0)
                                return r;
                        llen = 0;
                        continue;
                }
                memcpy(logical + llen, line, len);
                llen += len;
                continued = len && line[len - 1] == '\\';
                if (continued && p < end) {
                        llen--;         /* the backslash goes, the next line is appended */
                        continue;
                }
                logical[llen] = 0;
                r = config_lines_logical(s, &section, logical, llen, first, continued);
                if (r < 0)
                        return r;
                llen = 0;
        }
        return 0;
}

static const struct config_line *config_lines_find(const struct config_lines *s, const char *section, const char *key) {
        for (size_t i = 0; i < s->n; i++)
                if (s->v[i].key && strcmp(s->v[i].section, section) == 0 && strcmp(s->v[i].key, key) == 0)
                        return &s->v[i];
        return NULL;
}

static bool config_lines_duplicated(const struct config_lines *s, const struct config_line *e) {
        for (size_t i = 0; i < s->n; i++)
                if (&s->v[i] != e && s->v[i].key && strcmp(s->v[i].section, e->section) == 0 &&
                    strcmp(s->v[i].key, e->key) == 0)
                        return true;
        return false;
}

/* ---- loading ---------------------------------------------------------------- */

static void accepted_sections(char *buf, size_t size) {
        size_t o = 0;
        buf[0] = 0;
        for (size_t i = 0; i < ELEMENTSOF(sections) && o < size; i++) {
                int n = snprintf(buf + o, size - o, "%s[%s]", i ? ", " : "", sections[i]);
                if (n < 0)
                        break;
                o += (size_t) n;
        }
}

static void accepted_keys(const char *section, char *buf, size_t size) {
        size_t o = 0;
        buf[0] = 0;
        for (size_t i = 0; i < ELEMENTSOF(conf_keys) && o < size; i++) {
                int n;
                if (strcmp(conf_keys[i].section, section) != 0)
                        continue;
                n = snprintf(buf + o, size - o, "%s%s", o ? ", " : "", conf_keys[i].key);
                if (n < 0)
                        break;
                o += (size_t) n;
        }
}

/* iniparser's errors go nowhere: the scan reports every line it rejects, with its
 * number (and the callback takes no context: its messages would need a static
 * buffer). */
static int iniparser_quiet(const char *format, ...) {
        return 0;
}

static void dictionary_freep(dictionary **d) {
        if (*d)
                iniparser_freedict(*d);
}

/* iniparser's dictionary of text (the file's bytes, read once): written to a memfd
 * that iniparser_load() opens by its /proc/self/fd path. NULL when iniparser rejects
 * the text (a syntax error, which the scan reports) or cannot be fed it (no memfd,
 * no /proc: logged at debug; the scan's values stand in). */
static dictionary *dictionary_of(const char *text, size_t len) {
        _cleanup_close_ int fd = memfd_create("numabalanced.conf", MFD_CLOEXEC);
        char path[64];
        dictionary *d;
        size_t off = 0;

        if (fd < 0) {
                log_debug_errno(-errno, "config: no memfd for iniparser, using the scan's values: %m");
                return NULL;
        }
        while (off < len) {
                ssize_t n = write(fd, text + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        log_debug_errno(n < 0 ? -errno : -EIO, "config: cannot feed iniparser, using the scan's values: %m");
                        return NULL;
                }
                off += (size_t) n;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        iniparser_set_error_callback(iniparser_quiet);
        d = iniparser_load(path);
        iniparser_set_error_callback(NULL);
        return d;
}

/* The value of e: iniparser's, or where it has none (no dictionary), the scan's. */
static const char *value_of(const dictionary *d, const struct config_line *e) {
        char key[CONF_LINE_MAX * 2 + 2];
        const char *v;

        if (!d)
                return e->value;
        snprintf(key, sizeof(key), "%s:%s", e->section, e->key);
        v = iniparser_getstring(d, key, NULL);
        return v ? v : e->value;
}

/* ---- the files: the main one, then its .d directory ---------------------------- */

/* Where a setting was made: one of the load's files, and the line. */
struct config_origin {
        const char *path;       /* owned by struct config_load's paths; NULL: the default */
        unsigned line;
};

/* One load across the main file and the files of its .d directory: the config they
 * build, where each key was last set (a later file's setting wins) and where each
 * cgroup rule was made (the rules of every file are put together). */
struct config_load {
        struct nb_config c;
        struct config_errors *errs;
        struct config_origin key_origin[ELEMENTSOF(conf_keys)];
        struct config_origin *rule_origin;      /* one per rule of c.cgroups */
        char *key_value[ELEMENTSOF(conf_keys)];  /* the value as written where key_origin says */
        struct config_errors notes;             /* struct config_files' */
        char **paths;                           /* every file read, for the origins */
        size_t n_paths;
};

static void config_load_done(struct config_load *L) {
        config_done(&L->c);
        free(L->rule_origin);
        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++)
                free(L->key_value[i]);
        config_errors_done(&L->notes);
        for (size_t i = 0; i < L->n_paths; i++)
                free(L->paths[i]);
        free(L->paths);
}

/* A copy of path that lives as long as the load. */
static const char *config_load_path(struct config_load *L, const char *path) {
        char **np = realloc(L->paths, (L->n_paths + 1) * sizeof(*np));
        char *copy = strdup(path);

        if (np)
                L->paths = np;
        if (!np || !copy) {
                free(copy);
                return NULL;
        }
        return L->paths[L->n_paths++] = copy;
}

/* The cgroups key: its values are lists, put together across lines and files
 * rather than replaced, so that no line length limits how many cgroups are named. */
static bool key_is_list(const struct conf_key *k) {
        return k->type->storage == CONFIG_STORAGE_CGROUPS;
}

/* The rules of one cgroups line (already parsed into *add, which is taken) appended
 * to the load's, with where they were made. A path named on two lines is found once
 * all are read (rules_resolve()), so that thousands of rules cost no more than
 * sorting them. */
static int rules_append(struct config_load *L, const struct conf_key *k, const char *path, unsigned line,
                        struct nb_config *add) {
        size_t n = L->c.n_cgroups;
        struct cgroup_rule *nr;
        struct config_origin *no;

        if (!add->n_cgroups)
                return 0;
        nr = realloc(L->c.cgroups, (n + add->n_cgroups) * sizeof(*nr));
        if (nr)
                L->c.cgroups = nr;
        no = realloc(L->rule_origin, (n + add->n_cgroups) * sizeof(*no));
        if (no)
                L->rule_origin = no;
        if (!nr || !no) {
                rules_free(add->cgroups, add->n_cgroups);
                add->cgroups = NULL;
                add->n_cgroups = 0;
                return -ENOMEM;
        }
        for (size_t i = 0; i < add->n_cgroups; i++) {
                L->c.cgroups[n + i] = add->cgroups[i];
                L->rule_origin[n + i] = (struct config_origin) { path, line };
        }
        L->c.n_cgroups = n + add->n_cgroups;
        free(add->cgroups);
        add->cgroups = NULL;
        add->n_cgroups = 0;
        return 0;
}

static const struct cgroup_rule *sort_rules;

/* By kind and path, then in the order the rules were read. */
static int rule_index_cmp(const void *a, const void *b) {
        size_t i = *(const size_t *) a, j = *(const size_t *) b;
        int r = (int) sort_rules[i].by_name - (int) sort_rules[j].by_name;

        if (!r)
                r = (int) sort_rules[i].share - (int) sort_rules[j].share;
        if (!r)
                r = strcmp(sort_rules[i].path, sort_rules[j].path);
        return r ? r : (i > j) - (i < j);
}

static bool same_rule(const struct cgroup_rule *a, const struct cgroup_rule *b) {
        return a->by_name == b->by_name && a->share == b->share && strcmp(a->path, b->path) == 0;
}

const char *config_rule_key(const struct cgroup_rule *r) {
        return r->share ? "fast_shares" : r->by_name ? "units" : "cgroups";
}

const char *config_rule_value(const struct cgroup_rule *r, char buf[static 8]) {
        if (!r->share)
                return config_cg_mode_name(r->mode);
        snprintf(buf, 8, "%d%%", r->share_pct < 0 || r->share_pct > 100 ? 0 : r->share_pct);
        return buf;
}

int config_rule_copy(struct cgroup_rule *dst, const struct cgroup_rule *src) {
        *dst = *src;
        dst->path = src->path ? strdup(src->path) : NULL;
        return src->path && !dst->path ? -ENOMEM : 0;
}

/* Rule i, read after rule earlier of the same directory (or name): in one file, which
 * was meant is the question (an error, as for one named twice on a line); in a later
 * file it replaces the earlier, as a later drop-in wins in systemd's and sysctl's
 * (an emergency 99-off.conf turns a cgroup off), and the log says so. */
static int rule_named_again(struct config_load *L, size_t earlier, size_t i, bool *drop) {
        const struct cgroup_rule *r = &L->c.cgroups[i], *e = &L->c.cgroups[earlier];
        const struct config_origin *o = &L->rule_origin[i], *eo = &L->rule_origin[earlier];
        char rv[8], ev[8];

        if (o->path == eo->path)
                return errors_add(L->errs, "%s:%u: [select] %s: \"%s=%s\": the %s is already named at %s:%u "
                                  "(accepted: one rule per %s in a file; a later file replaces it)",
                                  o->path, o->line, config_rule_key(r), r->path, config_rule_value(r, rv),
                                  r->by_name ? "name" : "path", eo->path, eo->line, r->by_name ? "name" : "cgroup");
        drop[earlier] = true;
        return errors_add(&L->notes, "%s:%u: [select] %s: \"%s=%s\" replaces \"%s=%s\" of %s:%u (a later file wins)",
                          o->path, o->line, config_rule_key(r), r->path, config_rule_value(r, rv), e->path,
                          config_rule_value(e, ev), eo->path, eo->line);
}

/* The rules replaced by a later file's, removed (drop[i]), the order kept. */
static void rules_compact(struct config_load *L, const bool *drop) {
        size_t k = 0;

        for (size_t i = 0; i < L->c.n_cgroups; i++) {
                if (drop[i]) {
                        free(L->c.cgroups[i].path);
                        continue;
                }
                L->c.cgroups[k] = L->c.cgroups[i];
                L->rule_origin[k++] = L->rule_origin[i];
        }
        L->c.n_cgroups = k;
}

/* A directory (or name) named by two rules, in one file or two (rule_named_again()),
 * reported in the order read. O(n log n) in the rules. */
static int rules_resolve(struct config_load *L) {
        size_t n = L->c.n_cgroups;
        _cleanup_free_ size_t *idx = NULL;
        _cleanup_free_ bool *drop = NULL;
        int r = 0;

        if (n < 2)
                return 0;
        idx = malloc(n * sizeof(*idx));
        drop = calloc(n, sizeof(*drop));
        if (!idx || !drop)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                idx[i] = i;
        /* qsort() takes no context; a load runs on one thread at a time (the event
         * loop, or a check), and the pointer is set and used only here. */
        sort_rules = L->c.cgroups;
        qsort(idx, n, sizeof(*idx), rule_index_cmp);
        sort_rules = NULL;
        /* In a run of equal rules (in the order read), each against the one before. */
        for (size_t i = 1; i < n && r >= 0; i++)
                if (same_rule(&L->c.cgroups[idx[i]], &L->c.cgroups[idx[i - 1]]))
                        r = rule_named_again(L, idx[i - 1], idx[i], drop);
        if (r >= 0)
                rules_compact(L, drop);
        return r < 0 ? r : 0;
}

/* One entry of a file (path, a string of the load's): its structure (known section
 * and key, not a duplicate within the file), then its value, which replaces what an
 * earlier file set, or for cgroups is added to it. */
static int config_line_check(struct config_load *L, const char *path, const struct config_lines *s,
                             const struct config_line *e, bool last, const dictionary *d) {
        struct config_errors *errs = L->errs;
        char accepted[1024], problem[512];
        const struct conf_key *k;
        const struct config_line *f;
        const char *value;
        int r;

        if (e->error)
                return errors_add(errs, "%s:%u: %s", path, e->line, e->error);
        if (!e->key) {
                if (section_known(e->section))
                        return 0;
                accepted_sections(accepted, sizeof(accepted));
                return errors_add(errs, "%s:%u: [%s]: unknown section (accepted: %s)",
                                  path, e->line, e->section, accepted);
        }
        if (!*e->section) {
                accepted_sections(accepted, sizeof(accepted));
                return errors_add(errs, "%s:%u: %s: key outside of any section (accepted: a section header first: %s)",
                                  path, e->line, e->key, accepted);
        }
        if (!section_known(e->section))
                return 0;       /* reported once, at the section header */
        k = key_find(e->section, e->key);
        if (!k) {
                accepted_keys(e->section, accepted, sizeof(accepted));
                return errors_add(errs, "%s:%u: [%s] %s: unknown key (accepted: %s)",
                                  path, e->line, e->section, e->key, accepted);
        }
        f = key_is_list(k) ? e : config_lines_find(s, e->section, e->key);
        if (f != e)
                return errors_add(errs, "%s:%u: [%s] %s: duplicate key, already set on line %u (accepted: one setting per key"
                                  " in a file)",
                                  path, e->line, e->section, e->key, f->line);
        /* The values of a duplicated key are not checked: which one was meant is the
         * question (iniparser would have kept the last one). */
        if (!key_is_list(k) && config_lines_duplicated(s, e))
                return 0;
        if (!e->value)
                return errors_add(errs, "%s:%u: [%s] %s: the last line ends in '\\', continuing the value past the end of "
                                  "the file (accepted: a '\\' at the end of a line only before another line)",
                                  path, e->line, e->section, e->key);

        /* iniparser keeps the last of a repeated key: the earlier cgroups lines are
         * read from the scan, which reads them with iniparser's own patterns. */
        value = key_is_list(k) && !last ? e->value : value_of(d, e);
        if (key_is_list(k)) {
                struct nb_config add = {};
                r = k->type->parse(k, value, (char *) &add + k->offset, problem, sizeof(problem));
                if (r >= 0)
                        return rules_append(L, k, path, e->line, &add);
        } else {
                r = k->type->parse(k, value, (char *) &L->c + k->offset, problem, sizeof(problem));
                if (r >= 0) {
                        char *copy = strdup(value);

                        if (!copy)
                                return -ENOMEM;
                        L->key_origin[k - conf_keys] = (struct config_origin) { path, e->line };
                        free(L->key_value[k - conf_keys]);
                        L->key_value[k - conf_keys] = copy;
                }
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                k->type->accepted(k, accepted, sizeof(accepted));
                return errors_add(errs, "%s:%u: [%s] %s: %s (accepted: %s)",
                                  path, e->line, e->section, e->key, problem, accepted);
        }
        return 0;
}

/* One file's text (read once), over what the files before it set. */
static int config_load_text(struct config_load *L, const char *path, const char *text, size_t len) {
        _cleanup_(config_lines_done) struct config_lines lines = {};
        _cleanup_(dictionary_freep) dictionary *d = NULL;
        size_t last[ELEMENTSOF(conf_keys)];
        int r;

        r = config_lines_scan(text, len, &lines);
        if (r < 0)
                return r;
        d = dictionary_of(text, len);

        /* The last entry of each list key in this file: the one iniparser keeps. */
        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++)
                last[i] = SIZE_MAX;
        for (size_t i = 0; i < lines.n; i++) {
                const struct conf_key *k = lines.v[i].key ? key_find(lines.v[i].section, lines.v[i].key) : NULL;
                if (k && key_is_list(k))
                        last[k - conf_keys] = i;
        }

        /* In the file's order, so that the errors read top to bottom. */
        for (size_t i = 0; i < lines.n; i++) {
                const struct conf_key *k = lines.v[i].key ? key_find(lines.v[i].section, lines.v[i].key) : NULL;
                r = config_line_check(L, path, &lines, &lines.v[i], k && last[k - conf_keys] == i, d);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The daemon runs as root and takes from these files where it writes (metrics_path)
 * and what it moves: a file or directory that another user could change would hand
 * that user root's say. Accepted: owned by root (or by the user reading it, for a
 * daemon or a check run without root), writable by its owner alone. */
static int owner_check(struct config_load *L, const char *path, const struct stat *st) {
        if (st->st_uid != 0 && st->st_uid != geteuid())
                return errors_add(L->errs, "%s: owned by uid %u (accepted: owned by root, writable by its owner only)",
                                  path, (unsigned) st->st_uid);
        if (st->st_mode & (S_IWGRP | S_IWOTH))
                return errors_add(L->errs, "%s: writable by %s (mode %04o; accepted: owned by root, writable by its owner only)",
                                  path, st->st_mode & S_IWOTH ? "others" : "its group",
                                  (unsigned) (st->st_mode & 07777));
        return 1;
}

/* Reads the file name (relative to dirfd) shown as path, after the owner check.
 * Returns 1 with the text, 0 when it is not read (in the directory: not a regular
 * file, or gone; or a problem, then in the errors), or -errno: for the main file,
 * why it cannot be read; out of memory for either. */
static int config_read(struct config_load *L, int dirfd, const char *name, const char *path, bool in_dir,
                       char **ret, size_t *ret_len) {
        /* O_NONBLOCK in the directory: a FIFO there is skipped, not waited on. */
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | (in_dir ? O_NONBLOCK : 0));
        struct stat st;
        int r;

        if (fd < 0 || fstat(fd, &st) < 0)
                r = -errno;
        else if (in_dir && !S_ISREG(st.st_mode))
                return 0;
        else if ((r = owner_check(L, path, &st)) <= 0)
                return r;
        else
                r = parse_read_fd_all(fd, CONF_FILE_MAX, ret, ret_len);
        if (r >= 0)
                return 1;
        if (!in_dir || r == -ENOMEM)
                return r;
        /* Removed since the directory was listed (a configuration manager at work), or
         * a dangling symlink: nothing to read, as if it were not there. */
        if (r == -ENOENT)
                return 0;
        r = errors_add(L->errs, "%s: %s", path, strerror(-r));
        return r < 0 ? r : 0;
}

static int config_load_file(struct config_load *L, int dirfd, const char *name, const char *shown, bool in_dir) {
        _cleanup_free_ char *text = NULL;
        const char *path;
        size_t len = 0;
        int r = config_read(L, dirfd, name, shown, in_dir, &text, &len);

        if (r <= 0)
                return r;
        path = config_load_path(L, shown);
        if (!path)
                return -ENOMEM;
        r = config_load_text(L, path, text, len);
        return r < 0 ? r : 1;
}

/* Names in a .d directory that are read: "*.conf", not hidden (editors' and
 * packages' leftovers, "x.conf~", "x.conf.dpkg-old", ".x.conf.swp", are not). */
static bool dropin_name(const char *name) {
        size_t len = strlen(name);
        return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".conf") == 0;
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void names_free(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* The names of dir (an open directory, taken) that are read, sorted bytewise, as
 * systemd and chrony order theirs. */
static int dropin_names(struct config_load *L, const char *dir, int dfd, char ***ret, size_t *ret_n) {
        DIR *dh = fdopendir(dfd);
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        int r = 0;

        if (!dh) {
                close(dfd);
                return -errno;
        }
        while ((errno = 0, de = readdir(dh))) {
                char **nn;

                if (!dropin_name(de->d_name))
                        continue;
                if (n == CONF_DIR_FILES_MAX) {
                        r = errors_add(L->errs, "%s: more than " STRINGIFY(CONF_DIR_FILES_MAX) " files ending in .conf "
                                       "(accepted: at most " STRINGIFY(CONF_DIR_FILES_MAX) ")", dir);
                        r = r < 0 ? r : -EINVAL;
                        break;
                }
                nn = realloc(names, (n + 1) * sizeof(*nn));
                if (!nn || !(nn[n] = strdup(de->d_name))) {
                        if (nn)
                                names = nn;
                        r = -ENOMEM;
                        break;
                }
                names = nn;
                n++;
        }
        if (!de && errno && r == 0)
                r = -errno;
        closedir(dh);
        if (r < 0) {
                names_free(names, n);
                return r;
        }
        if (n)
                qsort(names, n, sizeof(*names), strcmp_ptr);
        *ret = names;
        *ret_n = n;
        return 0;
}

/* A drop-in directory of the load: its descriptor and the names it has. */
struct layer {
        const char *dir;
        int fd;                     /* -1: missing, or not read (in the errors) */
        char **names;
        size_t n;
};

/* Opens dir and lists its names. A missing directory is none; one that cannot be
 * read, or that another user may write, is an error. Returns 0 or -ENOMEM. */
static int layer_open(struct config_load *L, const char *dir, struct layer *ly) {
        struct stat st;
        int r;

        *ly = (struct layer) { .dir = dir, .fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
        if (ly->fd < 0 && errno == ENOENT)
                return 0;
        if (ly->fd < 0 || fstat(ly->fd, &st) < 0) {
                r = errors_add(L->errs, "%s: %s", dir, strerror(errno));
                return r < 0 ? r : 0;
        }
        r = owner_check(L, dir, &st);
        if (r > 0) {
                r = dropin_names(L, dir, fcntl(ly->fd, F_DUPFD_CLOEXEC, 3), &ly->names, &ly->n);
                if (r == 0)
                        return 0;
                /* -EINVAL: in the errors already */
                if (r != -ENOMEM && r != -EINVAL)
                        r = errors_add(L->errs, "%s: %s", dir, strerror(-r));
        }
        close(ly->fd);
        ly->fd = -1;
        return r == -ENOMEM ? r : 0;
}

static void layers_close(struct layer *ly, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (ly[i].fd >= 0)
                        close(ly[i].fd);
                names_free(ly[i].names, ly[i].n);
        }
}

/* A name to read, from the layer that has it first. */
struct dropin {
        const char *name;
        size_t layer;
};

static int dropin_cmp(const void *a, const void *b) {
        const struct dropin *x = a, *y = b;
        int r = strcmp(x->name, y->name);

        return r ? r : (x->layer > y->layer) - (x->layer < y->layer);
}

/* The names of every layer, in name order, each from the first layer that has it; a
 * hidden one noted. Returns the count in *ret_n, or -ENOMEM. */
static int dropins_merge(struct config_load *L, const struct layer *ly, size_t n_layers, struct dropin **ret,
                         size_t *ret_n) {
        size_t n = 0, k = 0;
        struct dropin *v;

        for (size_t i = 0; i < n_layers; i++)
                n += ly[i].n;
        v = calloc(n ? n : 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0, at = 0; i < n_layers; i++)
                for (size_t j = 0; j < ly[i].n; j++)
                        v[at++] = (struct dropin) { ly[i].names[j], i };
        qsort(v, n, sizeof(*v), dropin_cmp);
        for (size_t i = 0; i < n; i++) {
                if (k && strcmp(v[k - 1].name, v[i].name) == 0) {
                        if (errors_add(&L->notes, "%s/%s: not read: %s/%s takes its place", ly[v[i].layer].dir,
                                       v[i].name, ly[v[k - 1].layer].dir, v[k - 1].name) < 0) {
                                free(v);
                                return -ENOMEM;
                        }
                        continue;
                }
                v[k++] = v[i];
        }
        *ret = v;
        *ret_n = k;
        return 0;
}

/* The files of the drop-in directories (highest priority first), in the order of
 * their names, over what the main file set. */
static int config_load_dirs(struct config_load *L, const char *const *dirs, size_t n_dirs, size_t *ret_n) {
        struct layer ly[CONFIG_LAYERS_MAX] = {};
        _cleanup_free_ struct dropin *v = NULL;
        size_t n = 0;
        int r = 0;

        *ret_n = 0;
        if (n_dirs > CONFIG_LAYERS_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n_dirs; i++)
                ly[i].fd = -1;
        for (size_t i = 0; i < n_dirs && r >= 0; i++)
                r = layer_open(L, dirs[i], &ly[i]);
        if (r >= 0)
                r = dropins_merge(L, ly, n_dirs, &v, &n);
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *shown = NULL;

                if (asprintf(&shown, "%s/%s", ly[v[i].layer].dir, v[i].name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = config_load_file(L, ly[v[i].layer].fd, v[i].name, shown, true);
                if (r > 0)
                        (*ret_n)++;
        }
        layers_close(ly, n_dirs);
        return r < 0 ? r : 0;
}

/* Cross-key rules, once every value is known, reported where the key that breaks
 * them was last set. */
static int config_cross_check(struct config_load *L) {
        const struct conf_key *kmin = key_find("daemon", "scan_min_ms"), *kmax = key_find("daemon", "scan_max_ms");
        struct config_origin o;

        if (L->c.scan_min_ms <= L->c.scan_max_ms)
                return 0;
        o = L->key_origin[kmin - conf_keys];
        if (!o.path)
                o = L->key_origin[kmax - conf_keys];
        return errors_add(L->errs, "%s:%u: [daemon] scan_min_ms: %" PRIu64 " is above scan_max_ms %" PRIu64
                          " (accepted: scan_min_ms <= scan_max_ms)",
                          o.path ? o.path : "?", o.line, L->c.scan_min_ms, L->c.scan_max_ms);
}

/* The main file, then the drop-ins over it, then what needs every value: into *L,
 * with the files read in *files. Returns 0, -EINVAL (in the errors), or -errno. */
static int load_all(struct config_load *L, const char *path, const char *const *dirs, size_t n_dirs,
                    unsigned flags, struct config_files *files) {
        size_t n_errs_before = L->errs->n;
        int r;

        r = config_defaults_full(&L->c);
        if (r < 0)
                return r;
        r = config_load_file(L, AT_FDCWD, path, path, false);
        if (r == -ENOENT && (flags & CONFIG_MAIN_OPTIONAL))
                files->main_missing = true;
        else if (r < 0)
                return r == -ENOMEM ? r : log_debug_errno(r, "config: cannot read %s: %m", path);
        r = config_load_dirs(L, dirs, n_dirs, &files->n_dropins);
        if (r >= 0)
                r = rules_resolve(L);
        if (r >= 0 && L->errs->n == n_errs_before)
                r = config_cross_check(L);
        if (r < 0)
                return r;
        return L->errs->n > n_errs_before ? -EINVAL : 0;
}

int config_load_layers(const char *path, const char *const *dirs, size_t n_dirs, unsigned flags,
                       struct nb_config *cfg, struct config_errors *errs, struct config_files *ret_files) {
        _cleanup_(config_load_done) struct config_load L = { .errs = errs };
        struct config_files files = {};
        int r = load_all(&L, path, dirs, n_dirs, flags, &files);

        if (r < 0)
                return r;
        *cfg = L.c;
        L.c = (struct nb_config) {};
        files.notes = L.notes;
        L.notes = (struct config_errors) {};
        if (ret_files)
                *ret_files = files;
        else
                config_errors_done(&files.notes);
        return 0;
}

/* The drop-in directories of path: the default's layers, or PATH.d. */
static int dirs_of(const char *path, char **own, const char *dirs[CONFIG_LAYERS_MAX], size_t *ret_n) {
        static const char *const layers[] = CONFIG_DROPIN_LAYERS;

        if (strcmp(path, CONFIG_DEFAULT_PATH) == 0) {
                for (size_t i = 0; i < ELEMENTSOF(layers); i++)
                        dirs[i] = layers[i];
                *ret_n = ELEMENTSOF(layers);
                return 0;
        }
        if (asprintf(own, "%s.d", path) < 0)
                return -ENOMEM;
        dirs[0] = *own;
        *ret_n = 1;
        return 0;
}

int config_load(const char *path, unsigned flags, struct nb_config *cfg, struct config_errors *errs,
                struct config_files *ret_files) {
        _cleanup_free_ char *own = NULL;
        const char *dirs[CONFIG_LAYERS_MAX];
        size_t n;

        if (dirs_of(path, &own, dirs, &n) < 0)
                return -ENOMEM;
        return config_load_layers(path, dirs, n, flags, cfg, errs, ret_files);
}

void config_files_done(struct config_files *f) {
        if (f)
                config_errors_done(&f->notes);
}

/* One rule as --print-config shows it. */
static void print_rule(FILE *f, const struct cgroup_rule *r, const struct config_origin *o) {
        char v[8];

        fprintf(f, "%s = %s=%s  # %s:%u\n", config_rule_key(r), r->path, config_rule_value(r, v), o->path, o->line);
}

static void print_section(FILE *f, const struct config_load *L, const char *section) {
        fprintf(f, "[%s]\n", section);
        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++) {
                const struct conf_key *k = &conf_keys[i];
                const struct config_origin *o = &L->key_origin[i];

                if (strcmp(k->section, section) != 0 || key_is_list(k))
                        continue;
                if (o->path)
                        fprintf(f, "%s = %s  # %s:%u\n", k->key, L->key_value[i], o->path, o->line);
                else
                        fprintf(f, "%s = %s  # default\n", k->key, k->def);
        }
        if (strcmp(section, "select") == 0)
                for (size_t i = 0; i < L->c.n_cgroups; i++)
                        print_rule(f, &L->c.cgroups[i], &L->rule_origin[i]);
}

int config_print_layers(const char *path, const char *const *dirs, size_t n_dirs, unsigned flags, FILE *f,
                        struct config_errors *errs) {
        _cleanup_(config_load_done) struct config_load L = { .errs = errs };
        struct config_files files = {};
        int r = load_all(&L, path, dirs, n_dirs, flags, &files);

        if (r < 0)
                return r;
        fprintf(f, "# The effective configuration: %s%s and %zu drop-in file%s\n", path,
                files.main_missing ? " (missing: the defaults)" : "", files.n_dropins, files.n_dropins == 1 ? "" : "s");
        for (size_t i = 0; i < L.notes.n; i++)
                fprintf(f, "# %s\n", L.notes.msgs[i]);
        for (size_t i = 0; i < ELEMENTSOF(sections); i++) {
                if (i)
                        fputc('\n', f);
                print_section(f, &L, sections[i]);
        }
        return 0;
}

int config_print(const char *path, unsigned flags, FILE *f, struct config_errors *errs) {
        _cleanup_free_ char *own = NULL;
        const char *dirs[CONFIG_LAYERS_MAX];
        size_t n;

        if (dirs_of(path, &own, dirs, &n) < 0)
                return -ENOMEM;
        return config_print_layers(path, dirs, n, flags, f, errs);
}

/* ---- cgroup modes ----------------------------------------------------------- */

static const char *const cg_mode_names[] = {
        [CG_MODE_UNSET] = "unset", [CG_MODE_OFF] = "off", [CG_MODE_ADVISE] = "advise",
        [CG_MODE_BALANCE] = "balance", [CG_MODE_PLACE] = "place",
};

/* Exact lower-case words, as in the kernel's own control files: "Balance" is a typo
 * to report, not a value to guess at. One trailing newline is allowed because
 * "echo balance | ..." and "setfattr -v $(echo ...)" paths add one. The value is not
 * NUL-terminated (xattrs are not): embedded NULs simply fail to match. */
int config_cg_mode_parse(const char *s, size_t len, enum cg_mode *ret) {
        if (!s)
                return -EINVAL;
        if (len > 0 && s[len - 1] == '\n')
                len--;
        for (int m = CG_MODE_OFF; m <= CG_MODE_PLACE; m++)
                if (strlen(cg_mode_names[m]) == len && memcmp(cg_mode_names[m], s, len) == 0) {
                        *ret = (enum cg_mode) m;
                        return 0;
                }
        return -EINVAL;
}

const char *config_cg_mode_name(enum cg_mode m) {
        if ((unsigned) m >= ELEMENTSOF(cg_mode_names))
                return "?";
        return cg_mode_names[m];
}
