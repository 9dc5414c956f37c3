/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Thread sampling (lib/task-sampler.h): a thread is sampled only while it is a thread
 * of the process it was listed under, so that a tid gone to another process is never
 * sampled (its registers and code bytes are not the sampled process's). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/userfaultfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pagesize.h"
#include "task-sampler.h"
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

static pid_t spinner(void) {
        pid_t pid = fork();

        if (pid == 0)
                for (volatile uint64_t i = 0;; i++)
                        ;
        return pid;
}

static void keep_first(void *userdata, const struct task_sample *t) {
        struct task_sample *first = userdata;

        if (first->pid == 0)
                *first = *t;
}

/* A process forked with pid want, through ns_last_pid (root only); -1 if another
 * process took it first. */
static pid_t spinner_at(pid_t want) {
        char v[32];
        int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
        pid_t got;

        if (fd < 0)
                return -1;
        snprintf(v, sizeof(v), "%d", (int) want - 1);
        if (write(fd, v, strlen(v)) < 0) {
                close(fd);
                return -1;
        }
        close(fd);
        got = spinner();
        if (got != want) {
                kill(got, SIGKILL);
                waitpid(got, NULL, 0);
                return -1;
        }
        return got;
}

/* Code bytes are read by pid number at the drain: a sample of a process that exited
 * since, whose pid a new process holds now (made so with ns_last_pid), gives no bytes,
 * though the pid reads fine: the new process (a fork of this test) has the same code
 * at the same address. */
/* Code bytes come from ip's own page only, though the page before is mapped and
 * readable: a page before it could be a FUSE file's its owner never answers. */
TEST(code_only_from_the_page_of_ip) {
        const size_t ps = page_size();
        uint8_t *two = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint8_t code[INSN_CODE_LEN];

        CHECK(two != MAP_FAILED);
        for (size_t i = 0; i < 2 * ps; i++)
                two[i] = (uint8_t) i;
        /* Far enough into its page: the full INSN_CODE_LEN bytes. */
        CHECK_INT(task_sampler_code(getpid(), (uint64_t) (uintptr_t) (two + ps + 100), code), INSN_CODE_LEN);
        CHECK(memcmp(code, two + ps + 100 - INSN_CODE_LEN, INSN_CODE_LEN) == 0);
        /* 16 bytes into its page: those 16, none of the page before. */
        CHECK_INT(task_sampler_code(getpid(), (uint64_t) (uintptr_t) (two + ps + 16), code), 16);
        CHECK(memcmp(code, two + ps, 16) == 0);
        /* At its very start: nothing. */
        CHECK_INT(task_sampler_code(getpid(), (uint64_t) (uintptr_t) (two + ps), code), -EFAULT);
        munmap(two, 2 * ps);
}

/* The page before ip's is registered with userfaultfd and never served: a read that
 * touched it would wait for good (as one of a FUSE file whose server never answers),
 * and SIGALRM would end the test. Only ip's page is read. Needs userfaultfd for
 * kernel-mode faults (root, or vm.unprivileged_userfaultfd = 1). */
TEST(code_read_never_waits_on_the_page_before) {
        const size_t ps = page_size();
        struct uffdio_api api = { .api = UFFD_API };
        struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
        uint8_t *two = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint8_t code[INSN_CODE_LEN];
        int uffd = (int) syscall(SYS_userfaultfd, O_CLOEXEC);

        if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0) {
                if (uffd >= 0)
                        close(uffd);
                munmap(two, 2 * ps);
                TEST_SKIP("no userfaultfd for kernel-mode faults here (not root?)");
        }
        CHECK(two != MAP_FAILED);
        memset(two + ps, 0x90, ps);               /* ip's page: touched, present */
        reg.range = (struct uffdio_range) { (uint64_t) (uintptr_t) two, ps };
        CHECK_INT(ioctl(uffd, UFFDIO_REGISTER, &reg), 0);
        alarm(10);
        CHECK_INT(task_sampler_code(getpid(), (uint64_t) (uintptr_t) (two + ps + 16), code), 16);
        alarm(0);
        CHECK(code[0] == 0x90 && code[15] == 0x90);
        close(uffd);
        munmap(two, 2 * ps);
}

TEST(code_not_read_from_a_reused_pid) {
        struct task_sample first = {};
        struct task_sampler *s = NULL;
        uint8_t code[INSN_CODE_LEN];
        pid_t a, b = -1;
        int r;

        if (geteuid() != 0)
                TEST_SKIP("not root: a pid cannot be reused on purpose (ns_last_pid)");
        CHECK_INT(task_sampler_new(100000, &s), 0);
        a = spinner();
        r = task_sampler_add(s, a, a);
        if (r == -EACCES || r == -EPERM || r == -ENOENT || r == -EOPNOTSUPP) {
                kill(a, SIGKILL);
                waitpid(a, NULL, 0);
                task_sampler_free(s);
                TEST_SKIP("perf events refused here (%d)", r);
        }
        CHECK_INT(r, 0);
        for (int i = 0; i < 100 && first.pid == 0; i++) {
                usleep(10000);
                task_sampler_drain(s, keep_first, &first, NULL);
        }
        CHECK_INT(first.pid, a);
        CHECK(task_sampler_code_of(&first, code) > 0);   /* alive: its bytes */
        kill(a, SIGKILL);
        waitpid(a, NULL, 0);
        for (int tries = 0; tries < 20 && b < 0; tries++)
                b = spinner_at(a);
        if (b < 0) {
                task_sampler_free(s);
                TEST_SKIP("pid %d was taken by another process before this test could", (int) a);
        }
        printf("pid %d exited and was given to a new process; by pid: %d bytes; re-checked: %d\n", (int) a,
               task_sampler_code(first.pid, first.ip, code), task_sampler_code_of(&first, code));
        CHECK(task_sampler_code(first.pid, first.ip, code) > 0);   /* the new process's bytes */
        CHECK_INT(task_sampler_code_of(&first, code), -ESRCH);
        kill(b, SIGKILL);
        waitpid(b, NULL, 0);
        task_sampler_free(s);
}

DEFINE_TEST_MAIN()
