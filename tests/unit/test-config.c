/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The configuration parser, asserted on what an operator sees: the values that
 * apply, and the exact "FILE:LINE: [section] key: problem (accepted: ...)" lines;
 * the file read once; and config_copy() against the key table. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cgroup.h"
#include "config.h"
#include "log.h"
#include "parse.h"
#include "test.h"
#include "tmptree.h"

#ifndef CONF_FILE
#error "CONF_FILE (conf/numabalanced.conf) must be defined"
#endif

static char tmpdir[] = "/tmp/test-config-XXXXXX";   /* made by intro() */

/* text[0..len): it may hold NUL bytes. */
static char *write_conf_len(const char *name, const char *text, size_t len) {
        char *path;
        FILE *f;

        if (asprintf(&path, "%s/%s", tmpdir, name) < 0)
                abort();
        f = fopen(path, "w");
        if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
                perror(path);
                abort();
        }
        return path;
}

static char *write_conf(const char *name, const char *text) {
        return write_conf_len(name, text, strlen(text));
}

/* Loads text[0..len) and checks the exact error lines; expected[] have the path
 * replaced by "FILE" and end with NULL. */
static void check_errors_len(const char *name, const char *text, size_t len, const char *const *expected) {
        _cleanup_free_ char *path = write_conf_len(name, text, len);
        struct nb_config cfg = {};
        struct config_errors errs = {};
        size_t n = 0, plen = strlen(path);
        int r;

        r = config_load(path, 0, &cfg, &errs, NULL);
        CHECK_INT(r, -EINVAL);
        while (expected[n])
                n++;
        CHECK_INT(errs.n, n);
        for (size_t i = 0; i < errs.n && i < n; i++) {
                const char *m = errs.msgs[i];
                bool has_path = strncmp(m, path, plen) == 0;

                CHECK_MSG(has_path, "%s: error does not start with the path: %s", name, m);
                if (!has_path)
                        continue;
                CHECK_MSG(strncmp(expected[i], "FILE", 4) == 0 && strcmp(m + plen, expected[i] + 4) == 0,
                          "%s: got      \"FILE%s\"\n%s: expected \"%s\"", name, m + plen, name, expected[i]);
        }
        for (size_t i = n; i < errs.n; i++)
                fprintf(stderr, "%s: unexpected error: %s\n", name, errs.msgs[i]);
        config_errors_done(&errs);
        config_done(&cfg);
        unlink(path);
}

static void check_errors(const char *name, const char *text, const char *const *expected) {
        check_errors_len(name, text, strlen(text), expected);
}

#define ERRORS(name, text, ...) check_errors(name, text, (const char *const[]) { __VA_ARGS__, NULL })

TEST(defaults) {
        struct nb_config c;
        nb_cpumask empty = {};

        config_defaults(&c);
        CHECK(memcmp(&c.service_cpus, &empty, sizeof(empty)) == 0);
        CHECK_INT(c.tick_ms, 1000);
        CHECK_INT(c.scan_min_ms, 1000);
        CHECK_INT(c.scan_max_ms, 30000);
        CHECK_INT(c.log_level, LOG_LVL_INFO);
        CHECK_INT(c.kernel_numa_balancing, KNB_LEAVE);
        CHECK_STR(c.cgroup_root, "/sys/fs/cgroup");
        CHECK_INT(c.n_cgroups, 0);
        CHECK_INT(c.min_rss_kb, 16384);
        CHECK_INT(c.source, SOURCE_AUTO);
        CHECK_INT(c.pmu, PMU_MODE_AUTO);
        CHECK_INT(c.pmu_sample_rate, 1000);
        CHECK_INT(c.min_cpu_share_pct, 60);
        CHECK_INT(c.keep_node_share_pct, 20);
        CHECK_INT(c.cooldown_ms, 30000);
        CHECK_INT(c.free_floor_pct, 5);
        CHECK(c.move_shared);
        CHECK(!c.move_preferred);
        CHECK(!c.move_mlocked);
        CHECK_INT(c.min_misplaced_kb, 2048);
        CHECK(nodemask_empty(&c.slow_nodes));   /* the default rule */
        CHECK_INT(c.promote_free_floor_pct, 10);
        CHECK_INT(c.promote_rate_limit_mb_s, 256);
        CHECK_INT(c.rate_limit_mb_s, 1024);
        CHECK_INT(c.batch_pages, 65536);
        CHECK_INT(c.rate_limit_calls_s, 100);
        CHECK_STR(c.metrics_path, "");
        config_done(&c);
        config_done(&c);        /* twice: a done config is empty */
}

/* Every key, with values other than the defaults, in every accepted spelling. */
static const char full_conf[] =
        "; every key, with values other than the defaults\n"
        "[daemon]\n"
        "service_cpus = 0-1,8\n"
        "tick_ms = 500   # inline comments are allowed\n"
        "scan_min_ms = 500\n"
        "scan_max_ms=60000\n"
        "log_level = debug\n"
        "kernel_numa_balancing = disable\n"
        "\n"
        "[Select]\n"
        "cgroup_root = /tmp/cg\n"
        "cgroups = /db.slice=balance, /batch.slice=advise\t/db.slice/backup.service=off\n"
        "MIN_RSS = 1G\n"
        "[sample]\n"
        "source = proc\n"
        "pmu = page-faults\n"
        "pmu_sample_rate = 250\n"
        "[decide]\n"
        "min_cpu_share_pct = 75\n"
        "cooldown_ms = 0\n"
        "free_floor_pct = 10\n"
        "move_shared = yes\n"
        "move_preferred = On\n"
        "move_mlocked = yes\n"
        "min_misplaced = 1000\n"
        "slow_nodes = 2-3,5\n"
        "promote_free_floor_pct = 30\n"
        "[migrate]\n"
        "rate_limit_mb_s = 0\n"
        "batch_pages = 512\n"
        "rate_limit_calls_s = 0\n"
        "promote_rate_limit_mb_s = 0\n"
        "[report]\n"
        "metrics_path = \"/var/lib/node-exporter/numabalanced.prom\"\n"
        "metrics_group = prometheus\n";

TEST(every_key_set) {
        _cleanup_free_ char *path = write_conf("full.conf", full_conf);
        struct nb_config c = {};
        struct config_errors errs = {};
        nb_cpumask cpus = {};
        int r;

        r = config_load(path, 0, &c, &errs, NULL);
        CHECK_INT(r, 0);
        CHECK_INT(errs.n, 0);
        for (size_t i = 0; i < errs.n; i++)
                fprintf(stderr, "unexpected: %s\n", errs.msgs[i]);
        if (r < 0)
                return;
        cpumask_set(&cpus, 0);
        cpumask_set(&cpus, 1);
        cpumask_set(&cpus, 8);
        CHECK(memcmp(&c.service_cpus, &cpus, sizeof(cpus)) == 0);
        CHECK_INT(c.tick_ms, 500);
        CHECK_INT(c.scan_min_ms, 500);
        CHECK_INT(c.scan_max_ms, 60000);
        CHECK_INT(c.log_level, LOG_LVL_DEBUG);
        CHECK_INT(c.kernel_numa_balancing, KNB_DISABLE);
        CHECK_STR(c.cgroup_root, "/tmp/cg");
        CHECK_INT(c.n_cgroups, 3);
        if (c.n_cgroups == 3) {
                CHECK_STR(c.cgroups[0].path, "/db.slice");
                CHECK_INT(c.cgroups[0].mode, CG_MODE_BALANCE);
                CHECK_STR(c.cgroups[1].path, "/batch.slice");
                CHECK_INT(c.cgroups[1].mode, CG_MODE_ADVISE);
                CHECK_STR(c.cgroups[2].path, "/db.slice/backup.service");
                CHECK_INT(c.cgroups[2].mode, CG_MODE_OFF);
        }
        CHECK_INT(c.min_rss_kb, 1024 * 1024);
        CHECK_INT(c.source, SOURCE_PROC);
        CHECK_INT(c.pmu, PMU_MODE_PAGE_FAULTS);
        CHECK_INT(c.pmu_sample_rate, 250);
        CHECK_INT(c.min_cpu_share_pct, 75);
        CHECK_INT(c.cooldown_ms, 0);
        CHECK_INT(c.free_floor_pct, 10);
        CHECK(c.move_shared);
        CHECK(c.move_preferred);
        CHECK(c.move_mlocked);
        CHECK_INT(c.min_misplaced_kb, 1);       /* 1000 bytes: rounded up to 1 kB */
        {
                char nodes[NODEMASK_STRMAX];
                nodemask_format(&c.slow_nodes, nodes, sizeof(nodes));
                CHECK_STR(nodes, "2-3,5");
        }
        CHECK_INT(c.rate_limit_mb_s, 0);
        CHECK_INT(c.batch_pages, 512);
        CHECK_INT(c.rate_limit_calls_s, 0);
        CHECK_INT(c.promote_free_floor_pct, 30);
        CHECK_INT(c.promote_rate_limit_mb_s, 0);
        CHECK_STR(c.metrics_path, "/var/lib/node-exporter/numabalanced.prom");
        CHECK_STR(c.metrics_group, "prometheus");
        config_done(&c);
        unlink(path);
}

