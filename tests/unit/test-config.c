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

static char tmpdir[] = "/tmp/test-config-XXXXXX";

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
                if (strncmp(m, path, plen) != 0) {
                        fprintf(stderr, "%s: error does not start with the path: %s\n", name, m);
                        test_failures++;
                        continue;
                }
                if (strncmp(expected[i], "FILE", 4) != 0 || strcmp(m + plen, expected[i] + 4) != 0) {
                        fprintf(stderr, "%s: got      \"FILE%s\"\n%s: expected \"%s\"\n", name, m + plen,
                                name, expected[i]);
                        test_failures++;
                }
        }
        for (size_t i = n; i < errs.n; i++)
                fprintf(stderr, "%s: unexpected error: %s\n", name, errs.msgs[i]);
        config_errors_done(&errs);
        config_done(&cfg);
        unlink(path);
}

#define ERRORS(name, text, ...) check_errors(name, text, (const char *const[]) { __VA_ARGS__, NULL })

static void test_defaults(void) {
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
        CHECK_INT(c.cooldown_ms, 30000);
        CHECK_INT(c.free_floor_pct, 5);
        CHECK(!c.move_shared);
        CHECK(!c.move_preferred);
        CHECK_INT(c.min_misplaced_kb, 2048);
        CHECK_INT(c.rate_limit_mb_s, 1024);
        CHECK_INT(c.batch_pages, 65536);
        CHECK_STR(c.metrics_path, "");
        config_done(&c);
        config_done(&c);        /* twice: a done config is empty */
}

static void test_full(void) {
        _cleanup_free_ char *path = write_conf("full.conf",
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
                "min_misplaced = 1000\n"
                "[migrate]\n"
                "rate_limit_mb_s = 0\n"
                "batch_pages = 512\n"
                "[report]\n"
                "metrics_path = \"/var/lib/node-exporter/numabalanced.prom\"\n");
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
        CHECK_INT(c.min_misplaced_kb, 1);       /* 1000 bytes: rounded up to 1 kB */
        CHECK_INT(c.rate_limit_mb_s, 0);
        CHECK_INT(c.batch_pages, 512);
        CHECK_STR(c.metrics_path, "/var/lib/node-exporter/numabalanced.prom");
        config_done(&c);
        unlink(path);
}

static void test_missing(void) {
        struct nb_config c = {};
        struct config_errors errs = {};
        CHECK_INT(config_load("/nonexistent/numabalanced.conf", &c, &errs), -ENOENT);
        CHECK_INT(errs.n, 0);
}

static void test_errors(void) {
        ERRORS("unknown-section.conf",
               "[daemon]\ntick_ms = 1000\n\n[sampling]\nsource = proc\n",
               "FILE:4: [sampling]: unknown section (accepted: [daemon], [select], [sample], [decide], [migrate], [report])");
        ERRORS("unknown-key.conf",
               "[daemon]\n# comment\ntick = 1000\n",
               "FILE:3: [daemon] tick: unknown key (accepted: service_cpus, tick_ms, scan_min_ms, scan_max_ms, log_level, kernel_numa_balancing)");
        ERRORS("no-section.conf",
               "tick_ms = 1000\n[daemon]\n",
               "FILE:1: tick_ms: key outside of any section (accepted: a section header first: [daemon], [select], [sample], [decide], [migrate], [report])");
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
        ERRORS("bad-bool.conf",
               "[decide]\nmove_shared = yesterday\n",
               "FILE:2: [decide] move_shared: \"yesterday\" is not a boolean (accepted: yes, no, true, false, on, off, 1, 0)");
        ERRORS("bad-enum.conf",
               "[daemon]\nlog_level = Debug\nkernel_numa_balancing = off\n[sample]\nsource = perf\n",
               "FILE:2: [daemon] log_level: \"Debug\" is not a known value (accepted: err, warning, notice, info, debug)",
               "FILE:3: [daemon] kernel_numa_balancing: \"off\" is not a known value (accepted: leave, disable)",
               "FILE:5: [sample] source: \"perf\" is not a known value (accepted: auto, proc, bpf)");
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
#define CG_ACCEPTED "(accepted: /PATH=balance|advise|off, separated by spaces or commas; PATH without . or .. components)"
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
        ERRORS("path.conf",
               "[select]\ncgroup_root = sys/fs/cgroup\n[report]\nmetrics_path = metrics.prom\n",
               "FILE:2: [select] cgroup_root: \"sys/fs/cgroup\" is not an absolute path (accepted: an absolute path)",
               "FILE:4: [report] metrics_path: \"metrics.prom\" is not an absolute path (accepted: an absolute path, or empty for none)");
        /* iniparser lower-cases keys: a duplicate in other case is still a duplicate. */
        ERRORS("duplicate.conf",
               "[decide]\ncooldown_ms = 100\n[daemon]\ntick_ms = 200\n[decide]\nCooldown_MS = 300\n",
               "FILE:6: [decide] cooldown_ms: duplicate key, already set on line 2 (accepted: one setting per key)");
        ERRORS("scan-order.conf",
               "[daemon]\nscan_max_ms = 2000\nscan_min_ms = 5000\n",
               "FILE:3: [daemon] scan_min_ms: 5000 is above scan_max_ms 2000 (accepted: scan_min_ms <= scan_max_ms)");
        ERRORS("scan-order2.conf",
               "[daemon]\nscan_max_ms = 500\n",
               "FILE:2: [daemon] scan_min_ms: 1000 is above scan_max_ms 500 (accepted: scan_min_ms <= scan_max_ms)");
        ERRORS("syntax.conf",
               "[daemon\ntick_ms 1000\n= 5\n",
               "FILE:1: syntax error (accepted: [section], key = value, or a comment starting with # or ;)",
               "FILE:2: syntax error (accepted: [section], key = value, or a comment starting with # or ;)",
               "FILE:3: syntax error: no key before '=' (accepted: key = value)");
        /* A continued line counts from its first line; the next entry keeps its own number. */
        ERRORS("continued.conf",
               "[select]\ncgroups = /a=balance \\\n   /b=bogus\nmin_rss = 1X\n",
               "FILE:2: [select] cgroups: \"/b=bogus\": unknown mode " CG_ACCEPTED,
               "FILE:4: [select] min_rss: \"1X\" has junk after the number (or an unknown unit) "
               "(accepted: 0..1T bytes, with an optional K, M, G or T suffix)");
        /* All errors are reported, not just the first. */
        ERRORS("many.conf",
               "[daemon]\ntick_ms = 0\nbogus = 1\n[nope]\nx = 1\n[decide]\nmove_shared = maybe\n",
               "FILE:2: [daemon] tick_ms: \"0\" is out of range (accepted: 100..60000)",
               "FILE:3: [daemon] bogus: unknown key (accepted: service_cpus, tick_ms, scan_min_ms, scan_max_ms, log_level, kernel_numa_balancing)",
               "FILE:4: [nope]: unknown section (accepted: [daemon], [select], [sample], [decide], [migrate], [report])",
               "FILE:7: [decide] move_shared: \"maybe\" is not a boolean (accepted: yes, no, true, false, on, off, 1, 0)");
}

