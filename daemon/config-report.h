/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the configuration did, for the operator: the cgroup rules ([select] cgroups
 * and units) that decide no cgroup now, from the walker's newest selection, each
 * logged once when it stops matching (a path that does not exist, a unit name with a
 * typo: silent before); and the keys the last reload did not apply, with why. status
 * reports both (report.c); manager.c and main.c feed them. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include "cgroup.h"
#include "config.h"

/* A key a reload read and did not apply (main.c's reload_config()). */
struct config_not_applied {
        const char *key;             /* "section.key", static */
        const char *why;             /* static */
};
#define CONFIG_NOT_APPLIED_MAX 8

struct config_report {
        char **unmatched;            /* "cgroups = PATH=MODE", "units = NAME=MODE" */
        size_t n_unmatched;
        bool *logged;                /* per rule of the config: said once in the log */
        size_t n_rules;
        struct config_not_applied not_applied[CONFIG_NOT_APPLIED_MAX];
        size_t n_not_applied;
};

/* A selection made with cfg's rules (sel->n_rules of them): the rules that decided no
 * directory, kept and logged (a rule newly unmatched: a warning, once until it
 * matches again or the config changes). Out of memory keeps the previous list. */
void config_report_selection(struct config_report *r, const struct nb_config *cfg,
                             const struct cgroup_selection *sel);
/* A new config: what was logged is forgotten (its rules are others). */
void config_report_reloaded(struct config_report *r);
void config_report_done(struct config_report *r);
/* The rule as the config writes it, into buf. */
void config_report_rule(const struct cgroup_rule *rule, char *buf, size_t size);
