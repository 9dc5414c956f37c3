/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalanced: the process. Arguments, the configuration, the service CPUs, the
 * kernel's own NUMA balancing, signals and the sd_notify protocol; the manager
 * (manager.c) owns everything the daemon watches and runs the tick.
 *
 * Order at start, and why:
 *   1. arguments and the configuration: nothing is touched before both are valid;
 *   2. the log level and sink;
 *   3. the whole process is pinned to the service CPUs, before any thread exists (the
 *      migration workers are started by manager_new), so that every thread inherits
 *      the mask and no work ever runs on a workload's CPU;
 *   4. kernel.numa_balancing is detected (and set to 0 if configured: kernel-balancing.c);
 *   5. the event loop: signals, the manager's tick, STATUS= and the watchdog.
 * The daemon never forks (Type=notify): --foreground is accepted for habit's sake. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
/* The sink would be named as every message's CODE_FILE/CODE_LINE: leave them out. */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>
#include "caps.h"
#include "config.h"
#include "control.h"
#include "kernel-balancing.h"
#include "log.h"
#include "manager.h"
#include "nodemask.h"
#include "parse.h"
#include "report.h"
#include "service-cpus.h"

/* How often STATUS= is refreshed from manager_status(). */
#define STATUS_INTERVAL_USEC (5 * UINT64_C(1000000))

struct args {
        const char *config;          /* as named with --config, or the default */
        bool config_named;           /* --config given: a missing file is an error */
        bool check;
        const char *check_file;
        bool once, dry_run, foreground;
        int log_level;               /* -1: from the config */
        const char *proc_root, *sys_root;
        const char *control_socket;  /* CONTROL_SOCKET_DEFAULT, "" for none */
};

struct daemon {
        struct args *args;
        sd_event *event;
        struct manager *manager;
        struct control *control;
        int metrics_error;           /* the last failure to write metrics_path, logged once */
        struct nb_config cfg;        /* running; service_cpus resolved to the pinned set */
        nb_cpumask service_configured;  /* service_cpus as written in the config */
        struct kernel_balancing knb;
};

/* ---- logging ---------------------------------------------------------------- */

/* systemd sets JOURNAL_STREAM=DEV:INO when stdout/stderr are connected to the
 * journal; it is inherited by children whose stderr may go elsewhere, so it only
 * counts when it names our own stderr. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM"), *colon;
        uint64_t dev, ino;
        struct stat st;

        if (!e || !(colon = strchr(e, ':')))
                return false;
        if (parse_u64_n(e, (size_t) (colon - e), 0, UINT64_MAX, &dev) < 0 ||
            parse_u64(colon + 1, 0, UINT64_MAX, &ino) < 0)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (uint64_t) st.st_dev == dev && (uint64_t) st.st_ino == ino;
}

/* Structured fields straight to the journal: the message, its priority, errno, and
 * the fields the message carries (NUMABALANCED_CGROUP=, NUMABALANCED_PID=, ...). */
static void journal_sink(int level, int error, const struct log_fields *fields, const char *msg) {
        char *strs[LOG_FIELDS_MAX + 4] = {};
        struct iovec iov[LOG_FIELDS_MAX + 4];
        size_t n = 0;
        int r = -ENOMEM;

        if (asprintf(&strs[n++], "MESSAGE=%s", msg) < 0 ||
            asprintf(&strs[n++], "PRIORITY=%i", level) < 0 ||
            asprintf(&strs[n++], "SYSLOG_IDENTIFIER=numabalanced") < 0 ||
            (error > 0 && asprintf(&strs[n++], "ERRNO=%i", error) < 0)) {
                strs[n - 1] = NULL;
                goto out;
        }
        for (size_t i = 0; fields && i < fields->n; i++)
                if (asprintf(&strs[n++], "%s=%s", fields->f[i].name, fields->f[i].value) < 0) {
                        strs[n - 1] = NULL;
                        goto out;
                }
        for (size_t i = 0; i < n; i++)
                iov[i] = (struct iovec) { .iov_base = strs[i], .iov_len = strlen(strs[i]) };
        r = sd_journal_sendv(iov, (int) n);
out:
        for (size_t i = 0; i < n; i++)
                free(strs[i]);
        if (r < 0)
                fprintf(stderr, "<%d>%s\n", level, msg);  /* stderr is the journal too */
}

/* Called before any thread exists: every thread created later inherits the mask. */
static int pin_self(const nb_cpumask *cpus) {
        char s[CPUMASK_STRMAX];
        int r;

        cpumask_format(cpus, s, sizeof(s));
        r = cpus_pin_thread(pthread_self(), cpus);
        if (r < 0)
                return log_error_errno(r, "Failed to pin to the service CPUs %s: %m", s);
        log_info("Running on service CPUs %s", s);
        return 0;
}

/* ---- configuration ---------------------------------------------------------- */

/* Loads the config file; a missing default file means the defaults. Errors are
 * logged, all of them. */