/* An earlier value keeps its place: a failed load leaves *cfg as it was. */
static void test_untouched(void) {
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

static void test_cg_mode(void) {
        enum cg_mode m = CG_MODE_UNSET;
        char huge[4096];

        CHECK_INT(cg_mode_parse("balance", 7, &m), 0);
        CHECK_INT(m, CG_MODE_BALANCE);
        CHECK_INT(cg_mode_parse("advise\n", 7, &m), 0);
        CHECK_INT(m, CG_MODE_ADVISE);
        CHECK_INT(cg_mode_parse("off", 3, &m), 0);
        CHECK_INT(m, CG_MODE_OFF);
        m = CG_MODE_UNSET;
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
        CHECK_STR(cg_mode_name(CG_MODE_BALANCE), "balance");
        CHECK_STR(cg_mode_name(CG_MODE_ADVISE), "advise");
        CHECK_STR(cg_mode_name(CG_MODE_OFF), "off");
        CHECK_STR(cg_mode_name((enum cg_mode) 42), "?");
}

/* The shipped file documents every key, in its own section, with its default: with
 * the "#key = value" lines uncommented it must load, and give exactly the defaults. */
static void test_shipped_conf(void) {
        _cleanup_free_ char *text = NULL, *uncommented = NULL, *path = NULL;
        const char *const *keys = config_keys();
        struct nb_config c = {}, d;
        struct config_errors errs = {};
        size_t len, o = 0, n_keys = 0;
        int r;

        r = read_file_at(AT_FDCWD, CONF_FILE, 1 << 20, &text, &len);
        CHECK_INT(r, 0);
        if (r < 0)
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
                if (!sec || !at || (next && at > next)) {
                        fprintf(stderr, "%s: \"#%s = DEFAULT\" not found in section %s\n", CONF_FILE, dot + 1, header + 1);
                        test_failures++;
                }
        }
        CHECK_INT(n_keys, 22);

        uncommented = malloc(len + 1);
        if (!uncommented)
                abort();
        for (const char *p = text; *p;) {
                /* "#key = value" (no space after '#') is a setting; "# text" is prose. */
                if (p[0] == '#' && p[1] >= 'a' && p[1] <= 'z')
                        p++;
                while (*p && *p != '\n')
                        uncommented[o++] = *p++;
                if (*p)
                        uncommented[o++] = *p++;
        }
        uncommented[o] = 0;
        path = write_conf("uncommented.conf", uncommented);
        r = config_load(path, &c, &errs);
        CHECK_INT(r, 0);
        for (size_t i = 0; i < errs.n; i++)
                fprintf(stderr, "shipped config, uncommented: %s\n", errs.msgs[i]);
        config_errors_done(&errs);
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
        CHECK_INT(c.min_misplaced_kb, d.min_misplaced_kb);
        CHECK_INT(c.rate_limit_mb_s, d.rate_limit_mb_s);
        CHECK_INT(c.batch_pages, d.batch_pages);
        CHECK_STR(c.metrics_path, d.metrics_path);
        config_done(&c);
        config_done(&d);
        unlink(path);

        /* And the shipped file as it is, all commented out, is valid. */
        CHECK_INT(config_load(CONF_FILE, &c, &errs), 0);
        CHECK_INT(errs.n, 0);
        config_done(&c);
}

int main(void) {
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        test_defaults();
        test_full();
        test_missing();
        test_errors();
        test_untouched();
        test_cg_mode();
        test_shipped_conf();
        rmdir(tmpdir);
        TEST_MAIN_END();
}