TEST(missing_file_enoent_and_no_message) {
        struct nb_config c = {};
        struct config_errors errs = {};
        CHECK_INT(config_load("/nonexistent/numabalanced.conf", 0, &c, &errs, NULL), -ENOENT);
        CHECK_INT(errs.n, 0);
}

TEST(errors_unknown_section_key_or_none) {
        ERRORS("unknown-section.conf",
               "[daemon]\ntick_ms = 1000\n\n[sampling]\nsource = proc\n",
               "FILE:4: [sampling]: unknown section (accepted: [daemon], [select], [sample], [decide], [migrate], [report])");
        ERRORS("unknown-key.conf",
               "[daemon]\n# comment\ntick = 1000\n",
               "FILE:3: [daemon] tick: unknown key (accepted: service_cpus, tick_ms, scan_min_ms, scan_max_ms, log_level, kernel_numa_balancing)");
        ERRORS("no-section.conf",
               "tick_ms = 1000\n[daemon]\n",
               "FILE:1: tick_ms: key outside of any section (accepted: a section header first: [daemon], [select], [sample], [decide], [migrate], [report])");
}

/* Numbers: not a number, negative, out of range, overflowing, with junk, empty. */
TEST(errors_numbers) {
        ERRORS("bad-number.conf",
               "[daemon]\ntick_ms = fast\n",
               "FILE:2: [daemon] tick_ms: \"fast\" is not a number (accepted: 100..60000)");
        ERRORS("negative.conf",
               "[decide]\ncooldown_ms = -1\n",
               "FILE:2: [decide] cooldown_ms: \"-1\" is not a number (accepted: 0..86400000)");
        ERRORS("range.conf",
               "[daemon]\ntick_ms = 50\n[decide]\nmin_cpu_share_pct = 101\nfree_floor_pct = 100\n",
               "FILE:2: [daemon] tick_ms: \"50\" is out of range (accepted: 100..60000)",
               "FILE:4: [decide] min_cpu_share_pct: \"101\" is out of range (accepted: 1..100)",
               "FILE:5: [decide] free_floor_pct: \"100\" is out of range (accepted: 0..99)");
        ERRORS("overflow.conf",
               "[migrate]\nbatch_pages = 99999999999999999999999\n",
               "FILE:2: [migrate] batch_pages: \"99999999999999999999999\" is out of range (accepted: 1..1048576)");
        ERRORS("junk.conf",
               "[daemon]\ntick_ms = 1000ms\n[select]\nmin_rss = 16MB\n",
               "FILE:2: [daemon] tick_ms: \"1000ms\" has junk after the number (accepted: 100..60000)",
               "FILE:4: [select] min_rss: \"16MB\" has junk after the number (or an unknown unit) "
               "(accepted: 0..1T bytes, with an optional K, M, G or T suffix)");
        ERRORS("empty-number.conf",
               "[daemon]\ntick_ms =\n",
               "FILE:2: [daemon] tick_ms: empty value (accepted: 100..60000)");
}

TEST(errors_booleans_and_enums) {
        ERRORS("bad-bool.conf",
               "[decide]\nmove_shared = yesterday\n",
               "FILE:2: [decide] move_shared: \"yesterday\" is not a boolean (accepted: yes, no, true, false, on, off, 1, 0)");
        ERRORS("bad-enum.conf",
               "[daemon]\nlog_level = Debug\nkernel_numa_balancing = off\n[sample]\nsource = perf\n",
               "FILE:2: [daemon] log_level: \"Debug\" is not a known value (accepted: err, warning, notice, info, debug)",
               "FILE:3: [daemon] kernel_numa_balancing: \"off\" is not a known value (accepted: leave, disable)",
               "FILE:5: [sample] source: \"perf\" is not a known value (accepted: auto, proc, bpf)");
}

TEST(errors_node_lists) {
        ERRORS("bad-nodes.conf",
               "[decide]\nslow_nodes = two\n",
               "FILE:2: [decide] slow_nodes: \"two\" is not a node list "
               "(accepted: a node list such as 2-3 with nodes below 1024, or empty for the default rule)");
        ERRORS("big-nodes.conf",
               "[decide]\nslow_nodes = 1024\n",
               "FILE:2: [decide] slow_nodes: \"1024\" names a node beyond the limit "
               "(accepted: a node list such as 2-3 with nodes below 1024, or empty for the default rule)");
}

TEST(errors_cpu_lists) {
        ERRORS("bad-cpus.conf",
               "[daemon]\nservice_cpus = 0-x\n",
               "FILE:2: [daemon] service_cpus: \"0-x\" is not a CPU list "
               "(accepted: a CPU list such as 0-1,8 with CPUs below 8192, or empty for the lowest-numbered online CPU)");
        /* The values of a duplicated key are not checked: the duplicate is the error. */
        ERRORS("dup-cpus.conf",
               "[daemon]\nservice_cpus = 3-1\n\nservice_cpus = 9000\n",
               "FILE:4: [daemon] service_cpus: duplicate key, already set on line 2 (accepted: one setting per key in a file)");
        ERRORS("reversed-cpus.conf",
               "[daemon]\nservice_cpus = 3-1\n",
               "FILE:2: [daemon] service_cpus: \"3-1\" is not a CPU list "
               "(accepted: a CPU list such as 0-1,8 with CPUs below 8192, or empty for the lowest-numbered online CPU)");
        ERRORS("big-cpus.conf",
               "[daemon]\nservice_cpus = 9000\n",
               "FILE:2: [daemon] service_cpus: \"9000\" names a CPU beyond the limit "
               "(accepted: a CPU list such as 0-1,8 with CPUs below 8192, or empty for the lowest-numbered online CPU)");
}

#define CG_ACCEPTED "(accepted: /PATH=place|balance|advise|off, separated by spaces or commas; PATH without . or .. components)"
TEST(errors_cgroup_rules) {
        ERRORS("cg-relative.conf",
               "[select]\ncgroups = /a=balance db.slice=balance\n",
               "FILE:2: [select] cgroups: \"db.slice=balance\": path must start with '/' " CG_ACCEPTED);
        ERRORS("cg-dotdot.conf",
               "[select]\ncgroups = /a/../b=balance\n",
               "FILE:2: [select] cgroups: \"/a/../b=balance\": path has a \".\" or \"..\" component " CG_ACCEPTED);
        ERRORS("cg-mode.conf",
               "[select]\ncgroups = /a=Balance\n",
               "FILE:2: [select] cgroups: \"/a=Balance\": unknown mode " CG_ACCEPTED);
        ERRORS("cg-nomode.conf",
               "[select]\ncgroups = /a\n",
               "FILE:2: [select] cgroups: \"/a\" has no '=MODE' " CG_ACCEPTED);
        ERRORS("cg-twice.conf",
               "[select]\ncgroups = /a=balance,/a=off\n",
               "FILE:2: [select] cgroups: \"/a=off\": the path is named twice " CG_ACCEPTED);
        ERRORS("cg-slash.conf",
               "[select]\ncgroups = /a//b=off /c/=off\n",
               "FILE:2: [select] cgroups: \"/a//b=off\": path has an empty component (\"//\" or a trailing '/') " CG_ACCEPTED);
}

TEST(errors_relative_paths) {
        ERRORS("path.conf",
               "[select]\ncgroup_root = sys/fs/cgroup\n[report]\nmetrics_path = metrics.prom\n",
               "FILE:2: [select] cgroup_root: \"sys/fs/cgroup\" is not an absolute path (accepted: an absolute path)",
               "FILE:4: [report] metrics_path: \"metrics.prom\" is not an absolute path (accepted: an absolute path, or empty for none)");
}

TEST(errors_metrics_group) {
        ERRORS("group.conf",
               "[report]\nmetrics_group = -x\n",
               "FILE:2: [report] metrics_group: \"-x\" is not a group name or number (accepted: a group name or "
               "number, or empty for the group the file is created with)");
        ERRORS("group2.conf",
               "[report]\nmetrics_group = a b\n",
               "FILE:2: [report] metrics_group: \"a b\" is not a group name or number (accepted: a group name or "
               "number, or empty for the group the file is created with)");
}

