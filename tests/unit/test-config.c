/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The configuration parser, asserted on what an operator sees: the values that
 * apply, and the exact "FILE:LINE: [section] key: problem (accepted: ...)" lines. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "log.h"
#include "parse.h"
#include "test.h"

#ifndef CONF_FILE
#error "CONF_FILE (conf/numabalanced.conf) must be defined"
#endif

static char tmpdir[] = "/tmp/test-config-XXXXXX";   /* made by intro() */

static char *write_conf(const char *name, const char *text) {
        char *path;
        FILE *f;

        if (asprintf(&path, "%s/%s", tmpdir, name) < 0)
                abort();
        f = fopen(path, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
                perror(path);
                abort();
        }
        return path;
}

/* Loads text and checks the exact error lines; expected[] have the path replaced by
 * "FILE" and end with NULL. */
static void check_errors(const char *name, const char *text, const char *const *expected) {
        _cleanup_free_ char *path = write_conf(name, text);
        struct nb_config cfg = {};
        struct config_errors errs = {};
        size_t n = 0, plen = strlen(path);
        int r;

        r = config_load(path, &cfg, &errs);
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
        CHECK(!c.move_shared);
        CHECK(!c.move_preferred);
        CHECK(!c.move_mlocked);
        CHECK_INT(c.min_misplaced_kb, 2048);
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
        "[migrate]\n"
        "rate_limit_mb_s = 0\n"
        "batch_pages = 512\n"
        "rate_limit_calls_s = 0\n"
        "[report]\n"
        "metrics_path = \"/var/lib/node-exporter/numabalanced.prom\"\n"
        "metrics_group = prometheus\n";

TEST(every_key_set) {
        _cleanup_free_ char *path = write_conf("full.conf", full_conf);
        struct nb_config c = {};
        struct config_errors errs = {};
        nb_cpumask cpus = {};
        int r;

        r = config_load(path, &c, &errs);
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
        CHECK_INT(c.rate_limit_mb_s, 0);
        CHECK_INT(c.batch_pages, 512);
        CHECK_INT(c.rate_limit_calls_s, 0);
        CHECK_STR(c.metrics_path, "/var/lib/node-exporter/numabalanced.prom");
        CHECK_STR(c.metrics_group, "prometheus");
        config_done(&c);
        unlink(path);
}

TEST(missing_file_enoent_and_no_message) {
        struct nb_config c = {};
        struct config_errors errs = {};
        CHECK_INT(config_load("/nonexistent/numabalanced.conf", &c, &errs), -ENOENT);
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

TEST(errors_cpu_lists) {
        ERRORS("bad-cpus.conf",
               "[daemon]\nservice_cpus = 0-x\n",
               "FILE:2: [daemon] service_cpus: \"0-x\" is not a CPU list "
               "(accepted: a CPU list such as 0-1,8 with CPUs below 8192, or empty for the lowest-numbered online CPU)");
        /* The value of a duplicated key is not checked: iniparser keeps only the last. */
        ERRORS("dup-cpus.conf",
               "[daemon]\nservice_cpus = 3-1\n\nservice_cpus = 9000\n",
               "FILE:4: [daemon] service_cpus: duplicate key, already set on line 2 (accepted: one setting per key)");
        ERRORS("reversed-cpus.conf",
               "[daemon]\nservice_cpus = 3-1\n",
               "FILE:2: [daemon] service_cpus: \"3-1\" is not a CPU list "
               "(accepted: a CPU list such as 0-1,8 with CPUs below 8192, or empty for the lowest-numbered online CPU)");
        ERRORS("big-cpus.conf",
               "[daemon]\nservice_cpus = 9000\n",
               "FILE:2: [daemon] service_cpus: \"9000\" names a CPU beyond the limit "
               "(accepted: a CPU list such as 0-1,8 with CPUs below 8192, or empty for the lowest-numbered online CPU)");
}

#define CG_ACCEPTED "(accepted: /PATH=balance|advise|off, separated by spaces or commas; PATH without . or .. components)"
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
               "FILE:6: [decide] cooldown_ms: duplicate key, already set on line 2 (accepted: one setting per key)");
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
        CHECK_INT(config_load(path, &c, &errs), -EINVAL);
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

        CHECK_INT(cg_mode_parse("balance", 7, &m), 0);
        CHECK_INT(m, CG_MODE_BALANCE);
        CHECK_INT(cg_mode_parse("advise\n", 7, &m), 0);
        CHECK_INT(m, CG_MODE_ADVISE);
        CHECK_INT(cg_mode_parse("off", 3, &m), 0);
        CHECK_INT(m, CG_MODE_OFF);
}

/* Anything else is -EINVAL and leaves the output alone. */
TEST(cg_mode_parse_invalid_untouched) {
        enum cg_mode m = CG_MODE_UNSET;
        char huge[4096];

        CHECK_INT(cg_mode_parse("", 0, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("\n", 1, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("off\n\n", 5, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("Balance", 7, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("OFF", 3, &m), -EINVAL);
        CHECK_INT(cg_mode_parse(" off", 4, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("off ", 4, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("of", 2, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("off\0x", 5, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("balance", 3, &m), -EINVAL);    /* "bal": the length counts */
        CHECK_INT(cg_mode_parse("\xff\xfe", 2, &m), -EINVAL);
        CHECK_INT(cg_mode_parse("unset", 5, &m), -EINVAL);
        memset(huge, 'a', sizeof(huge));
        memcpy(huge, "balance", 7);
        CHECK_INT(cg_mode_parse(huge, sizeof(huge), &m), -EINVAL);
        CHECK_INT(cg_mode_parse(NULL, 0, &m), -EINVAL);
        CHECK_INT(m, CG_MODE_UNSET);
}

TEST(cg_mode_names) {
        CHECK_STR(cg_mode_name(CG_MODE_BALANCE), "balance");
        CHECK_STR(cg_mode_name(CG_MODE_ADVISE), "advise");
        CHECK_STR(cg_mode_name(CG_MODE_OFF), "off");
        CHECK_STR(cg_mode_name((enum cg_mode) 42), "?");
}

static char *shipped_text(size_t *ret_len) {
        char *text = NULL;
        int r = read_file_at(AT_FDCWD, CONF_FILE, 1 << 20, &text, ret_len);

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
        CHECK_INT(n_keys, 29);
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
        r = config_load(path, &c, &errs);
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

/* And the shipped file as it is, all commented out, is valid. */
TEST(shipped_conf_loads_as_is) {
        struct nb_config c = {};
        struct config_errors errs = {};

        CHECK_INT(config_load(CONF_FILE, &c, &errs), 0);
        CHECK_INT(errs.n, 0);
        config_done(&c);
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
