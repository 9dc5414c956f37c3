/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prints what cgroup_select() picks under a cgroup root, for tests/vm/test-select:
 *
 *     select-dump [--rule PATH=MODE]... [--procs] ROOT
 *
 * One line per opted-in cgroup, "PATH MODE SOURCE DECIDED_BY"; one per invalid
 * setting, "invalid PATH XATTR "VALUE" WHY"; "truncated" when a walk bound was hit;
 * with --procs, "procs PATH PID..." for each opted-in cgroup. Exit 0, or 1 when the
 * walk itself fails. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cgroup.h"
#include "log.h"

static const char *source_name(enum cg_source s) {
        switch (s) {
        case CG_FROM_CONFIG: return "config";
        case CG_FROM_TRUSTED: return "trusted";
        case CG_FROM_USER: return "user";
        default: return "none";
        }
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "rule", required_argument, NULL, 'r' },
                { "procs", no_argument, NULL, 'p' },
                { "debug", no_argument, NULL, 'd' },
                {}
        };
        struct cgroup_rule rules[32];
        struct cgroup_selection sel = {};
        size_t n_rules = 0;
        bool procs = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (c) {
                case 'r': {
                        char *eq = strrchr(optarg, '=');
                        enum cg_mode m;
                        if (!eq || n_rules == ELEMENTSOF(rules) ||
                            config_cg_mode_parse(eq + 1, strlen(eq + 1), &m) < 0) {
                                fprintf(stderr, "select-dump: bad --rule %s (PATH=balance|advise|off)\n", optarg);
                                return 2;
                        }
                        *eq = 0;
                        rules[n_rules++] = (struct cgroup_rule) { .path = optarg, .mode = m };
                        break;
                }
                case 'p':
                        procs = true;
                        break;
                case 'd':
                        log_set_max_level(LOG_LVL_DEBUG);
                        break;
                default:
                        return 2;
                }
        }
        if (optind != argc - 1) {
                fprintf(stderr, "usage: select-dump [--rule PATH=MODE]... [--procs] [--debug] ROOT\n");
                return 2;
        }

        r = cgroup_select(argv[optind], rules, n_rules, &sel);
        if (r < 0) {
                fprintf(stderr, "select-dump: cgroup_select(%s): %s\n", argv[optind], strerror(-r));
                return 1;
        }
        for (size_t i = 0; i < sel.n_entries; i++)
                printf("%s %s %s %s\n", sel.entries[i].path, config_cg_mode_name(sel.entries[i].mode),
                       source_name(sel.entries[i].source), sel.entries[i].decided_by);
        for (size_t i = 0; i < sel.n_invalid; i++)
                printf("invalid %s %s \"%s\" %s\n", sel.invalid[i].path, sel.invalid[i].xattr,
                       sel.invalid[i].value, sel.invalid[i].why);
        if (sel.truncated)
                printf("truncated\n");
        for (size_t i = 0; procs && i < sel.n_entries; i++) {
                pid_t *pids = NULL;
                size_t n = 0;
                r = cgroup_read_procs(argv[optind], sel.entries[i].path, &pids, &n);
                if (r < 0) {
                        /* Removed since the walk: say so, it is not a failure. */
                        printf("procs %s error %s\n", sel.entries[i].path, strerror(-r));
                        continue;
                }
                printf("procs %s", sel.entries[i].path);
                for (size_t j = 0; j < n; j++)
                        printf(" %d", (int) pids[j]);
                printf("\n");
                free(pids);
        }
        cgroup_selection_done(&sel);
        return 0;
}