static int load_config(const struct args *a, struct nb_config *ret) {
        struct config_errors errs = {};
        int r;

        r = config_load(a->config, ret, &errs);
        if (r == -ENOENT && !a->config_named) {
                log_info("%s does not exist, using the built-in defaults", a->config);
                config_defaults(ret);
                return 0;
        }
        if (r == -EINVAL) {
                for (size_t i = 0; i < errs.n; i++)
                        log_error("%s", errs.msgs[i]);
                log_error("%s has %zu error%s", a->config, errs.n, errs.n == 1 ? "" : "s");
        } else if (r < 0)
                log_error_errno(r, "Failed to read %s: %m", a->config);
        config_errors_done(&errs);
        return r;
}

static int check_config(const struct args *a) {
        const char *path = a->check_file ? a->check_file : a->config;
        bool named = a->check_file || a->config_named;
        struct config_errors errs = {};
        struct nb_config cfg = {};
        int r;

        r = config_load(path, &cfg, &errs);
        if (r == 0) {
                printf("configuration OK\n");
                config_done(&cfg);
                return EXIT_SUCCESS;
        }
        if (r == -ENOENT && !named) {
                printf("%s does not exist: the built-in defaults apply\nconfiguration OK\n", path);
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

/* ---- the event loop --------------------------------------------------------- */

static uint64_t monotonic_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void notify_status(struct daemon *d, bool ready) {
        char status[512];

        manager_status(d->manager, status, sizeof(status));
        sd_notifyf(false, "%sSTATUS=%s", ready ? "READY=1\n" : "", status);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct daemon *d = userdata;

        notify_status(d, false);
        /* A time source fires once; re-arm it. */
        (void) sd_event_source_set_time(s, usec + STATUS_INTERVAL_USEC);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct daemon *d = userdata;

        log_info("Received SIG%s, stopping", sigabbrev_np((int) si->ssi_signo));
        manager_stop(d->manager);
        sd_notify(false, "STOPPING=1");
        return sd_event_exit(d->event, 0);
}

/* The metrics file after every tick. A failure is logged when it first happens (and
 * when it changes), not every tick; so is the recovery. */
static void write_metrics(struct daemon *d) {
        const char *path = d->cfg.metrics_path;
        int r;

        if (!path || !path[0])
                return;
        r = report_write_metrics(d->manager, path);
        if (r < 0 && r != d->metrics_error)
                log_warning_errno(r, "Failed to write the metrics to %s, ignoring: %m", path);
        else if (r >= 0 && d->metrics_error)
                log_info("Writing the metrics to %s again", path);
        d->metrics_error = r < 0 ? r : 0;
}

static void after_tick(struct manager *m, void *userdata) {
        write_metrics(userdata);
}

/* A new configuration: validated completely before anything changes. */
static int reload(struct daemon *d) {
        struct nb_config cfg = {};
        int r;

        r = load_config(d->args, &cfg);
        if (r < 0)
                return r;

        /* The migration workers are pinned one per service CPU when they start; moving
         * them is a restart's job, and a half-applied set would be worse than none. */
        if (!cpumask_equal(&cfg.service_cpus, &d->service_configured)) {
                char old_s[CPUMASK_STRMAX], new_s[CPUMASK_STRMAX];
                cpumask_format(&d->service_configured, old_s, sizeof(old_s));
                cpumask_format(&cfg.service_cpus, new_s, sizeof(new_s));
                log_warning("service_cpus changed from \"%s\" to \"%s\": this takes effect at the next restart, ignoring",
                            old_s, new_s);
        }
        cfg.service_cpus = d->cfg.service_cpus;

        r = manager_reload(d->manager, &cfg);
        if (r < 0) {
                config_done(&cfg);
                return r;
        }
        if (d->args->log_level < 0)
                log_set_max_level(cfg.log_level);
        kernel_balancing_apply(&d->knb, cfg.kernel_numa_balancing, d->args->dry_run);
        config_done(&d->cfg);
        d->cfg = cfg;
        return 0;
}

/* SIGHUP, also what Type=notify-reload sends. The RELOADING=1 ... READY=1 pair is sent
 * whether or not the new file is accepted: systemd waits for READY=1 to end the reload,
 * and a refused reload leaves a daemon that runs fine on its previous configuration;
 * the refusal is in the journal and in STATUS=. */
static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct daemon *d = userdata;
        char status[512];
        int r;

        sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, monotonic_usec());
        log_info("Received SIGHUP, reloading %s", d->args->config);
        r = reload(d);
        if (r < 0) {
                log_error("Reload refused, keeping the running configuration");
                snprintf(status, sizeof(status), "Reload refused: %s has errors, running on the previous configuration",
                         d->args->config);
                sd_notifyf(false, "READY=1\nSTATUS=%s", status);
                return 0;
        }
        notify_status(d, true);
        return 0;
}

