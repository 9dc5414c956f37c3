/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Thread sampling (lib/task-sample.h): a thread is sampled only while it is a thread
 * of the process it was listed under, so that a tid gone to another process is never
 * sampled (its registers and code bytes are not the sampled process's). */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "task-sample.h"
#include "test.h"

TEST(only_a_thread_of_its_process) {
        struct task_sampler *s = NULL;
        pid_t child;
        int r;

        r = task_sampler_new(1000000, &s);
        if (r < 0)
                TEST_SKIP("no task sampler here (%d)", r);
        r = task_sampler_add(s, getpid(), getpid());
        if (r == -EACCES || r == -EPERM || r == -ENOENT || r == -EOPNOTSUPP) {
                task_sampler_free(s);
                TEST_SKIP("perf events refused here (%d)", r);
        }
        CHECK_INT(r, 0);
        child = fork();
        if (child == 0) {
                pause();
                _exit(0);
        }
        /* The child's main thread listed as one of ours: refused. */
        CHECK_INT(task_sampler_add(s, getpid(), child), -ESRCH);
        /* Under its own process: taken. */
        CHECK_INT(task_sampler_add(s, child, child), 0);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        task_sampler_free(s);
}

DEFINE_TEST_MAIN()
