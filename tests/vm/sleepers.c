/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Many idle processes, each in a cgroup of its own choosing, cheaply: one child per
 * PROCS_FILE argument joins that cgroup (writes 0 to its cgroup.procs) and sleeps.
 * Prints "ready N" once all N children have joined; on SIGTERM or SIGINT kills and
 * reaps them all, then exits 0. hostile-tenant's 2,000 processes as fork and exec of
 * sleep(1) took 139 s under TCG (70 ms an exec); forks of this small process do not
 * load a program each.
 *
 *   sleepers PROCS_FILE... */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child: into its cgroup, then asleep until killed (or orphaned: the parent's
 * death kills it, so that no sleeper outlives a crashed test). Reports a failure to
 * join through its exit status. */
static void child(const char *procs_file, pid_t parent) {
        int fd;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(3);
        fd = open(procs_file, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1) {
                fprintf(stderr, "sleepers: joining %s: %s\n", procs_file, strerror(errno));
                _exit(2);
        }
        close(fd);
        /* Joined: one byte to the parent (stdout is the pipe's write end). */
        if (write(STDOUT_FILENO, "j", 1) != 1)
                _exit(3);
        close(STDOUT_FILENO);
        for (;;)
                pause();
}

int main(int argc, char **argv) {
        int n = argc - 1, joined = 0, status;
        pid_t parent = getpid(), *pids;
        sigset_t stop;
        int sig;

        if (n < 1) {
                fprintf(stderr, "usage: sleepers PROCS_FILE...\n");
                return 1;
        }
        pids = calloc((size_t) n, sizeof(*pids));
        if (!pids)
                return 1;
        /* Blocked from now on: taken with sigwait() below, and in the children (which
         * inherit the mask) only SIGKILL ends them. */
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        sigprocmask(SIG_BLOCK, &stop, NULL);
        for (int i = 0; i < n; i++) {
                int p[2];
                char c;

                if (pipe2(p, O_CLOEXEC) < 0)
                        break;
                pids[i] = fork();
                if (pids[i] == 0) {
                        close(p[0]);
                        if (dup2(p[1], STDOUT_FILENO) < 0)
                                _exit(3);
                        child(argv[i + 1], parent);
                }
                close(p[1]);
                /* One at a time: a byte once the child has joined, EOF if it died
                 * first (its error on stderr), so the count in "ready" is true. */
                if (pids[i] > 0 && read(p[0], &c, 1) == 1)
                        joined++;
                close(p[0]);
                if (pids[i] < 0)
                        break;
        }
        printf("ready %d\n", joined);
        fflush(stdout);
        sigwait(&stop, &sig);
        for (int i = 0; i < n; i++)
                if (pids[i] > 0)
                        kill(pids[i], SIGKILL);
        for (int i = 0; i < n; i++)
                if (pids[i] > 0)
                        waitpid(pids[i], &status, 0);
        free(pids);
        return joined == n ? 0 : 2;
}
