/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalanced: the process. Arguments, the configuration, what must hold before the
 * work starts, then the manager (manager.c), which owns everything the daemon watches
 * and runs the tick, and the event loop.
 *
 * Order at start, and why:
 *   1. arguments and the configuration: nothing is touched before both are valid;
 *   2. the log level and sink (journal-log.c);
 *   3. the whole process is pinned to the service CPUs (service-cpus.c), before any
 *      thread exists (the migration workers are started by manager_new), so that every
 *      thread inherits the mask and no work ever runs on a workload's CPU;
 *   4. the capabilities are checked (caps.c), the soft limit of open files is raised
 *      to the hard one (raise_nofile()), and kernel.numa_balancing is read, and set
 *      to 0 if configured (kernel-balancing.c);
 *   5. the signals are blocked, again before any thread exists (lifecycle.c);
 *   6. the manager, the control socket (control.c) and the event loop, which carries
 *      the ticks, the signals, STATUS= and the watchdog.
 * The daemon never forks (Type=notify): --foreground is accepted for habit's sake.
 *
 * --restore-affinity is not the daemon: it gives back the CPU affinities a daemon that
 * did not exit cleanly left narrowed (affinity_recover(), what a start does first) and
 * exits, reading no configuration, opening no socket, loading no BPF program. The
 * unit runs it as ExecStopPost= and the package's prerm on removal. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>
#include "affinity.h"
#include "caps.h"
#include "config.h"
#include "control.h"
#include "journal-log.h"
#include "kernel-balancing.h"
#include "kernel-requirements.h"
#include "lifecycle.h"
#include "log.h"
#include "manager.h"
#include "metrics.h"
#include "nodemask.h"
#include "parse.h"
#include "service-cpus.h"
#include "state-dir.h"

struct args {
        const char *config;          /* as named with --config, or the default */
        bool config_named;           /* --config given: a missing file is an error */
        bool check;
        bool print;                  /* --print-config */
        const char *check_file;
        const char *check_of;        /* --check-config-of PID */
        bool once, dry_run, foreground;
        bool restore_affinity;       /* --restore-affinity: only that, then exit */
        int log_level;               /* -1: from the config */
        const char *proc_root, *sys_root;
        const char *control_socket;  /* CONTROL_SOCKET_DEFAULT, "" for none */
};

struct daemon {
        struct args *args;
        sd_event *event;
        struct manager *manager;
        struct control *control;
        struct lifecycle life;
        struct metrics_state metrics; /* the metrics file's last outcome, logged when it changes */
        struct nb_config cfg;        /* running; service_cpus resolved to the pinned set */
        nb_cpumask service_configured;  /* service_cpus as written in the config */
        struct kernel_balancing knb;
};

/* ---- configuration ---------------------------------------------------------- */

/* Loads the config file and its .d directory; a missing default file means the
 * defaults (with the directory's files). Errors are logged, all of them. */
static int load_config(const struct args *a, struct nb_config *ret) {
        struct config_errors errs = {};
        struct config_files files = {};
        int r;

        r = config_load(a->config, a->config_named ? 0 : CONFIG_MAIN_OPTIONAL, ret, &errs, &files);
        for (size_t i = 0; r == 0 && i < files.notes.n; i++)
                log_info("%s", files.notes.msgs[i]);
        config_files_done(&files);
        if (r == 0 && files.main_missing && !files.n_dropins)
                log_info("%s does not exist, using the built-in defaults", a->config);
        else if (r == 0 && files.main_missing)
                log_info("%s does not exist, using the built-in defaults and %zu file%s of %s.d", a->config,
                         files.n_dropins, files.n_dropins == 1 ? "" : "s", a->config);
        else if (r == 0 && files.n_dropins)
                log_info("Read %s and %zu file%s of %s.d", a->config, files.n_dropins,
                         files.n_dropins == 1 ? "" : "s", a->config);
        if (r == -EINVAL) {
                for (size_t i = 0; i < errs.n; i++)
                        log_error("%s", errs.msgs[i]);
                log_error("The configuration (%s and %s.d) has %zu error%s", a->config, a->config, errs.n,
                          errs.n == 1 ? "" : "s");
        } else if (r < 0)
                log_error_errno(r, "Failed to read %s: %m", a->config);
        config_errors_done(&errs);
        return r;
}

/* The exit status of a start refused for its configuration (systemd.exec(5), the
 * LSB's "program is not configured"). */
#define EXIT_NOT_CONFIGURED 6

