/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the configuration did (config-report.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config-report.h"
#include "log.h"

void config_report_rule(const struct cgroup_rule *rule, char *buf, size_t size) {
        char v[8];

        snprintf(buf, size, "%s = %s=%s", config_rule_key(rule), rule->path, config_rule_value(rule, v));
}

static void unmatched_free(struct config_report *r) {
        for (size_t i = 0; i < r->n_unmatched; i++)
                free(r->unmatched[i]);
        free(r->unmatched);
        r->unmatched = NULL;
        r->n_unmatched = 0;
}

/* Sized for cfg's rules (what was logged kept when the count is the same). */
static bool size_logged(struct config_report *r, size_t n) {
        bool *v;

        if (r->logged && r->n_rules == n)
                return true;
        v = calloc(n ? n : 1, sizeof(*v));
        if (!v)
                return false;
        free(r->logged);
        r->logged = v;
        r->n_rules = n;
        return true;
}

void config_report_selection(struct config_report *r, const struct nb_config *cfg,
                             const struct cgroup_selection *sel) {
        char **v;
        size_t n = 0;

        /* A walk with other rules (the walker's, before a reload reached it): not ours. */
        if (!sel->rule_matched || sel->n_rules != cfg->n_cgroups || !size_logged(r, cfg->n_cgroups))
                return;
        v = calloc(cfg->n_cgroups ? cfg->n_cgroups : 1, sizeof(*v));
        if (!v)
                return;
        for (size_t i = 0; i < cfg->n_cgroups; i++) {
                char text[PATH_MAX + 64];

                if (sel->rule_matched[i]) {
                        r->logged[i] = false;
                        continue;
                }
                config_report_rule(&cfg->cgroups[i], text, sizeof(text));
                if (!r->logged[i])
                        log_warning("[select] %s matches no cgroup under %s now: nothing is opted in by it "
                                    "(`systemctl show -P ControlGroup UNIT` prints a unit's path)", text,
                                    cfg->cgroup_root);
                r->logged[i] = true;
                v[n] = strdup(text);
                if (v[n])
                        n++;
        }
        unmatched_free(r);
        r->unmatched = v;
        r->n_unmatched = n;
}

void config_report_reloaded(struct config_report *r) {
        free(r->logged);
        r->logged = NULL;
        r->n_rules = 0;
}

void config_report_done(struct config_report *r) {
        unmatched_free(r);
        config_report_reloaded(r);
        r->n_not_applied = 0;
}