/* iniparser lower-cases keys: a duplicate in other case is still a duplicate. */
TEST(errors_duplicate_key_in_other_case) {
        ERRORS("duplicate.conf",
               "[decide]\ncooldown_ms = 100\n[daemon]\ntick_ms = 200\n[decide]\nCooldown_MS = 300\n",
               "FILE:6: [decide] cooldown_ms: duplicate key, already set on line 2 (accepted: one setting per key in a file)");
}

/* scan_min_ms <= scan_max_ms, with either of them left at its default. */
TEST(errors_scan_order) {
        ERRORS("scan-order.conf",
               "[daemon]\nscan_max_ms = 2000\nscan_min_ms = 5000\n",
               "FILE:3: [daemon] scan_min_ms: 5000 is above scan_max_ms 2000 (accepted: scan_min_ms <= scan_max_ms)");
        ERRORS("scan-order2.conf",
               "[daemon]\nscan_max_ms = 500\n",
               "FILE:2: [daemon] scan_min_ms: 1000 is above scan_max_ms 500 (accepted: scan_min_ms <= scan_max_ms)");
}

TEST(errors_syntax) {
        ERRORS("syntax.conf",
               "[daemon\ntick_ms 1000\n= 5\n",
               "FILE:1: syntax error (accepted: [section], key = value, or a comment starting with # or ;)",
               "FILE:2: syntax error (accepted: [section], key = value, or a comment starting with # or ;)",
               "FILE:3: syntax error: no key before '=' (accepted: key = value)");
}

/* A continued line counts from its first line; the next entry keeps its own number. */
TEST(errors_line_numbers_of_continued_lines) {
        ERRORS("continued.conf",
               "[select]\ncgroups = /a=balance \\\n   /b=bogus\nmin_rss = 1X\n",
               "FILE:2: [select] cgroups: \"/b=bogus\": unknown mode " CG_ACCEPTED,
               "FILE:4: [select] min_rss: \"1X\" has junk after the number (or an unknown unit) "
               "(accepted: 0..1T bytes, with an optional K, M, G or T suffix)");
}

/* All errors are reported, not just the first. */
TEST(errors_all_reported) {
        ERRORS("many.conf",
               "[daemon]\ntick_ms = 0\nbogus = 1\n[nope]\nx = 1\n[decide]\nmove_shared = maybe\n",
               "FILE:2: [daemon] tick_ms: \"0\" is out of range (accepted: 100..60000)",
               "FILE:3: [daemon] bogus: unknown key (accepted: service_cpus, tick_ms, scan_min_ms, scan_max_ms, log_level, kernel_numa_balancing)",
               "FILE:4: [nope]: unknown section (accepted: [daemon], [select], [sample], [decide], [migrate], [report])",
               "FILE:7: [decide] move_shared: \"maybe\" is not a boolean (accepted: yes, no, true, false, on, off, 1, 0)");
}

/* An earlier value keeps its place: a failed load leaves *cfg as it was. */
TEST(failed_load_leaves_config_untouched) {
        _cleanup_free_ char *path = write_conf("untouched.conf", "[daemon]\ntick_ms = 1\n");
        struct nb_config c;
        struct config_errors errs = {};

        config_defaults(&c);
        c.tick_ms = 4242;
        CHECK_INT(config_load(path, 0, &c, &errs, NULL), -EINVAL);
        CHECK_INT(c.tick_ms, 4242);
        CHECK_STR(c.cgroup_root, "/sys/fs/cgroup");
        config_errors_done(&errs);
        CHECK_INT(errs.n, 0);
        config_done(&c);
        unlink(path);
}

/* The cgroup mode as an xattr holds it: one trailing newline allowed. */
TEST(cg_mode_parse_valid) {
        enum cg_mode m = CG_MODE_UNSET;

        CHECK_INT(config_cg_mode_parse("balance", 7, &m), 0);
        CHECK_INT(m, CG_MODE_BALANCE);
        CHECK_INT(config_cg_mode_parse("advise\n", 7, &m), 0);
        CHECK_INT(m, CG_MODE_ADVISE);
        CHECK_INT(config_cg_mode_parse("off", 3, &m), 0);
        CHECK_INT(m, CG_MODE_OFF);
        CHECK_INT(config_cg_mode_parse("place", 5, &m), 0);
        CHECK_INT(m, CG_MODE_PLACE);
        CHECK(cg_mode_moves(CG_MODE_PLACE) && cg_mode_moves(CG_MODE_BALANCE));
        CHECK(!cg_mode_moves(CG_MODE_ADVISE) && !cg_mode_moves(CG_MODE_OFF));
}