/* The rules that match no cgroup of the tree now: valid, but likely not what was
 * meant (a unit's path guessed wrong, a name with a typo). */
static void print_unmatched(const struct nb_config *cfg) {
        struct cgroup_selection sel = {};
        char text[PATH_MAX + 64];

        if (!cfg->n_cgroups)
                return;
        if (cgroup_select(cfg->cgroup_root, cfg->cgroups, cfg->n_cgroups, &sel) < 0) {
                printf("%s: cannot walk it: which cgroups the rules match is not known\n", cfg->cgroup_root);
                return;
        }
        for (size_t i = 0; i < sel.n_rules; i++)
                if (!sel.rule_matched[i]) {
                        config_report_rule(&cfg->cgroups[i], text, sizeof(text));
                        printf("[select] %s: matches no cgroup under %s now (`systemctl show -P ControlGroup UNIT` "
                               "prints a unit's path)\n", text, cfg->cgroup_root);
                }
        cgroup_selection_done(&sel);
}

/* --print-config: the effective configuration, each value with where it was set. */
static int print_config(const struct args *a) {
        const char *path = a->check_file ? a->check_file : a->config;
        struct config_errors errs = {};
        int r = config_print(path, a->check_file || a->config_named ? 0 : CONFIG_MAIN_OPTIONAL, stdout, &errs);

        for (size_t i = 0; i < errs.n; i++)
                fprintf(stderr, "%s\n", errs.msgs[i]);
        if (r < 0 && r != -EINVAL)
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
        config_errors_done(&errs);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int check_config(const struct args *a) {
        const char *path = a->check_file ? a->check_file : a->config;
        bool named = a->check_file || a->config_named;
        struct config_errors errs = {};
        struct config_files files = {};
        struct nb_config cfg = {};
        int r;

        r = config_load(path, named ? 0 : CONFIG_MAIN_OPTIONAL, &cfg, &errs, &files);
        if (r == 0) {
                if (files.main_missing)
                        printf("%s does not exist: the built-in defaults apply\n", path);
                if (files.n_dropins)
                        printf("%zu drop-in file%s read\n", files.n_dropins, files.n_dropins == 1 ? "" : "s");
                for (size_t i = 0; i < files.notes.n; i++)
                        printf("%s\n", files.notes.msgs[i]);
                config_files_done(&files);
                print_unmatched(&cfg);
                printf("configuration OK\n");
                config_done(&cfg);
                return EXIT_SUCCESS;
        }
        if (r == -EINVAL)
                for (size_t i = 0; i < errs.n; i++)
                        fprintf(stderr, "%s\n", errs.msgs[i]);
        else
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
        config_errors_done(&errs);
        return EXIT_FAILURE;
}

static int parse_args(int argc, char **argv, struct args *a);

/* --check-config-of PID: the file the running daemon PID would read at its next
 * reload, checked as --check-config checks one: its own command line (from
 * /proc/PID/cmdline) parsed as it parsed it, so that a unit whose ExecStart= names
 * another --config (a drop-in) has that file checked, not the default. */
static int check_config_of(const char *pid_text, const char *proc_root) {
        _cleanup_free_ char *cmdline = NULL;
        _cleanup_free_ char **argv = NULL;
        char path[PATH_MAX];
        struct args running = { .config = CONFIG_DEFAULT_PATH, .log_level = -1, .proc_root = "/proc",
                                .sys_root = "/sys", .control_socket = CONTROL_SOCKET_DEFAULT };
        size_t len = 0, argc = 0;
        int pid, r;

        if (parse_int(pid_text, 1, INT32_MAX, &pid) < 0) {
                fprintf(stderr, "--check-config-of: \"%s\" is not a process id\n", pid_text);
                return EXIT_FAILURE;
        }
        snprintf(path, sizeof(path), "%s/%d/cmdline", proc_root, (int) pid);
        r = parse_read_file_at(AT_FDCWD, path, 65536, &cmdline, &len);
        if (r < 0 || len == 0) {
                fprintf(stderr, "--check-config-of: cannot read the command line of process %d: %s\n", (int) pid,
                        r < 0 ? strerror(-r) : "it has none (not a running daemon)");
                return EXIT_FAILURE;
        }
        argv = calloc(len + 2, sizeof(*argv));
        if (!argv)
                return EXIT_FAILURE;
        for (size_t i = 0; i < len; i += strlen(cmdline + i) + 1)
                argv[argc++] = cmdline + i;
        optind = 0;     /* getopt_long() from the start again, on that argv */
        opterr = 0;
        if (parse_args((int) argc, argv, &running) <= 0 || running.check || running.check_of || running.restore_affinity) {
                fprintf(stderr, "--check-config-of: process %d does not run as a numabalanced daemon\n", (int) pid);
                return EXIT_FAILURE;
        }
        return check_config(&running);
}

/* A new configuration (SIGHUP, through lifecycle.c): validated completely before
 * anything changes. */
/* A clean stop takes its metrics file along: a file left behind looks, to the
 * textfile collector, like a daemon that stopped ticking (an alert), where the
 * operator stopped it. A crash leaves it, and its age says so. */
static void remove_metrics(const struct daemon *d) {
        const char *path = d->cfg.metrics_path;

        if (path && *path && unlink(path) < 0 && errno != ENOENT)
                log_warning_errno(-errno, "Failed to remove the metrics file %s: %m", path);
}

static bool streq_null(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}

/* The keys chosen once at start (the samplers, daemon/samplers.h; the workers' CPUs;
 * DAMON's kdamonds): a reload that changes one keeps the running value, says so in
 * the log and in status (config-report.h), and the next restart applies it. */
static void keep_start_keys(struct daemon *d, struct nb_config *cfg, struct config_not_applied *v, size_t *n) {
#define KEEP(field, key) do {                                                                    \
                if (memcmp(&cfg->field, &d->cfg.field, sizeof(cfg->field)) != 0 && *n < CONFIG_NOT_APPLIED_MAX) \
                        v[(*n)++] = (struct config_not_applied) { key, "chosen at start: the next restart applies it" }; \
                memcpy(&cfg->field, &d->cfg.field, sizeof(cfg->field));                          \
        } while (0)
        KEEP(source, "sample.source");
        KEEP(pmu, "sample.pmu");
        KEEP(pmu_sample_rate, "sample.pmu_sample_rate");
        KEEP(software_sample_rate, "sample.software_sample_rate");
        KEEP(damon, "sample.damon");
#undef KEEP
        if (!cpumask_equal(&cfg->service_cpus, &d->service_configured) && *n < CONFIG_NOT_APPLIED_MAX)
                v[(*n)++] = (struct config_not_applied) { "daemon.service_cpus",
                                                          "the workers are pinned at start: the next restart applies it" };
        cfg->service_cpus = d->cfg.service_cpus;
        if (!streq_null(cfg->replay_path, d->cfg.replay_path) && *n < CONFIG_NOT_APPLIED_MAX)
                v[(*n)++] = (struct config_not_applied) { "sample.replay_path",
                                                          "chosen at start: the next restart applies it" };
        for (size_t i = 0; i < *n; i++)
                log_warning("[%.*s] %s changed: not applied by the reload (%s)",
                            (int) (strchr(v[i].key, '.') - v[i].key), v[i].key, strchr(v[i].key, '.') + 1, v[i].why);
}

