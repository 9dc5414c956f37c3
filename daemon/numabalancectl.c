/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl: the operator's window onto numabalanced.
 *
 *   show PID     standalone (no daemon needed): a process's memory placement per VMA
 *                and per node, against where its threads run.
 *   status       the daemon: sources, service CPUs, kernel balancing, totals;
 *   list         the cgroups and processes it watches, with locality and costs;
 *   explain PID  why a process is or is not being moved.
 *                These three ask the daemon over its control socket (control.h).
 *
 * Exit status: 0 on success, 1 when the request failed (one line on stderr naming
 * the pid and the reason), 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "build-config.h"
#include "control.h"
#include "ctl-daemon.h"
#include "ctl-show.h"
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
                "  list            Cgroups and processes watched: mode, memory per node,\n"
                "                  pages moved and refused, the daemon's CPU time on each\n"
                "  explain PID     Why a process is or is not being moved\n"
                "\n"
                "Options:\n"
                "  --json          Machine-readable output (see numabalancectl(8))\n"
                "  --pretty        Indent the JSON\n"
                "  --all           show: list VMAs that hold no pages too\n"
                "  --proc-root DIR Read processes from DIR instead of /proc\n"
                "  --sys-root DIR  Read the topology from DIR instead of /sys\n"
                "  --socket PATH   The daemon's control socket (default " CONTROL_SOCKET_DEFAULT ")\n"
                "  -h, --help      This help\n"
                "  --version       Version\n");
}

int main(int argc, char **argv) {
        enum { OPT_JSON = 256, OPT_PRETTY, OPT_ALL, OPT_PROC, OPT_SYS, OPT_VERSION, OPT_SOCKET };
        static const struct option opts[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "pretty", no_argument, NULL, OPT_PRETTY },
                { "all", no_argument, NULL, OPT_ALL },
                { "proc-root", required_argument, NULL, OPT_PROC },
                { "sys-root", required_argument, NULL, OPT_SYS },
                { "socket", required_argument, NULL, OPT_SOCKET },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                {}
        };
        struct show_args a = { .proc_root = "/proc", .sys_root = "/sys" };
        struct daemon_args da = { .socket = CONTROL_SOCKET_DEFAULT };
        const char *cmd;
        int c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON: a.json = true; break;
                case OPT_PRETTY: a.json = a.pretty = true; break;
                case OPT_ALL: a.all = true; break;
                case OPT_PROC: a.proc_root = optarg; break;
                case OPT_SYS: a.sys_root = optarg; break;
                case OPT_SOCKET: da.socket = optarg; break;
                case OPT_VERSION: printf("numabalancectl %s\n", PACKAGE_VERSION); return 0;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind >= argc) {
                usage(stderr);
                return 2;
        }
        cmd = argv[optind++];

        if (strcmp(cmd, "show") == 0) {
                uint64_t pid;
                if (argc - optind != 1) {
                        fprintf(stderr, "numabalancectl: show takes exactly one PID\n");
                        return 2;
                }
                if (parse_u64(argv[optind], 1, INT32_MAX, &pid) < 0) {
                        fprintf(stderr, "numabalancectl: '%s' is not a valid pid\n", argv[optind]);
                        return 2;
                }
                a.pid = (pid_t) pid;
                return ctl_show(&a) < 0 ? 1 : 0;
        }
        if (strcmp(cmd, "status") == 0 || strcmp(cmd, "list") == 0) {
                if (argc - optind != 0) {
                        fprintf(stderr, "numabalancectl: %s takes no argument\n", cmd);
                        return 2;
                }
                da.command = cmd;
                da.json = a.json;
                return ctl_daemon(&da);
        }
        if (strcmp(cmd, "explain") == 0) {
                uint64_t pid;
                if (argc - optind != 1) {
                        fprintf(stderr, "numabalancectl: explain takes exactly one PID\n");
                        return 2;
                }
                if (parse_u64(argv[optind], 1, INT32_MAX, &pid) < 0) {
                        fprintf(stderr, "numabalancectl: '%s' is not a valid pid\n", argv[optind]);
                        return 2;
                }
                da.command = cmd;
                da.json = a.json;
                da.pid = (pid_t) pid;
                return ctl_daemon(&da);
        }
        fprintf(stderr, "numabalancectl: unknown command '%s' (try --help)\n", cmd);
        return 2;
}