static int run(struct daemon *d) {
        sigset_t ss;
        int r;

        r = sd_event_default(&d->event);
        if (r < 0)
                return log_error_errno(r, "Failed to create the event loop: %m");

        /* Blocked here, before any thread exists, so that every thread inherits the
         * mask and the signals are only ever seen through the loop's signalfd. Not
         * with --once, which runs no loop: there SIGTERM keeps its default action. */
        if (d->args->once)
                goto manager;
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
                return log_error_errno(-errno, "Failed to block signals: %m");
        r = sd_event_add_signal(d->event, NULL, SIGTERM, on_terminate, d);
        if (r >= 0)
                r = sd_event_add_signal(d->event, NULL, SIGINT, on_terminate, d);
        if (r >= 0)
                r = sd_event_add_signal(d->event, NULL, SIGHUP, on_reload, d);
        if (r < 0)
                return log_error_errno(r, "Failed to add the signal handlers: %m");

manager:
        r = manager_new(d->event, &d->cfg, &(struct manager_opts) {
                                .dry_run = d->args->dry_run,
                                .proc_root = d->args->proc_root,
                                .sys_root = d->args->sys_root,
                        }, &d->manager);
        if (r < 0)
                return log_error_errno(r, "Failed to start the manager: %m");

        if (d->args->once) {
                r = manager_tick(d->manager);
                if (r < 0)
                        return log_error_errno(r, "The tick failed: %m");
                write_metrics(d);
                return 0;
        }

        if (d->args->control_socket[0]) {
                r = control_new(d->event, d->args->control_socket, d->manager, &d->control);
                if (r < 0)
                        return r;
        }
        manager_set_after_tick(d->manager, after_tick, d);
        manager_set_while_moving(d->manager, control_pump, d->control);
        r = manager_start(d->manager);
        if (r < 0)
                return r;
        /* Floating: owned by the loop, freed with it. */
        r = sd_event_add_time_relative(d->event, NULL, CLOCK_MONOTONIC, STATUS_INTERVAL_USEC, 0,
                                       on_status_timer, d);
        if (r < 0)
                return log_error_errno(r, "Failed to add the status timer: %m");

        notify_status(d, true);

        /* WATCHDOG=1 at half of WATCHDOG_USEC, when the unit sets WatchdogSec=; it is
         * sent from the loop, so a stuck tick stops it. Enabled after READY=1 because
         * enabling sends the first ping at once. */
        r = sd_event_set_watchdog(d->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog, ignoring: %m");
        else if (r > 0)
                log_debug("Watchdog enabled");

        r = sd_event_loop(d->event);
        if (r < 0)
                return log_error_errno(r, "The event loop failed: %m");
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
               "  -l, --log-level LEVEL    err, warning, notice, info or debug (wins over the config)\n"
               "      --proc-root DIR      where /proc is (for tests; default /proc)\n"
               "      --sys-root DIR       where /sys is (for tests; default /sys)\n"
               "      --control-socket PATH where numabalancectl connects (default %s;\n"
               "                           \"\" for none)\n"
               "  -V, --version            print the version and exit\n"
               "  -h, --help               print this help and exit\n",
               CONFIG_DEFAULT_PATH, CONTROL_SOCKET_DEFAULT);
}

enum { OPT_ONCE = 256, OPT_CHECK, OPT_PROC_ROOT, OPT_SYS_ROOT, OPT_CONTROL_SOCKET };

/* Returns 1 to go on, 0 to exit successfully (--help, --version), -EINVAL on misuse. */
static int parse_args(int argc, char **argv, struct args *a) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "foreground", no_argument, NULL, 'f' },
                { "once", no_argument, NULL, OPT_ONCE },
                { "dry-run", no_argument, NULL, 'n' },
                { "check-config", optional_argument, NULL, OPT_CHECK },
                { "log-level", required_argument, NULL, 'l' },
                { "proc-root", required_argument, NULL, OPT_PROC_ROOT },
                { "sys-root", required_argument, NULL, OPT_SYS_ROOT },
                { "control-socket", required_argument, NULL, OPT_CONTROL_SOCKET },
                { "version", no_argument, NULL, 'V' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
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
                case OPT_CHECK:
                        a->check = true;
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
        if (a.check)
                return check_config(&a);

        if (stderr_is_journal())
                log_set_sink(journal_sink);
        if (a.log_level >= 0)
                log_set_max_level(a.log_level);

        r = load_config(&a, &d.cfg);
        if (r < 0)
                return EXIT_FAILURE;
        if (a.log_level < 0)
                log_set_max_level(d.cfg.log_level);

        /* Before any other work, and before any thread exists. */
        d.service_configured = d.cfg.service_cpus;
        r = service_cpus_resolve(&d.service_configured, a.sys_root, &d.cfg.service_cpus);
        if (r >= 0)
                r = pin_self(&d.cfg.service_cpus);
        if (r < 0) {
                config_done(&d.cfg);
                return EXIT_FAILURE;
        }

        (void) caps_check(&d.cfg);
        r = kernel_balancing_init(&d.knb, a.proc_root);
        if (r >= 0) {
                kernel_balancing_apply(&d.knb, d.cfg.kernel_numa_balancing, a.dry_run);
                r = run(&d);
        }

        control_free(d.control);
        manager_free(d.manager);
        kernel_balancing_done(&d.knb);
        sd_event_unref(d.event);
        config_done(&d.cfg);
        if (r < 0)
                sd_notifyf(false, "ERRNO=%i", -r);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