static int reload_config(struct daemon *d, struct config_not_applied *not_applied, size_t *n_not_applied) {
        struct nb_config cfg = {};
        int r;

        r = load_config(d->args, &cfg);
        if (r < 0)
                return r;
        r = kernel_requirements_cgroup_root(&cfg, strcmp(cfg.cgroup_root, d->cfg.cgroup_root) != 0);
        if (r < 0) {
                config_done(&cfg);
                return r;
        }

        /* The migration workers are pinned one per service CPU when they start, the
         * samplers chosen and DAMON's kdamonds made: a half-applied set would be worse
         * than none. */
        keep_start_keys(d, &cfg, not_applied, n_not_applied);

        r = manager_reload(d->manager, &cfg);
        if (r < 0) {
                config_done(&cfg);
                return r;
        }
        if (d->args->log_level < 0)
                log_set_max_level(cfg.log_level);
        kernel_balancing_apply(&d->knb, cfg.kernel_numa_balancing, d->args->dry_run);
        /* A metrics file at a path no longer configured would look, to the textfile
         * collector, like a daemon that stopped ticking. */
        if (!streq_null(cfg.metrics_path, d->cfg.metrics_path))
                remove_metrics(d);
        config_done(&d->cfg);
        d->cfg = cfg;
        return 0;
}

/* reload_config(), its outcome kept for the metrics. */
static int reload(void *userdata) {
        struct daemon *d = userdata;
        struct config_not_applied v[CONFIG_NOT_APPLIED_MAX];
        size_t n = 0;
        int r = reload_config(d, v, &n);

        manager_note_reload(d->manager, r >= 0, v, n);
        return r;
}

