/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl: the operator's window onto numabalanced.
 *
 *   show PID     standalone (no daemon needed): a process's memory placement per VMA
 *                and per node, against where its threads run.
 *   status       the daemon: sources, service CPUs, kernel balancing, totals;
 *   list [CGROUP|PID...]  the cgroups and processes it watches, with locality and
 *                costs (those given, and the cgroups below a cgroup given);
 *   explain PID|CGROUP  why a process or a cgroup is or is not being moved.
 *                These three ask the daemon over its control socket
 *                (lib/control-protocol.h).
 *   top          status and list again and again, as a live view (ctl-top.h).
 *
 * Exit status: 0 on success, 1 when the request failed (one line on stderr naming
 * the pid and the reason), 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "build-config.h"
#include "cleanup.h"
#include "control-protocol.h"
#include "ctl-daemon.h"
#include "ctl-show.h"
#include "ctl-top.h"
#include "log.h"
#include "parse.h"

static void usage(FILE *f) {
        fprintf(f,
                "Usage: numabalancectl [OPTIONS] COMMAND [ARGS]\n"
                "\n"
                "Commands:\n"
                "  show PID        Memory placement of a process, per VMA and per node,\n"
                "                  against the nodes its threads run on (no daemon needed)\n"
                "  status          The daemon: sampling source, service CPUs, kernel balancing,\n"
                "                  pages moved, its CPU time\n"
                "  list [CGROUP|PID...]\n"
                "                  Cgroups and processes watched: mode, memory per node,\n"
                "                  pages moved and refused, the daemon's CPU time on each;\n"
                "                  only the cgroups given (and those below) and the PIDs given\n"
                "  explain PID|CGROUP\n"
                "                  Why a process, or a cgroup's processes, are or are not\n"
                "                  being moved\n"
                "  top             A live view: per cgroup and process, locality, MiB/s moved,\n"
                "                  pages refused; the daemon's CPU share (q quits)\n"
                "\n"
                "Options:\n"
                "  --json          Machine-readable output (see numabalancectl(1))\n"
                "  --pretty        Indent the JSON\n"
                "  --all           show: list VMAs that hold no pages too\n"
                "  --proc-root DIR Read processes from DIR instead of /proc\n"
                "  --sys-root DIR  Read the topology from DIR instead of /sys\n"
                "  --socket PATH   The daemon's control socket (default " CONTROL_SOCKET_DEFAULT ")\n"
                "  --delay SECONDS top: the refresh interval (default 2, at least 0.2)\n"
                "  --sort KEY      top: moved, misplaced, local, refused or pid (default moved)\n"
                "  -h, --help      This help\n"
                "  --version       Version\n");
}

/* The commands that ask the daemon, and the request each sends. */
static const struct {
        const char *name;
        enum control_cmd cmd;
} daemon_commands[] = {
        { "status", CONTROL_STATUS },
        { "list", CONTROL_LIST },
        { "explain", CONTROL_EXPLAIN },
};

/* The options into *a and *da. Returns -1 to go on to the command, or the exit
 * status (--help, --version, a usage error). */
static unsigned top_interval_ms = 2000;
static enum top_sort top_sort = TOP_SORT_MOVED;

static int parse_top_option(int c, const char *arg) {
        char *end;
        double d;

        if (c == 'd') {
                d = strtod(arg, &end);
                if (*end || d < 0.2 || d > 3600) {
                        fprintf(stderr, "numabalancectl: --delay takes seconds from 0.2 to 3600, not '%s'\n", arg);
                        return 2;
                }
                top_interval_ms = (unsigned) (d * 1000);
                return -1;
        }
        for (int i = 0; i < _TOP_SORT_MAX; i++)
                if (strcmp(arg, ctl_top_sort_name((enum top_sort) i)) == 0) {
                        top_sort = (enum top_sort) i;
                        return -1;
                }
        fprintf(stderr, "numabalancectl: --sort takes moved, misplaced, local, refused or pid, not '%s'\n", arg);
        return 2;
}