/* Anything else is -EINVAL and leaves the output alone. */
TEST(cg_mode_parse_invalid_untouched) {
        enum cg_mode m = CG_MODE_UNSET;
        char huge[4096];

        CHECK_INT(config_cg_mode_parse("", 0, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("\n", 1, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("off\n\n", 5, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("Balance", 7, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("OFF", 3, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse(" off", 4, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("off ", 4, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("of", 2, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("off\0x", 5, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("balance", 3, &m), -EINVAL);    /* "bal": the length counts */
        CHECK_INT(config_cg_mode_parse("\xff\xfe", 2, &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse("unset", 5, &m), -EINVAL);
        memset(huge, 'a', sizeof(huge));
        memcpy(huge, "balance", 7);
        CHECK_INT(config_cg_mode_parse(huge, sizeof(huge), &m), -EINVAL);
        CHECK_INT(config_cg_mode_parse(NULL, 0, &m), -EINVAL);
        CHECK_INT(m, CG_MODE_UNSET);
}

TEST(cg_mode_names) {
        CHECK_STR(config_cg_mode_name(CG_MODE_BALANCE), "balance");
        CHECK_STR(config_cg_mode_name(CG_MODE_ADVISE), "advise");
        CHECK_STR(config_cg_mode_name(CG_MODE_OFF), "off");
        CHECK_STR(config_cg_mode_name((enum cg_mode) 42), "?");
}

static char *shipped_text(size_t *ret_len) {
        char *text = NULL;
        int r = parse_read_file_at(AT_FDCWD, CONF_FILE, 1 << 20, &text, ret_len);

        CHECK_INT(r, 0);
        return r < 0 ? NULL : text;
}

/* The shipped file documents every key, in its own section, as "#key = DEFAULT". */
TEST(shipped_conf_lists_every_key) {
        _cleanup_free_ char *text = shipped_text(NULL);
        const char *const *keys = config_keys();
        size_t n_keys = 0;

        if (!text)
                return;
        for (; keys[n_keys]; n_keys++) {
                const char *k = keys[n_keys], *dot = strchr(k, '.');
                char header[64], setting[80];
                const char *sec, *next, *at;

                CHECK(dot != NULL);
                if (!dot)
                        continue;
                snprintf(header, sizeof(header), "\n[%.*s]\n", (int) (dot - k), k);
                snprintf(setting, sizeof(setting), "\n#%s =", dot + 1);
                sec = strstr(text, header);
                next = sec ? strstr(sec + 1, "\n[") : NULL;
                at = sec ? strstr(sec, setting) : NULL;
                CHECK_MSG(sec && at && !(next && at > next), "%s: \"#%s = DEFAULT\" not found in section %s",
                          CONF_FILE, dot + 1, header + 1);
        }
        CHECK_INT(n_keys, 39);
}

/* The text with its "#key = value" lines (no space after '#') uncommented; "# text"
 * is prose and stays. */
static char *uncomment(const char *text, size_t len) {
        char *out = malloc(len + 1);
        size_t o = 0;

        if (!out)
                abort();
        for (const char *p = text; *p;) {
                if (p[0] == '#' && p[1] >= 'a' && p[1] <= 'z')
                        p++;
                while (*p && *p != '\n')
                        out[o++] = *p++;
                if (*p)
                        out[o++] = *p++;
        }
        out[o] = 0;
        return out;
}

/* With the "#key = value" lines uncommented it loads, and gives exactly the defaults. */
TEST(shipped_conf_uncommented_gives_the_defaults) {
        _cleanup_free_ char *text = NULL, *uncommented = NULL, *path = NULL;
        struct nb_config c = {}, d;
        struct config_errors errs = {};
        size_t len;
        int r;

        text = shipped_text(&len);
        if (!text)
                return;
        uncommented = uncomment(text, len);
        path = write_conf("uncommented.conf", uncommented);
        r = config_load(path, 0, &c, &errs, NULL);
        CHECK_INT(r, 0);
        for (size_t i = 0; i < errs.n; i++)
                fprintf(stderr, "shipped config, uncommented: %s\n", errs.msgs[i]);
        config_errors_done(&errs);
        unlink(path);
        if (r < 0)
                return;

        config_defaults(&d);
        CHECK(memcmp(&c.service_cpus, &d.service_cpus, sizeof(d.service_cpus)) == 0);
        CHECK_INT(c.tick_ms, d.tick_ms);
        CHECK_INT(c.scan_min_ms, d.scan_min_ms);
        CHECK_INT(c.scan_max_ms, d.scan_max_ms);
        CHECK_INT(c.log_level, d.log_level);
        CHECK_INT(c.kernel_numa_balancing, d.kernel_numa_balancing);
        CHECK_STR(c.cgroup_root, d.cgroup_root);
        CHECK_INT(c.n_cgroups, d.n_cgroups);
        CHECK_INT(c.min_rss_kb, d.min_rss_kb);
        CHECK_INT(c.source, d.source);
        CHECK_INT(c.pmu, d.pmu);
        CHECK_INT(c.pmu_sample_rate, d.pmu_sample_rate);
        CHECK_INT(c.min_cpu_share_pct, d.min_cpu_share_pct);
        CHECK_INT(c.cooldown_ms, d.cooldown_ms);
        CHECK_INT(c.free_floor_pct, d.free_floor_pct);
        CHECK_INT(c.move_shared, d.move_shared);
        CHECK_INT(c.move_preferred, d.move_preferred);
        CHECK_INT(c.move_mlocked, d.move_mlocked);
        CHECK_INT(c.min_misplaced_kb, d.min_misplaced_kb);
        CHECK_INT(c.rate_limit_mb_s, d.rate_limit_mb_s);
        CHECK_INT(c.batch_pages, d.batch_pages);
        CHECK_INT(c.rate_limit_calls_s, d.rate_limit_calls_s);
        CHECK_STR(c.metrics_path, d.metrics_path);
        CHECK_STR(c.metrics_group, d.metrics_group);
        config_done(&c);
        config_done(&d);
}

/* And the shipped file as it is, all commented out, is valid (its text, copied: the
 * source tree may belong to another user than the one running the test). */
TEST(shipped_conf_loads_as_is) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        struct nb_config c = {};
        struct config_errors errs = {};

        CHECK_INT(parse_read_file_at(AT_FDCWD, CONF_FILE, 1 << 20, &text, NULL), 0);
        if (!text)
                return;
        path = write_conf("shipped.conf", text);
        CHECK_INT(config_load(path, 0, &c, &errs, NULL), 0);
        CHECK_INT(errs.n, 0);
        config_done(&c);
        unlink(path);
}

/* ---- the values as iniparser reads them ------------------------------------- */

/* The value spellings of iniparser 4.1's format, as its iniparser_load() stores
 * them (each checked against it when this table was written): config_load() reads
 * the file alone now, and a file must keep meaning what it meant. */
TEST(values_as_iniparser_reads_them) {
        static const struct {
                const char *written, *value;
        } cases[] = {
                { "/a/b", "/a/b" },
                { "   /a/b   ", "/a/b" },
                { "/x\ttab", "/x\ttab" },
                { "\"/a b\"", "/a b" },                  /* quoted: blanks kept */
                { "\"/x\ttab \"", "/x\ttab " },
                { "\"/a b\" trailing", "/a b" },         /* after the closing quote: ignored */
                { "\"/a\"b\"", "/a" },
                { "\"/a", "/a" },                        /* no closing quote */
                { "'/a;b#c'", "/a;b#c" },                /* quoted: no comment in it */
                { "\"/x ; y\"", "/x ; y" },
                { "'/x \"y\"'", "/x \"y\"" },
                { "/a ; comment", "/a" },
                { "/a#b", "/a" },
                { "/a = b", "/a = b" },                  /* the key ends at the first '=' */
                { "/a \"b\"", "/a \"b\"" },              /* quotes inside: kept */
                { "/a\\\n   /b", "/a   /b" },            /* continued: the next line as it is */
                { "\"\"", "" },
                { "''", "" },
                { " ; only a comment", "" },
                { "#x", "" },
                { "", "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *text = NULL, *path = NULL;
                struct nb_config c = {};
                struct config_errors errs = {};
                int r;

                if (asprintf(&text, "[report]\nmetrics_path = %s\n", cases[i].written) < 0)
                        abort();
                path = write_conf("value.conf", text);
                r = config_load(path, 0, &c, &errs, NULL);
                CHECK_MSG(r == 0, "metrics_path = %s: %d %s", cases[i].written, r, errs.n ? errs.msgs[0] : "");
                if (r == 0)
                        CHECK_MSG(strcmp(c.metrics_path, cases[i].value) == 0,
                                  "metrics_path = %s: got \"%s\", expected \"%s\"", cases[i].written,
                                  c.metrics_path, cases[i].value);
                config_errors_done(&errs);
                config_done(&c);
                unlink(path);
        }
        /* The blanks in quotes are the value's own. */
        ERRORS("quoted-blank.conf", "[report]\nmetrics_path = \" /lead\"\n",
               "FILE:2: [report] metrics_path: \" /lead\" is not an absolute path (accepted: an absolute path, or empty for none)");
}

/* A line iniparser would reject hides no other error: the values are checked too. */
TEST(errors_values_beside_syntax_errors) {
        ERRORS("syntax-and-values.conf",
               "[daemon]\ntick_ms 1000\nscan_max_ms = soon\n",
               "FILE:2: syntax error (accepted: [section], key = value, or a comment starting with # or ;)",
               "FILE:3: [daemon] scan_max_ms: \"soon\" is not a number (accepted: 100..86400000)");
}

/* A key on a last line ending in '\': its value would go on past the end of the file
 * (iniparser drops such a line). */
TEST(errors_continued_past_the_end) {
        ERRORS("continued-eof.conf",
               "[select]\ncgroup_root = /x \\\n",
               "FILE:2: [select] cgroup_root: the last line ends in '\\', continuing the value past the end of the "
               "file (accepted: a '\\' at the end of a line only before another line)");
        ERRORS("continued-eof2.conf",
               "[select]\nmin_rss = 1X\ncgroup_root = /x \\",
               "FILE:2: [select] min_rss: \"1X\" has junk after the number (or an unknown unit) "
               "(accepted: 0..1T bytes, with an optional K, M, G or T suffix)",
               "FILE:3: [select] cgroup_root: the last line ends in '\\', continuing the value past the end of the "
               "file (accepted: a '\\' at the end of a line only before another line)");
}

/* Every error is on its line, counted in the same one pass that reads the values:
 * across CRLF line ends, blank lines, a continued comment that swallows a key, a
 * continued value, a NUL byte, a line too long, and thousands of lines down. */
TEST(errors_line_numbers) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0, cap = 1 << 20;

        text = malloc(cap);
        if (!text)
                abort();
#define ADD(s) do { memcpy(text + len, s, sizeof(s) - 1); len += sizeof(s) - 1; } while (0)
        ADD("; header\r\n");                            /* 1 */
        ADD("[daemon]\r\n");                            /* 2 */
        ADD("tick_ms = fast\r\n");                      /* 3 */
        ADD("\r\n");                                    /* 4 */
        ADD("# a comment, continued \\\n");             /* 5 */
        ADD("tick_ms = 5\n");                           /* 6: in the comment */
        ADD("scan_min_ms = \\\n");                      /* 7 */
        ADD("   x\n");                                  /* 8 */
        ADD("bad\0line = 1\n");                         /* 9 */
        ADD("log_level = ");                            /* 10 */
        memset(text + len, 'a', 1100);
        len += 1100;
        ADD("\n");
        for (int i = 11; i <= 5010; i++)
                ADD("# filler\n");
        ADD("[select]\n");                              /* 5011 */
        ADD("\n");                                      /* 5012 */
        ADD("min_rss = 1X\n");                          /* 5013 */
        ADD("cgroup_root = /x \\");                     /* 5014, the last */
#undef ADD
        check_errors_len("line-numbers.conf", text, len, (const char *const[]) {
                "FILE:3: [daemon] tick_ms: \"fast\" is not a number (accepted: 100..60000)",
                "FILE:7: [daemon] scan_min_ms: \"x\" is not a number (accepted: 100..86400000)",
                "FILE:9: a NUL byte (accepted: text)",
                "FILE:10: line too long (accepted: at most 1000 characters)",
                "FILE:5013: [select] min_rss: \"1X\" has junk after the number (or an unknown unit) "
                "(accepted: 0..1T bytes, with an optional K, M, G or T suffix)",
                "FILE:5014: [select] cgroup_root: the last line ends in '\\', continuing the value past the end of the "
                "file (accepted: a '\\' at the end of a line only before another line)",
                NULL });
}

/* ---- the file read once ------------------------------------------------------ */

static const char *fifo_path;

static void fifo_opened_twice(int sig) {
        static const char msg[] = "config_load() blocked in a second open of the FIFO: the file is read twice\n";

        (void) sig;
        unlink(fifo_path);
        rmdir(tmpdir);
        if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
                _exit(2);
        _exit(1);
}

struct fifo_writer {
        const char *path, *text;
        bool written;
};

static void *fifo_write(void *arg) {
        struct fifo_writer *w = arg;
        int fd = open(w->path, O_WRONLY | O_CLOEXEC);        /* once config_load() opens it */
        size_t len = strlen(w->text);

        if (fd < 0)
                return NULL;
        w->written = write(fd, w->text, len) == (ssize_t) len;
        close(fd);
        return NULL;
}

/* config_load() opens and reads the file once: a FIFO written once gives its text to
 * the first open only; a second open (the file read again, by iniparser_load() as it
 * used to be) would wait for a writer that never comes, and the alarm fails the test. */
TEST(file_read_once) {
        _cleanup_free_ char *path = NULL;
        struct fifo_writer w = { .text = "[daemon]\ntick_ms = 500\n[report]\nmetrics_path = /from/the/fifo\n" };
        struct sigaction sa = { .sa_handler = fifo_opened_twice }, old;
        struct nb_config c = {};
        struct config_errors errs = {};
        pthread_t t;
        int r, fd;

        if (asprintf(&path, "%s/fifo.conf", tmpdir) < 0)
                abort();
        CHECK_INT(mkfifo(path, 0600), 0);
        w.path = fifo_path = path;
        CHECK_INT(pthread_create(&t, NULL, fifo_write, &w), 0);
        CHECK_INT(sigaction(SIGALRM, &sa, &old), 0);
        alarm(10);
        r = config_load(path, 0, &c, &errs, NULL);
        alarm(0);
        sigaction(SIGALRM, &old, NULL);
        /* A writer still waiting (config_load() never opened the FIFO) is let go. */
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        pthread_join(t, NULL);
        if (fd >= 0)
                close(fd);

        CHECK(w.written);
        CHECK_INT(r, 0);
        CHECK_INT(errs.n, 0);
        if (r == 0) {
                CHECK_INT(c.tick_ms, 500);
                CHECK_STR(c.metrics_path, "/from/the/fifo");
        }
        config_errors_done(&errs);
        config_done(&c);
        unlink(path);
}

/* ---- the .d directory ---------------------------------------------------------- */

/* A tree tmpdir/name/ with numabalanced.conf (if main_text) and numabalanced.conf.d/
 * (if dir); returns the main file's path. */
static char *tree(const char *name, const char *main_text, bool dir) {
        char *base, *main_path;

        if (asprintf(&base, "%s/%s", tmpdir, name) < 0 || mkdir(base, 0755) < 0 ||
            asprintf(&main_path, "%s/numabalanced.conf", base) < 0)
                abort();
        free(base);
        if (main_text) {
                FILE *f = fopen(main_path, "w");
                if (!f || fputs(main_text, f) < 0 || fclose(f) != 0)
                        abort();
        }
        if (dir) {
                char *d;
                if (asprintf(&d, "%s.d", main_path) < 0 || mkdir(d, 0755) < 0)
                        abort();
                free(d);
        }
        return main_path;
}

/* dir/name, written with text. */
static void write_file_at(const char *dir, const char *name, const char *text) {
        char *path;
        FILE *f;

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                abort();
        f = fopen(path, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                abort();
        free(path);
}

/* main_path.d/name, written with text. */
static char *dropin(const char *main_path, const char *name, const char *text) {
        char *path;
        FILE *f;

        if (asprintf(&path, "%s.d/%s", main_path, name) < 0)
                abort();
        f = fopen(path, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                abort();
        return path;
}

/* Removes the tree of main_path (its directory) and frees main_path. */
static void tree_done(char *main_path) {
        char *slash = strrchr(main_path, '/');
        *slash = 0;
        tmptree_remove(main_path);
        free(main_path);
}

/* Loads main_path and checks the exact errors, with "FILE" standing for main_path
 * (and "FILE.d/x.conf" for a file of its directory). */
static void check_tree_errors(const char *main_path, const char *const *expected) {
        struct nb_config cfg = {};
        struct config_errors errs = {};
        size_t n = 0, plen = strlen(main_path);

        CHECK_INT(config_load(main_path, 0, &cfg, &errs, NULL), -EINVAL);
        while (expected[n])
                n++;
        CHECK_INT(errs.n, n);
        for (size_t i = 0; i < errs.n && i < n; i++) {
                _cleanup_free_ char *want = NULL;
                const char *e = expected[i], *at;
                size_t len = 0;

                /* Every "FILE" of the expected line is main_path. */
                want = calloc(1, strlen(e) * (plen + 1) + 1);
                if (!want)
                        abort();
                while ((at = strstr(e, "FILE"))) {
                        memcpy(want + len, e, (size_t) (at - e));
                        len += (size_t) (at - e);
                        memcpy(want + len, main_path, plen);
                        len += plen;
                        e = at + 4;
                }
                strcpy(want + len, e);
                CHECK_MSG(strcmp(errs.msgs[i], want) == 0, "got      \"%s\"\nexpected \"%s\"", errs.msgs[i], want);
        }
        for (size_t i = n; i < errs.n; i++)
                fprintf(stderr, "unexpected error: %s\n", errs.msgs[i]);
        config_errors_done(&errs);
}

#define TREE_ERRORS(main_path, ...) check_tree_errors(main_path, (const char *const[]) { __VA_ARGS__, NULL })

/* The files of FILE.d are read after FILE, in bytewise order: a later file's value
 * wins; the cgroups of every line of every file are put together, in that order.
 * Hidden files, other names and what is not a regular file are not read (each of
 * those here would be an error if it were). */
TEST(dropins_in_order_and_cgroups_together) {
        char *m = tree("order", "[daemon]\ntick_ms = 500\n[select]\ncgroups = /a.slice=balance\n"
                                "[report]\nmetrics_path = /main.prom\n", true);
        struct config_files files = {};
        struct nb_config c = {};
        struct config_errors errs = {};
        char *p, *sub;
        int r;

        free(dropin(m, "10-db.conf", "[daemon]\ntick_ms = 700\n[select]\ncgroups = /db.slice=balance\n"));
        free(dropin(m, "05-early.conf", "[daemon]\ntick_ms = 600\n[report]\nmetrics_path = /early.prom\n"));
        free(dropin(m, "20-batch.conf", "[select]\ncgroups = /batch.slice=advise\n; a second line\n"
                                        "cgroups = /batch.slice/one.service=off, /batch2.slice=balance\n"));
        free(dropin(m, ".hidden.conf", "[nope]\n"));
        free(dropin(m, "30-x.conf~", "[nope]\n"));
        free(dropin(m, "30-x.conf.dpkg-old", "[nope]\n"));
        free(dropin(m, "README", "[nope]\n"));
        if (asprintf(&sub, "%s.d/40-dir.conf", m) < 0 || mkdir(sub, 0755) < 0)
                abort();
        free(sub);
        if (asprintf(&p, "%s.d/50-fifo.conf", m) < 0 || mkfifo(p, 0600) < 0)
                abort();
        free(p);
        if (asprintf(&p, "%s.d/60-masked.conf", m) < 0 || symlink("/dev/null", p) < 0)
                abort();
        free(p);
        if (asprintf(&p, "%s.d/70-dangling.conf", m) < 0 || symlink("/nonexistent/x.conf", p) < 0)
                abort();
        free(p);

        r = config_load(m, 0, &c, &errs, &files);
        CHECK_INT(r, 0);
        for (size_t i = 0; i < errs.n; i++)
                fprintf(stderr, "unexpected: %s\n", errs.msgs[i]);
        if (r == 0) {
                CHECK(!files.main_missing);
                CHECK_INT(files.n_dropins, 3);
                CHECK_INT(c.tick_ms, 700);
                CHECK_STR(c.metrics_path, "/early.prom");
                CHECK_INT(c.n_cgroups, 5);
                if (c.n_cgroups == 5) {
                        CHECK_STR(c.cgroups[0].path, "/a.slice");
                        CHECK_STR(c.cgroups[1].path, "/db.slice");
                        CHECK_STR(c.cgroups[2].path, "/batch.slice");
                        CHECK_INT(c.cgroups[2].mode, CG_MODE_ADVISE);
                        CHECK_STR(c.cgroups[3].path, "/batch.slice/one.service");
                        CHECK_INT(c.cgroups[3].mode, CG_MODE_OFF);
                        CHECK_STR(c.cgroups[4].path, "/batch2.slice");
                }
        }
        config_errors_done(&errs);
        config_done(&c);
        tree_done(m);
}

/* A fleet's worth of units: 3,000 cgroups, one line each in one file and one file
 * each for 200 more; iniparser's line length limits none of them. */
TEST(dropins_many_cgroups) {
        char *m = tree("many", "", true);
        size_t cap = 3000 * 48 + 64, len = 0;
        _cleanup_free_ char *text = malloc(cap);
        struct nb_config c = {};
        struct config_errors errs = {};
        int r;

        if (!text)
                abort();
        len += (size_t) snprintf(text, cap, "[select]\n");
        for (int i = 0; i < 3000; i++)
                len += (size_t) snprintf(text + len, cap - len, "cgroups = /machine.slice/vm-%04d.scope=balance\n", i);
        free(dropin(m, "50-vms.conf", text));
        for (int i = 0; i < 200; i++) {
                char name[32], body[96];
                snprintf(name, sizeof(name), "60-db%03d.conf", i);
                snprintf(body, sizeof(body), "[select]\ncgroups = /db.slice/db%03d.service=balance\n", i);
                free(dropin(m, name, body));
        }
        r = config_load(m, 0, &c, &errs, NULL);
        CHECK_INT(r, 0);
        CHECK_INT(errs.n, 0);
        CHECK_INT(c.n_cgroups, 3200);
        if (c.n_cgroups == 3200) {
                CHECK_STR(c.cgroups[2999].path, "/machine.slice/vm-2999.scope");
                CHECK_STR(c.cgroups[3199].path, "/db.slice/db199.service");
        }
        config_errors_done(&errs);
        config_done(&c);
        tree_done(m);
}

/* A file of the directory is refused as the main file is, at its own FILE:LINE; a
 * cgroup named in two files is an error naming both; the cross-key rule is reported
 * where the value that breaks it was set. */
TEST(dropins_errors_at_their_line) {
        char *m = tree("errors", "[select]\ncgroups = /a.slice=balance\n[daemon]\nscan_max_ms = 2000\n", true);

        free(dropin(m, "10-bad.conf", "# bad\n[daemon]\ntick_ms = fast\n[select]\ncgroups = /b=balance /a.slice=off\n"));
        free(dropin(m, "20-unknown.conf", "[select]\ncgroup = /c=balance\n"));
        free(dropin(m, "30-third.conf", "[select]\ncgroups = /b=off\ncgroups = /b=advise /a.slice=advise\n"));
        /* A path named again in a later file replaces the earlier rule (a note, not an
         * error: later_file_replaces_a_rule); named twice in one file, which was meant
         * is the question. Found once every file is read: after the other errors. */
        TREE_ERRORS(m,
                    "FILE.d/10-bad.conf:3: [daemon] tick_ms: \"fast\" is not a number (accepted: 100..60000)",
                    "FILE.d/20-unknown.conf:2: [select] cgroup: unknown key (accepted: cgroup_root, cgroups, units, fast_shares, min_rss)",
                    "FILE.d/30-third.conf:3: [select] cgroups: \"/b=advise\": the path is already named at "
                    "FILE.d/30-third.conf:2 (accepted: one rule per cgroup in a file; a later file replaces it)");
        tree_done(m);

        m = tree("cross", "[daemon]\nscan_max_ms = 2000\n", true);
        free(dropin(m, "10-scan.conf", "\n[daemon]\nscan_min_ms = 5000\n"));
        TREE_ERRORS(m, "FILE.d/10-scan.conf:3: [daemon] scan_min_ms: 5000 is above scan_max_ms 2000 "
                       "(accepted: scan_min_ms <= scan_max_ms)");
        tree_done(m);

        /* A key may be set once in a file, but again in a later one. */
        m = tree("dup", "[daemon]\ntick_ms = 500\n", true);
        free(dropin(m, "10-dup.conf", "[daemon]\ntick_ms = 600\ntick_ms = 700\n"));
        TREE_ERRORS(m, "FILE.d/10-dup.conf:3: [daemon] tick_ms: duplicate key, already set on line 2 "
                       "(accepted: one setting per key in a file)");
        tree_done(m);
}

/* A later file's rule on a path (or name) replaces an earlier file's, as systemd's
 * and sysctl's drop-ins do: an emergency 99-off.conf turns a cgroup off and the load
 * succeeds, saying what it replaced. */
TEST(later_file_replaces_a_rule) {
        char *m = tree("later", "[select]\ncgroups = /db.slice=balance /web.slice=advise\nunits = pg@*.service=balance\n", true);
        struct nb_config c = {};
        struct config_errors errs = {};
        struct config_files files = {};

        free(dropin(m, "99-off.conf", "[select]\ncgroups = /db.slice=off\nunits = pg@*.service=off\n"));
        CHECK_INT(config_load(m, 0, &c, &errs, &files), 0);
        CHECK_INT(errs.n, 0);
        CHECK_INT(c.n_cgroups, 3);
        if (c.n_cgroups == 3) {
                /* In the order read, the replaced ones gone. */
                CHECK_STR(c.cgroups[0].path, "/web.slice");
                CHECK_STR(c.cgroups[1].path, "/db.slice");
                CHECK_INT(c.cgroups[1].mode, CG_MODE_OFF);
                CHECK(!c.cgroups[1].by_name);
                CHECK_STR(c.cgroups[2].path, "pg@*.service");
                CHECK_INT(c.cgroups[2].mode, CG_MODE_OFF);
                CHECK(c.cgroups[2].by_name);
        }
        CHECK_INT(files.notes.n, 2);
        if (files.notes.n == 2) {
                CHECK(strstr(files.notes.msgs[0], "99-off.conf:2: [select] cgroups: \"/db.slice=off\" replaces "
                                                  "\"/db.slice=balance\" of ") != NULL);
                CHECK(strstr(files.notes.msgs[1], "99-off.conf:3: [select] units: \"pg@*.service=off\" replaces "
                                                  "\"pg@*.service=balance\" of ") != NULL);
        }
        config_files_done(&files);
        config_done(&c);
        tree_done(m);
}

/* units: a directory's own name or a glob of it; never a path. */
TEST(units_rules_are_names) {
        char *m = tree("units", "[select]\nunits = postgresql@*.service=balance kubepods-pod*.slice=place\n", false);
        struct nb_config c = {};
        struct config_errors errs = {};

        CHECK_INT(config_load(m, 0, &c, &errs, NULL), 0);
        CHECK_INT(c.n_cgroups, 2);
        if (c.n_cgroups == 2) {
                CHECK_STR(c.cgroups[0].path, "postgresql@*.service");
                CHECK(c.cgroups[0].by_name);
                CHECK_INT(c.cgroups[1].mode, CG_MODE_PLACE);
        }
        config_done(&c);
        tree_done(m);
        m = tree("units-bad", "[select]\nunits = /system.slice/x.service=balance\n", false);
        TREE_ERRORS(m, "FILE:2: [select] units: \"/system.slice/x.service=balance\": name has a '/' (accepted: a "
                       "directory's own name; a path goes in cgroups) (accepted: NAME=place|balance|advise|off, "
                       "separated by spaces or commas; NAME a cgroup directory's own name or a glob of it "
                       "(postgresql@*.service), without '/')");
        tree_done(m);
        m = tree("units-twice", "[select]\nunits = a.service=balance\nunits = a.service=off\n", false);
        TREE_ERRORS(m, "FILE:3: [select] units: \"a.service=off\": the name is already named at FILE:2 (accepted: "
                       "one rule per name in a file; a later file replaces it)");
        tree_done(m);
}

/* fast_shares: PATH=N% rules in the same array, beside a mode rule on the same path
 * (never taken for one); bad values said; a later file replaces a share. */
TEST(fast_shares_rules) {
        char *m = tree("shares", "[select]\ncgroups = /db.slice=balance\nfast_shares = /db.slice=40% /b=0%,/c=100%\n",
                       true);
        struct nb_config c = {};
        struct config_errors errs = {};
        char v[8];

        CHECK_INT(config_load(m, 0, &c, &errs, NULL), 0);
        CHECK_INT(c.n_cgroups, 4);
        if (c.n_cgroups == 4) {
                CHECK(!c.cgroups[0].share && c.cgroups[0].mode == CG_MODE_BALANCE);
                CHECK(c.cgroups[1].share && c.cgroups[1].share_pct == 40 && c.cgroups[1].mode == CG_MODE_UNSET);
                CHECK_STR(c.cgroups[1].path, "/db.slice");
                CHECK_STR(config_rule_key(&c.cgroups[1]), "fast_shares");
                CHECK_STR(config_rule_value(&c.cgroups[1], v), "40%");
                CHECK(c.cgroups[2].share_pct == 0 && c.cgroups[3].share_pct == 100);
                CHECK_INT(cgroup_config_rule(c.cgroups, c.n_cgroups, "/db.slice"), 0);
                CHECK_INT(cgroup_config_rule(c.cgroups, c.n_cgroups, "/b"), -1);
                CHECK_INT(cgroup_config_share(c.cgroups, c.n_cgroups, "/db.slice"), 1);
                CHECK_INT(cgroup_config_share(c.cgroups, c.n_cgroups, "/nope"), -1);
        }
        free(dropin(m, "99-x.conf", "[select]\nfast_shares = /db.slice=10%\n"));
        config_done(&c);
        c = (struct nb_config) {};
        CHECK_INT(config_load(m, 0, &c, &errs, NULL), 0);
        for (size_t i = 0; i < c.n_cgroups; i++)
                if (c.cgroups[i].share && strcmp(c.cgroups[i].path, "/db.slice") == 0)
                        CHECK_INT(c.cgroups[i].share_pct, 10);
        config_done(&c);
        tree_done(m);
        m = tree("shares-bad", "[select]\nfast_shares = /a=140%\n", false);
        TREE_ERRORS(m, "FILE:2: [select] fast_shares: \"/a=140%\": not a percentage (0%..100%) (accepted: /PATH=N% "
                       "with N 0..100, separated by spaces or commas; PATH without . or .. components, a cgroup with "
                       "a setting of its own)");
        tree_done(m);
        m = tree("shares-twice", "[select]\nfast_shares = /a=5%\nfast_shares = /a=6%\n", false);
        TREE_ERRORS(m, "FILE:3: [select] fast_shares: \"/a=6%\": the path is already named at FILE:2 (accepted: "
                       "one rule per cgroup in a file; a later file replaces it)");
        tree_done(m);
}

/* The layers, highest first: a file hides the same name below it (a symlink to
 * /dev/null masks it), and the files of all are read in the order of their names. */
TEST(dropin_layers) {
        char *m = tree("layers", "[daemon]\ntick_ms = 500\n", true), *run, *lib;
        const char *dirs[3];
        struct nb_config c = {};
        struct config_errors errs = {};
        struct config_files files = {};

        if (asprintf(&run, "%s/layers/run.d", tmpdir) < 0 || asprintf(&lib, "%s/layers/lib.d", tmpdir) < 0 ||
            mkdir(run, 0755) < 0 || mkdir(lib, 0755) < 0)
                abort();
        if (asprintf((char **) &dirs[0], "%s.d", m) < 0)
                abort();
        dirs[1] = run;
        dirs[2] = lib;
        write_file_at(lib, "10-pkg.conf", "[daemon]\ntick_ms = 700\nscan_min_ms = 900\n");
        write_file_at(lib, "20-masked.conf", "[daemon]\nscan_max_ms = 4000\n");
        write_file_at(run, "10-pkg.conf", "[daemon]\ntick_ms = 800\n");  /* hides lib's */
        write_file_at(lib, "50-late.conf", "[select]\ncgroups = /x=balance\n");
        {
                char *mask;
                if (asprintf(&mask, "%s/20-masked.conf", dirs[0]) < 0)
                        abort();
                CHECK_INT(symlink("/dev/null", mask), 0);
                free(mask);
        }
        CHECK_INT(config_load_layers(m, dirs, 3, 0, &c, &errs, &files), 0);
        CHECK_INT(errs.n, 0);
        CHECK_INT(c.tick_ms, 800);
        CHECK_INT(c.scan_min_ms, 1000);         /* lib's 10-pkg.conf was not read */
        CHECK_INT(c.scan_max_ms, 30000);        /* masked */
        CHECK_INT(c.n_cgroups, 1);
        CHECK_INT(files.n_dropins, 2);          /* run's 10-pkg.conf, lib's 50-late.conf */
        CHECK_INT(files.notes.n, 2);
        for (size_t i = 0; i < files.notes.n; i++)
                CHECK(strstr(files.notes.msgs[i], "not read:") != NULL);
        config_files_done(&files);
        config_done(&c);
        free((char *) dirs[0]);
        free(run);
        free(lib);
        tree_done(m);
}

/* --print-config: every key with where it was set, every rule with its own. */
TEST(print_says_where_each_value_came_from) {
        char *m = tree("print", "[daemon]\ntick_ms = 500\n[select]\ncgroups = /a=balance\n", true);
        char *out = NULL;
        size_t len = 0;
        struct config_errors errs = {};
        FILE *f = open_memstream(&out, &len);

        free(dropin(m, "10-x.conf", "\n[decide]\nexchange = no\n[select]\nunits = pg@*.service=advise\n"));
        CHECK_INT(config_print(m, 0, f, &errs), 0);
        fclose(f);
        CHECK(strstr(out, "tick_ms = 500  # ") != NULL);
        CHECK(strstr(out, "numabalanced.conf:2\n") != NULL);
        CHECK(strstr(out, "scan_min_ms = 1000  # default\n") != NULL);
        CHECK(strstr(out, "exchange = no  # ") != NULL && strstr(out, "10-x.conf:3\n") != NULL);
        CHECK(strstr(out, "cgroups = /a=balance  # ") != NULL);
        CHECK(strstr(out, "units = pg@*.service=advise  # ") != NULL && strstr(out, "10-x.conf:5\n") != NULL);
        free(out);
        config_errors_done(&errs);
        tree_done(m);
}

/* The files and the directory are root's (or the reading user's) and writable by
 * their owner only: the daemon takes from them what root does. */
TEST(dropins_owner_and_mode) {
        char *m = tree("mode", "[daemon]\ntick_ms = 500\n", true), *p, *d;

        p = dropin(m, "10-group.conf", "[daemon]\ntick_ms = 600\n");
        CHECK_INT(chmod(p, 0664), 0);
        free(p);
        p = dropin(m, "20-world.conf", "[daemon]\ntick_ms = 600\n");
        CHECK_INT(chmod(p, 0646), 0);
        free(p);
        TREE_ERRORS(m,
                    "FILE.d/10-group.conf: writable by its group (mode 0664; accepted: owned by root, writable by its owner only)",
                    "FILE.d/20-world.conf: writable by others (mode 0646; accepted: owned by root, writable by its owner only)");
        tree_done(m);

        m = tree("dirmode", "[daemon]\ntick_ms = 500\n", true);
        if (asprintf(&d, "%s.d", m) < 0)
                abort();
        CHECK_INT(chmod(d, 0777), 0);
        free(d);
        TREE_ERRORS(m, "FILE.d: writable by others (mode 0777; accepted: owned by root, writable by its owner only)");
        tree_done(m);

        m = tree("mainmode", "[daemon]\ntick_ms = 500\n", false);
        CHECK_INT(chmod(m, 0620), 0);
        TREE_ERRORS(m, "FILE: writable by its group (mode 0620; accepted: owned by root, writable by its owner only)");
        tree_done(m);

        if (geteuid() != 0)
                return;         /* another owner needs root to make */
        m = tree("owner", "[daemon]\ntick_ms = 500\n", true);
        p = dropin(m, "10-nobody.conf", "[daemon]\ntick_ms = 600\n");
        CHECK_INT(chown(p, 65534, 65534), 0);
        free(p);
        TREE_ERRORS(m, "FILE.d/10-nobody.conf: owned by uid 65534 (accepted: owned by root, writable by its owner only)");
        tree_done(m);
}

/* Without its main file (the default path, CONFIG_MAIN_OPTIONAL), the directory
 * still counts; a main file named by the operator must exist. */
TEST(dropins_without_main_file) {
        char *m = tree("nomain", NULL, true);
        struct config_files files = {};
        struct nb_config c = {};
        struct config_errors errs = {};

        free(dropin(m, "10-db.conf", "[select]\ncgroups = /db.slice=balance\n"));
        CHECK_INT(config_load(m, CONFIG_MAIN_OPTIONAL, &c, &errs, &files), 0);
        CHECK(files.main_missing);
        CHECK_INT(files.n_dropins, 1);
        CHECK_INT(c.n_cgroups, 1);
        config_done(&c);
        CHECK_INT(config_load(m, 0, &c, &errs, NULL), -ENOENT);
        CHECK_INT(errs.n, 0);
        tree_done(m);

        /* No directory: the main file alone, as before. */
        m = tree("nodir", "[daemon]\ntick_ms = 500\n", false);
        CHECK_INT(config_load(m, 0, &c, &errs, &files), 0);
        CHECK_INT(files.n_dropins, 0);
        CHECK_INT(c.tick_ms, 500);
        config_done(&c);
        tree_done(m);
}

/* ---- config_copy() ----------------------------------------------------------- */

static void *field_at(struct nb_config *c, size_t offset) {
        return (char *) c + offset;
}

/* a and b hold the same values: what they own compared by content (and, distinct,
 * at other addresses), everything else byte for byte. Walks the key table: a new
 * key is compared without a word here. */
static void check_same_config(const struct nb_config *a, const struct nb_config *b, bool distinct) {
        struct nb_config x, y;

        memcpy(&x, a, sizeof(x));
        memcpy(&y, b, sizeof(y));
        for (const char *const *k = config_keys(); *k; k++) {
                enum config_storage storage;
                size_t offset;

                CHECK_INT(config_key_storage(*k, &storage, &offset), 0);
                switch (storage) {
                case CONFIG_STORAGE_INLINE:
                        break;
                case CONFIG_STORAGE_STRING: {
                        char **sx = field_at(&x, offset), **sy = field_at(&y, offset);

                        CHECK_MSG((!*sx && !*sy) || (*sx && *sy && strcmp(*sx, *sy) == 0), "%s: \"%s\", then \"%s\"", *k,
                                  *sx ? *sx : "(null)", *sy ? *sy : "(null)");
                        if (distinct && *sx)
                                CHECK_MSG(*sx != *sy, "%s: the copy shares the string", *k);
                        *sx = *sy = NULL;
                        break;
                }
                case CONFIG_STORAGE_CGROUPS:
                        CHECK_INT(x.n_cgroups, y.n_cgroups);
                        if (distinct && x.n_cgroups)
                                CHECK_MSG(x.cgroups != y.cgroups, "%s: the copy shares the rules", *k);
                        for (size_t i = 0; i < x.n_cgroups && i < y.n_cgroups; i++) {
                                CHECK_STR(x.cgroups[i].path, y.cgroups[i].path);
                                CHECK_INT(x.cgroups[i].mode, y.cgroups[i].mode);
                                CHECK_INT(x.cgroups[i].by_name, y.cgroups[i].by_name);
                                if (distinct)
                                        CHECK_MSG(x.cgroups[i].path != y.cgroups[i].path, "%s: the copy shares a path", *k);
                        }
                        /* The units key's rules are in the same array: seen once. */
                        x.cgroups = y.cgroups = NULL;
                        x.n_cgroups = y.n_cgroups = 0;
                        break;
                default:
                        CHECK_MSG(false, "%s: unknown storage %d", *k, (int) storage);
                }
        }
        CHECK(memcmp(&x, &y, sizeof(x)) == 0);
}

static int load_full(struct nb_config *c) {
        _cleanup_free_ char *path = write_conf("copy.conf", full_conf);
        struct config_errors errs = {};
        int r = config_load(path, 0, c, &errs, NULL);

        CHECK_INT(r, 0);
        config_errors_done(&errs);
        unlink(path);
        return r;
}

/* The copy of a config with every key set holds the same values. */
TEST(copy_equals_source) {
        struct nb_config src, dst;

        if (load_full(&src) < 0)
                return;
        memset(&dst, 0x5a, sizeof(dst));        /* written wholly, whatever it held */
        CHECK_INT(config_copy(&dst, &src), 0);
        check_same_config(&src, &dst, true);
        config_done(&src);
        config_done(&dst);
}

/* The copy shares nothing with its source: released, the source takes nothing of
 * the copy with it (valgrind sees any use after free). */
TEST(copy_outlives_source) {
        struct nb_config src, ref, dst;

        if (load_full(&src) < 0)
                return;
        CHECK_INT(config_copy(&ref, &src), 0);
        CHECK_INT(config_copy(&dst, &src), 0);
        config_done(&src);
        check_same_config(&ref, &dst, true);
        CHECK_STR(dst.cgroup_root, "/tmp/cg");
        CHECK_INT(dst.n_cgroups, 3);
        if (dst.n_cgroups == 3)
                CHECK_STR(dst.cgroups[2].path, "/db.slice/backup.service");
        CHECK_STR(dst.metrics_path, "/var/lib/node-exporter/numabalanced.prom");
        CHECK_STR(dst.metrics_group, "prometheus");
        config_done(&ref);
        config_done(&dst);
}

/* Every string key of the table is copied, whichever it is: each is given a value of
 * its own here, from the table (a new key needs no word in this test), then the
 * source is released. */
TEST(copy_every_string_key) {
        struct nb_config src, dst;
        size_t n_strings = 0;
        enum config_storage storage;

        config_defaults(&src);
        for (const char *const *k = config_keys(); *k; k++) {
                size_t offset;
                char **s;

                CHECK_INT(config_key_storage(*k, &storage, &offset), 0);
                if (storage != CONFIG_STORAGE_STRING)
                        continue;
                s = field_at(&src, offset);
                free(*s);
                if (asprintf(s, "/copy/%s", *k) < 0)
                        abort();
                n_strings++;
        }
        /* The string keys known today are declared so (and the rules are rules). */
        CHECK(n_strings >= 4);
        for (const char *const *k = (const char *const[]) { "select.cgroup_root", "sample.replay_path",
                                                             "report.metrics_path", "report.metrics_group", NULL };
             *k; k++) {
                CHECK_INT(config_key_storage(*k, &storage, NULL), 0);
                CHECK_MSG(storage == CONFIG_STORAGE_STRING, "%s is not a string key", *k);
        }
        CHECK_INT(config_key_storage("select.cgroups", &storage, NULL), 0);
        CHECK_INT(storage, CONFIG_STORAGE_CGROUPS);
        CHECK_INT(config_key_storage("select.nope", &storage, NULL), -ENOENT);

        CHECK_INT(config_copy(&dst, &src), 0);
        check_same_config(&src, &dst, true);
        config_done(&src);
        for (const char *const *k = config_keys(); *k; k++) {
                char expected[128];
                size_t offset;

                CHECK_INT(config_key_storage(*k, &storage, &offset), 0);
                if (storage != CONFIG_STORAGE_STRING)
                        continue;
                snprintf(expected, sizeof(expected), "/copy/%s", *k);
                CHECK_STR(*(char **) field_at(&dst, offset), expected);
        }
        config_done(&dst);
        config_done(&dst);      /* twice: a done config is empty */
}

/* NULL strings (config_defaults() out of memory, a config made by hand): cgroup_root
 * gets its default, as the daemon's own copy gave it; the others stay NULL. */
TEST(copy_of_an_empty_config) {
        struct nb_config src = {}, dst;

        CHECK_INT(config_copy(&dst, &src), 0);
        CHECK_STR(dst.cgroup_root, "/sys/fs/cgroup");
        CHECK(!dst.replay_path);
        CHECK(!dst.metrics_path);
        CHECK(!dst.metrics_group);
        CHECK(!dst.cgroups);
        CHECK_INT(dst.n_cgroups, 0);
        config_done(&dst);
}

/* The strdup() of this program, config.c's included: the nth call from when this is
 * set to n fails; 0: none does. */
static unsigned strdup_fail_in;

char *strdup(const char *s) {
        size_t n = strlen(s) + 1;
        char *p;

        if (strdup_fail_in && --strdup_fail_in == 0) {
                errno = ENOMEM;
                return NULL;
        }
        p = malloc(n);
        return p ? memcpy(p, s, n) : NULL;
}

/* Out of memory at any of its copies, config_copy() fails with -ENOMEM, leaves *dst as
 * it was and keeps nothing it made (valgrind sees a leak). */
TEST(copy_out_of_memory_leaves_dst_untouched) {
        struct nb_config src, dst, before;
        unsigned n;
        int r;

        if (load_full(&src) < 0)
                return;
        memset(&dst, 0x5a, sizeof(dst));
        memcpy(&before, &dst, sizeof(dst));
        for (n = 1; n < 100; n++) {
                strdup_fail_in = n;
                r = config_copy(&dst, &src);
                if (strdup_fail_in) {
                        /* No strdup() failed: the copy is whole. */
                        strdup_fail_in = 0;
                        CHECK_INT(r, 0);
                        break;
                }
                CHECK_INT(r, -ENOMEM);
                CHECK_MSG(memcmp(&dst, &before, sizeof(dst)) == 0, "failing strdup() #%u: *dst changed", n);
        }
        /* 4 strings and 3 rules: 7 copies that can fail. */
        CHECK_INT(n, 8);
        if (r == 0) {
                check_same_config(&src, &dst, true);
                config_done(&dst);
        }
        config_done(&src);
}

static int intro(void) {
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        return 0;
}

static void outro(void) {
        rmdir(tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