/* ---- --restore-affinity ------------------------------------------------------- */

/* How long --restore-affinity waits for the state directory's lock: a daemon being
 * killed holds it until it is gone. */
#define RESTORE_LOCK_WAIT_MS 3000

/* The state directory locked as a running daemon locks it (kernel-balancing.c): a
 * running daemon owns the file and gives its threads back itself. Returns the locked
 * descriptor, -ENOENT (no directory: nothing to restore), -EWOULDBLOCK (held), or
 * another -errno. */
static int lock_state_dir(const char *state_path) {
        _cleanup_free_ char *dir = strndup(state_path, (size_t) (strrchr(state_path, '/') - state_path));

        if (!dir)
                return -ENOMEM;
        return state_dir_lock(*dir ? dir : "/", false, RESTORE_LOCK_WAIT_MS);
}

/* --restore-affinity: exit 0 unless the state file exists and could not be read (or
 * not emptied after). */
static int restore_affinity(const struct args *a) {
        _cleanup_free_ char *path = affinity_store_path_default();
        struct affinity_keeper *k;
        struct affinity_counts c = {};
        bool found;
        int lock, r;

        if (!path || !strchr(path, '/')) {
                fprintf(stderr, "numabalanced: out of memory\n");
                return EXIT_FAILURE;
        }
        lock = lock_state_dir(path);
        if (lock == -ENOENT) {
                printf("%s: no state file: no thread's affinity to give back\n", path);
                return EXIT_SUCCESS;
        }
        if (lock == -EWOULDBLOCK) {
                printf("%s: a running numabalanced holds its directory and gives its threads back itself: "
                       "nothing done\n", path);
                return EXIT_SUCCESS;
        }
        if (lock < 0)
                log_warning_errno(lock, "Failed to lock the directory of %s, going on without: %m", path);
        k = affinity_keeper_new(path, a->proc_root);
        if (!k) {
                if (lock >= 0)
                        close(lock);
                return EXIT_FAILURE;
        }
        r = affinity_recover(k, &c);
        found = affinity_recover_found_file(k);
        affinity_keeper_free(k);
        if (lock >= 0)
                close(lock);
        if (!found) {
                printf("%s: no state file: no thread's affinity to give back\n", path);
                return EXIT_SUCCESS;
        }
        printf("%s: %u thread(s) given their original affinity back, %u left alone (changed since), %u gone, "
               "%u failed\n", path, c.restored, c.left_alone, c.gone, c.failed);
        if (r < 0) {
                fprintf(stderr, "numabalanced: %s could not be read, or not emptied after (%s): no thread's "
                        "affinity was given back from it (the messages above say why, and where it is kept)\n",
                        path, strerror(-r));
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}

/* ---- running ---------------------------------------------------------------- */

static void after_tick(const struct manager_view *v, void *userdata) {
        struct daemon *d = userdata;

        metrics_update_file(v, d->cfg.metrics_path, d->cfg.metrics_group, &d->metrics);
}

/* --once: one tick and the metrics file, no loop. */
static int run_once(struct daemon *d) {
        int r;

        r = manager_tick(d->manager);
        if (r < 0)
                return log_error_errno(r, "The tick failed: %m");
        after_tick(manager_view(d->manager), d);
        return 0;
}


static int run(struct daemon *d) {
        int r;

        r = sd_event_default(&d->event);
        if (r < 0)
                return log_error_errno(r, "Failed to create the event loop: %m");
        /* Not with --once, which runs no loop: there SIGTERM keeps its default action. */
        if (!d->args->once) {
                d->life = (struct lifecycle) {
                        .event = d->event,
                        .config = d->args->config,
                        .reload = reload,
                        .userdata = d,
                };
                r = lifecycle_init(&d->life);
                if (r < 0)
                        return r;
        }

        r = manager_new(d->event, &d->cfg, &(struct manager_opts) {
                                .dry_run = d->args->dry_run,
                                .proc_root = d->args->proc_root,
                                .sys_root = d->args->sys_root,
                                /* Threads are placed only by the instance that holds
                                 * the state directory, and never by --once. */
                                .state_dir = d->args->once || !kernel_balancing_owns_state(&d->knb) ?
                                             NULL : d->knb.state_dir,
                        }, &d->manager);
        if (r < 0)
                return log_error_errno(r, "Failed to start the manager: %m");
        if (d->args->once)
                return run_once(d);

        if (d->args->control_socket[0]) {
                r = control_new(d->event, d->args->control_socket, d->manager, &d->control);
                if (r < 0)
                        return r;
        }
        manager_set_after_tick(d->manager, after_tick, d);
        manager_set_while_moving(d->manager, control_pump, d->control);
        manager_set_keepalive(d->manager, lifecycle_keepalive, &d->life);
        r = manager_start(d->manager);
        if (r < 0)
                return r;
        r = lifecycle_ready(&d->life, d->manager);
        if (r < 0)
                return r;

        r = sd_event_loop(d->event);
        if (r < 0)
                return log_error_errno(r, "The event loop failed: %m");
        remove_metrics(d);
        return r;
}

/* ---- arguments -------------------------------------------------------------- */

static void help(void) {
        printf("Usage: numabalanced [OPTIONS]\n"
               "Moves memory of opted-in cgroups toward the CPUs that use it, within each\n"
               "process's allowed nodes, from reserved service CPUs.\n\n"
               "  -c, --config FILE        configuration file (default %s)\n"
               "  -f, --foreground         accepted for compatibility: the daemon never forks\n"
               "      --once               run one tick, then exit\n"
               "  -n, --dry-run            plan and log, move nothing, change no sysctl\n"
               "      --check-config [FILE] check the configuration, print \"configuration OK\"\n"
               "                           or every error, and exit\n"
               "      --print-config [FILE] print the effective configuration, each value with the\n"
               "                           FILE:LINE that set it (or \"default\"), and exit\n"
               "      --check-config-of PID  the same for the file the running daemon PID reads\n"
               "                           (its own --config, or the default): ExecReload=\n"
               "      --restore-affinity   give back the CPU affinities a daemon that did not exit\n"
               "                           cleanly left narrowed, and exit: ExecStopPost=\n"
               "  -l, --log-level LEVEL    err, warning, notice, info or debug (wins over the config)\n"
               "      --proc-root DIR      where /proc is (for tests; default /proc)\n"
               "      --sys-root DIR       where /sys is (for tests; default /sys)\n"
               "      --control-socket PATH where numabalancectl connects (default %s;\n"
               "                           \"\" for none)\n"
               "  -V, --version            print the version and exit\n"
               "  -h, --help               print this help and exit\n",
               CONFIG_DEFAULT_PATH, CONTROL_SOCKET_DEFAULT);
}

enum { OPT_ONCE = 256, OPT_CHECK, OPT_PRINT, OPT_CHECK_OF, OPT_PROC_ROOT, OPT_SYS_ROOT, OPT_CONTROL_SOCKET, OPT_RESTORE_AFFINITY };

static const struct option options[] = {
        { "config", required_argument, NULL, 'c' },
        { "foreground", no_argument, NULL, 'f' },
        { "once", no_argument, NULL, OPT_ONCE },
        { "dry-run", no_argument, NULL, 'n' },
        { "check-config", optional_argument, NULL, OPT_CHECK },
        { "check-config-of", required_argument, NULL, OPT_CHECK_OF },
        { "print-config", optional_argument, NULL, OPT_PRINT },
        { "restore-affinity", no_argument, NULL, OPT_RESTORE_AFFINITY },
        { "log-level", required_argument, NULL, 'l' },
        { "proc-root", required_argument, NULL, OPT_PROC_ROOT },
        { "sys-root", required_argument, NULL, OPT_SYS_ROOT },
        { "control-socket", required_argument, NULL, OPT_CONTROL_SOCKET },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        {},
};

/* Returns 1 to go on, 0 to exit successfully (--help, --version), -EINVAL on misuse. */
static int parse_args(int argc, char **argv, struct args *a) {
        int c;

        /* '+': stop at the first non-option, so that "--check-config FILE" can take
         * FILE as its optional argument. */
        while ((c = getopt_long(argc, argv, "+c:fnl:Vh", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        a->config = optarg;
                        a->config_named = true;
                        break;
                case 'f':
                        a->foreground = true;
                        break;
                case OPT_ONCE:
                        a->once = true;
                        break;
                case 'n':
                        a->dry_run = true;
                        break;
                case OPT_CHECK_OF:
                        a->check_of = optarg;
                        break;
                case OPT_RESTORE_AFFINITY:
                        a->restore_affinity = true;
                        break;
                case OPT_PRINT:
                        a->print = true;
                        __attribute__((fallthrough));  /* FILE as --check-config takes it */
                case OPT_CHECK:
                        a->check = !a->print;
                        if (optarg)
                                a->check_file = optarg;
                        else if (optind < argc && argv[optind][0] != '-')
                                a->check_file = argv[optind++];
                        break;
                case 'l':
                        a->log_level = log_parse_level(optarg);
                        if (a->log_level < 0) {
                                fprintf(stderr, "--log-level: unknown level \"%s\" (accepted: err, warning, notice, info, debug)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case OPT_PROC_ROOT:
                        a->proc_root = optarg;
                        break;
                case OPT_SYS_ROOT:
                        a->sys_root = optarg;
                        break;
                case OPT_CONTROL_SOCKET:
                        if (optarg[0] && optarg[0] != '/') {
                                fprintf(stderr, "--control-socket: \"%s\" is not an absolute path\n", optarg);
                                return -EINVAL;
                        }
                        a->control_socket = optarg;
                        break;
                case 'V':
                        printf("numabalanced %s\n", PACKAGE_VERSION);
                        return 0;
                case 'h':
                        help();
                        return 0;
                default:
                        fprintf(stderr, "Try 'numabalanced --help'.\n");
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "numabalanced: unexpected argument \"%s\"; try 'numabalanced --help'.\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/* The daemon holds a descriptor per process being balanced (its pidfd), one per
 * control connection and one per level of the cgroup walk: the soft limit of 1024
 * that a shell or an old unit gives is raised to the hard limit (the unit sets
 * LimitNOFILE=), so that the bound is the operator's. Its select(2)-era meaning does
 * not apply: the daemon uses epoll and poll only. A failure is logged and harmless:
 * every user of descriptors copes with EMFILE. */
static void raise_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
                log_debug_errno(-errno, "Failed to read RLIMIT_NOFILE, leaving it: %m");
                return;
        }
        if (rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_warning_errno(-errno, "Failed to raise the open file limit to %llu, leaving it: %m",
                                  (unsigned long long) rl.rlim_max);
}

/* Before any other work, and before any thread exists. */
static int pin_to_service_cpus(struct daemon *d) {
        int r;

        d->service_configured = d->cfg.service_cpus;
        r = service_cpus_resolve(&d->service_configured, d->args->sys_root, &d->cfg.service_cpus);
        if (r < 0)
                return r;
        return service_cpus_pin_process(&d->cfg.service_cpus);
}

int main(int argc, char **argv) {
        struct args a = {
                .config = CONFIG_DEFAULT_PATH,
                .log_level = -1,
                .proc_root = "/proc",
                .sys_root = "/sys",
                .control_socket = CONTROL_SOCKET_DEFAULT,
        };
        struct daemon d = { .args = &a };
        int r;

        r = parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (a.check_of)
                return check_config_of(a.check_of, a.proc_root);
        if (a.print)
                return print_config(&a);
        if (a.check)
                return check_config(&a);
        if (a.restore_affinity) {
                (void) journal_log_setup();
                if (a.log_level >= 0)
                        log_set_max_level(a.log_level);
                return restore_affinity(&a);
        }

        (void) journal_log_setup();
        if (a.log_level >= 0)
                log_set_max_level(a.log_level);
        r = load_config(&a, &d.cfg);
        if (r < 0)
                /* "Not configured" (the LSB's 6): the unit's RestartPreventExitStatus=6
                 * does not restart on it, every 5 s for ever, until the file is fixed. */
                return EXIT_NOT_CONFIGURED;
        if (a.log_level < 0)
                log_set_max_level(d.cfg.log_level);
        if (kernel_requirements_check() < 0 || kernel_requirements_cgroup_root(&d.cfg, true) < 0) {
                config_done(&d.cfg);
                return EXIT_FAILURE;
        }

        r = pin_to_service_cpus(&d);
        if (r < 0) {
                config_done(&d.cfg);
                return EXIT_FAILURE;
        }
        (void) caps_check(&d.cfg);
        raise_nofile();
        r = kernel_balancing_init(&d.knb, a.proc_root, NULL);
        if (r >= 0) {
                kernel_balancing_apply(&d.knb, d.cfg.kernel_numa_balancing, a.dry_run);
                r = run(&d);
        }

        control_free(d.control);
        manager_free(d.manager);
        kernel_balancing_done(&d.knb);
        metrics_state_done(&d.metrics);
        sd_event_unref(d.event);
        config_done(&d.cfg);
        if (r < 0)
                lifecycle_failed(r);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
