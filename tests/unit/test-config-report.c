/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the configuration did (daemon/config-report.h): the rules that decided no
 * cgroup in a walk are listed and logged once until they match again or the config
 * changes; a walk made with other rules (the walker's, before a reload) is not taken. */
#include <stdlib.h>
#include <string.h>
#include "config-report.h"
#include "log.h"
#include "test.h"

static unsigned n_logged;
static char last_logged[512];

static void sink(int level, int error, const struct log_fields *fields, const char *msg) {
        n_logged++;
        snprintf(last_logged, sizeof(last_logged), "%s", msg);
}

static struct cgroup_rule rules[] = {
        { (char *) "/db.slice", CG_MODE_BALANCE, false, false, 0 },
        { (char *) "pg@*.service", CG_MODE_ADVISE, true, false, 0 },
};

static void walked(struct config_report *r, const struct nb_config *cfg, bool m0, bool m1, size_t n_rules) {
        bool matched[2] = { m0, m1 };
        struct cgroup_selection sel = { .rule_matched = matched, .n_rules = n_rules };

        config_report_selection(r, cfg, &sel);
}

TEST(unmatched_rules_listed_and_logged_once) {
        struct nb_config cfg = { .cgroup_root = (char *) "/sys/fs/cgroup", .cgroups = rules, .n_cgroups = 2 };
        struct config_report r = {};

        log_set_sink(sink);
        walked(&r, &cfg, true, false, 2);
        CHECK_INT(r.n_unmatched, 1);
        if (r.n_unmatched == 1)
                CHECK_STR(r.unmatched[0], "units = pg@*.service=advise");
        CHECK_INT(n_logged, 1);
        CHECK(strstr(last_logged, "[select] units = pg@*.service=advise matches no cgroup under /sys/fs/cgroup") != NULL);
        walked(&r, &cfg, true, false, 2);       /* still: listed, not logged again */
        CHECK_INT(r.n_unmatched, 1);
        CHECK_INT(n_logged, 1);
        walked(&r, &cfg, true, true, 2);        /* it matches now */
        CHECK_INT(r.n_unmatched, 0);
        walked(&r, &cfg, false, false, 2);      /* both gone: each said once */
        CHECK_INT(r.n_unmatched, 2);
        CHECK_INT(n_logged, 3);
        walked(&r, &cfg, true, true, 1);        /* a walk with other rules: not taken */
        CHECK_INT(r.n_unmatched, 2);
        config_report_reloaded(&r);             /* a new config: said again */
        walked(&r, &cfg, false, true, 2);
        CHECK_INT(n_logged, 4);
        CHECK_INT(r.n_unmatched, 1);
        if (r.n_unmatched == 1)
                CHECK_STR(r.unmatched[0], "cgroups = /db.slice=balance");
        log_set_sink(NULL);
        config_report_done(&r);
        config_report_done(&r);
}

DEFINE_TEST_MAIN()