static int parse_options(int argc, char **argv, struct show_args *a, struct daemon_args *da) {
        enum { OPT_JSON = 256, OPT_PRETTY, OPT_ALL, OPT_PROC, OPT_SYS, OPT_VERSION, OPT_SOCKET, OPT_SORT };
        static const struct option opts[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "pretty", no_argument, NULL, OPT_PRETTY },
                { "all", no_argument, NULL, OPT_ALL },
                { "proc-root", required_argument, NULL, OPT_PROC },
                { "sys-root", required_argument, NULL, OPT_SYS },
                { "socket", required_argument, NULL, OPT_SOCKET },
                { "delay", required_argument, NULL, 'd' },
                { "sort", required_argument, NULL, OPT_SORT },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                {}
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "hd:", opts, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON: a->json = true; break;
                case OPT_PRETTY: a->json = a->pretty = true; break;
                case OPT_ALL: a->all = true; break;
                case OPT_PROC: a->proc_root = optarg; break;
                case OPT_SYS: a->sys_root = optarg; break;
                case OPT_SOCKET: da->socket = optarg; break;
                case 'd':
                case OPT_SORT:
                        r = parse_top_option(c, optarg);
                        if (r >= 0)
                                return r;
                        break;
                case OPT_VERSION: printf("numabalancectl %s\n", PACKAGE_VERSION); return 0;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        da->json = a->json;
        return -1;
}

/* The n arguments after the command cmd: one PID, or none when pid is NULL. Returns
 * 0, or 2 (the usage exit status) after one line on stderr. */
static int command_args(const char *cmd, int n, char **args, pid_t *pid) {
        uint64_t v;

        if (!pid) {
                if (n == 0)
                        return 0;
                fprintf(stderr, "numabalancectl: %s takes no argument\n", cmd);
                return 2;
        }
        if (n != 1) {
                fprintf(stderr, "numabalancectl: %s takes exactly one PID\n", cmd);
                return 2;
        }
        if (parse_u64(args[0], 1, INT32_MAX, &v) < 0) {
                fprintf(stderr, "numabalancectl: '%s' is not a valid pid\n", args[0]);
                return 2;
        }
        *pid = (pid_t) v;
        return 0;
}

/* The arguments of a command that asks the daemon, into *da: none for status; cgroups
 * and pids for list; one pid or cgroup for explain. Returns 0 or 2 (usage). */
static int daemon_command_args(const char *cmd, int n, char **args, struct daemon_args *da) {
        uint64_t v;

        if (da->cmd == CONTROL_STATUS)
                return command_args(cmd, n, args, NULL);
        if (da->cmd == CONTROL_EXPLAIN && n != 1) {
                fprintf(stderr, "numabalancectl: explain takes exactly one PID or cgroup\n");
                return 2;
        }
        if (n > CONTROL_FILTERS_MAX) {
                fprintf(stderr, "numabalancectl: list takes at most %d cgroups and PIDs\n", CONTROL_FILTERS_MAX);
                return 2;
        }
        for (int i = 0; i < n; i++)
                if (args[i][0] != '/' && parse_u64(args[i], 1, INT32_MAX, &v) < 0) {
                        fprintf(stderr, "numabalancectl: '%s' is neither a pid nor a cgroup path (from \"/\")\n",
                                args[i]);
                        return 2;
                }
        if (da->cmd == CONTROL_LIST) {
                da->filters = args;
                da->n_filters = (size_t) n;
        } else if (args[0][0] == '/')
                da->cgroup = args[0];
        else
                da->pid = (pid_t) strtol(args[0], NULL, 10);
        return 0;
}

int main(int argc, char **argv) {
        struct show_args a = { .proc_root = "/proc", .sys_root = "/sys" };
        struct daemon_args da = { .socket = CONTROL_SOCKET_DEFAULT };
        const char *cmd;
        int r;

        r = parse_options(argc, argv, &a, &da);
        if (r >= 0)
                return r;
        if (optind >= argc) {
                usage(stderr);
                return 2;
        }
        cmd = argv[optind++];

        if (strcmp(cmd, "top") == 0) {
                r = command_args(cmd, argc - optind, argv + optind, NULL);
                if (r)
                        return r;
                if (a.json) {
                        fprintf(stderr, "numabalancectl: top has no --json (status and list have)\n");
                        return 2;
                }
                return ctl_top(&da, top_interval_ms, top_sort);
        }
        if (strcmp(cmd, "show") == 0) {
                r = command_args(cmd, argc - optind, argv + optind, &a.pid);
                if (r)
                        return r;
                return ctl_show(&a) < 0 ? 1 : 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(daemon_commands); i++) {
                if (strcmp(cmd, daemon_commands[i].name) != 0)
                        continue;
                da.cmd = daemon_commands[i].cmd;
                r = daemon_command_args(cmd, argc - optind, argv + optind, &da);
                if (r)
                        return r;
                return ctl_daemon(&da);
        }
        fprintf(stderr, "numabalancectl: unknown command '%s' (try --help)\n", cmd);
        return 2;
}
