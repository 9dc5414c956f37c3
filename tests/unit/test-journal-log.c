/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging straight to the journal (daemon/journal-log.h): only when JOURNAL_STREAM
 * names our own stderr (a child inherits the variable with another stderr), and a
 * message the journal does not take still reaches stderr, with its level. As root, in
 * a mount namespace of its own with a tmpfs on /run, the test is the journal: it
 * binds /run/systemd/journal/socket and reads the native protocol's fields. */
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "journal-log.h"
#include "log.h"
#include "test.h"

static char path[] = "/tmp/test-journal-log-XXXXXX";

/* JOURNAL_STREAM set to what fd is (dev:ino), or to that plus delta on the inode. */
static void stream_of(int fd, int delta) {
        struct stat st;
        char v[64];

        if (fstat(fd, &st) < 0)
                abort();
        snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long) st.st_dev,
                 (unsigned long long) st.st_ino + (unsigned long long) delta);
        setenv("JOURNAL_STREAM", v, 1);
}

TEST(not_our_stderr) {
        unsetenv("JOURNAL_STREAM");
        CHECK(!journal_log_setup());
        setenv("JOURNAL_STREAM", "not:numbers", 1);
        CHECK(!journal_log_setup());
        setenv("JOURNAL_STREAM", "12345", 1);
        CHECK(!journal_log_setup());
        stream_of(STDERR_FILENO, 1);      /* a stream, but not ours */
        CHECK(!journal_log_setup());
        unsetenv("JOURNAL_STREAM");
}

/* Our stderr (a file standing in for the journal's stream): the sink is set, and the
 * message goes to the journal's socket with its fields, not to stderr as lib/log's
 * own sink writes it (without a journal, libsystemd drops it: no duplicate on the
 * stream, which is the journal too). */
TEST(our_stderr_then_the_journal_or_stderr) {
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);
        char buf[512] = "";
        ssize_t n;

        if (fd < 0 || saved < 0) {
                TEST_FAIL("mkstemp or dup: %m");
                return;
        }
        dup2(fd, STDERR_FILENO);
        stream_of(STDERR_FILENO, 0);
        CHECK(journal_log_setup());
        log_set_max_level(LOG_LVL_INFO);
        log_info("hello from the test");
        fflush(stderr);
        /* Without the sink, a message is on this stderr: what is read below is what
         * went there, and the check that the first is not means something. */
        log_set_sink(NULL);
        log_info("hello again");
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        unsetenv("JOURNAL_STREAM");
        n = pread(fd, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = 0;
        close(fd);
        unlink(path);
        CHECK_MSG(strstr(buf, "hello again\n"), "lib/log's own sink wrote nothing to the stream: \"%s\"", buf);
        CHECK_MSG(!strstr(buf, "hello from the test") || strstr(buf, "<6>hello from the test\n"),
                  "the message went to stderr as plain text: %s", buf);
}

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* In the child: a mount namespace whose /run is a fresh tmpfs with the journal's socket
 * bound by us. Returns the socket, -1 to skip (no namespaces here), -2 on failure. */
static int fake_journal(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JOURNAL_SOCKET };
        struct timeval tv = { .tv_sec = 5 };
        int fd;

        if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") < 0)
                return -1;
        if (mkdir("/run/systemd", 0755) < 0 || mkdir("/run/systemd/journal", 0755) < 0)
                return -2;
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
                return -2;
        return fd;
}

/* The journal's side, in a child (its mount namespace dies with it); the checks'
 * failures are printed there and returned as its exit status (77: skipped). */
static int journal_child(void) {
        char err_path[] = "/tmp/test-journal-log-err-XXXXXX", buf[4096];
        int journal, err_fd, saved;
        struct log_fields lf = {};
        ssize_t n;

        journal = fake_journal();
        if (journal == -1)
                return 77;
        if (journal < 0) {
                TEST_FAIL("the fake journal: %m");
                return 1;
        }
        err_fd = mkstemp(err_path);
        if (err_fd < 0) {
                TEST_FAIL("mkstemp: %m");
                return 1;
        }
        unlink(err_path);
        saved = dup(STDERR_FILENO);
        if (saved < 0 || dup2(err_fd, STDERR_FILENO) < 0)
                return 1;
        stream_of(STDERR_FILENO, 0);
        if (!journal_log_setup())
                return 2;
        log_set_max_level(LOG_LVL_DEBUG);

        /* A warning with an errno and the fields a cgroup's message carries. */
        log_fields_str(&lf, "NUMABALANCED_CGROUP", "/workload.slice/a");
        log_fields_i64(&lf, "NUMABALANCED_PID", 4242);
        log_full_errno_fields(LOG_LVL_WARNING, -ENOENT, &lf, "Cannot read %s: %m", "numa_maps");
        n = recv(journal, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = 0;
        CHECK_STR(buf, "MESSAGE=Cannot read numa_maps: No such file or directory\n"
                       "PRIORITY=4\n"
                       "SYSLOG_IDENTIFIER=numabalanced\n"
                       "ERRNO=2\n"
                       "NUMABALANCED_CGROUP=/workload.slice/a\n"
                       "NUMABALANCED_PID=4242\n");
        /* Text a user chose, with a newline: escaped, one line in the journal too; no
         * ERRNO= without an error. */
        log_info("comm \"%s\" seen", "evil\nPRIORITY=0");
        n = recv(journal, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = 0;
        CHECK_STR(buf, "MESSAGE=comm \"evil\\x0aPRIORITY=0\" seen\n"
                       "PRIORITY=6\n"
                       "SYSLOG_IDENTIFIER=numabalanced\n");
        /* Nothing of it on stderr: the journal has it. */
        n = pread(err_fd, buf, sizeof(buf) - 1, 0);
        CHECK_INT(n, 0);

        /* The journal refuses (its socket is now a file no one listens on): the message
         * is on stderr after all, with its level as the journal's stream parses it. */
        close(journal);
        unlink(JOURNAL_SOCKET);
        close(open(JOURNAL_SOCKET, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
        log_error("Refused by the journal");
        fflush(stderr);
        n = pread(err_fd, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = 0;
        CHECK_STR(buf, "<3>Refused by the journal\n");
        log_set_sink(NULL);
        /* The checks' failures went to the file standing for the journal's stream: to
         * the test's stderr with them. */
        if (test_failures) {
                n = pread(err_fd, buf, sizeof(buf), 0);
                if (n > 0 && write(saved, buf, (size_t) n) < 0)
                        n = 0;
        }
        close(err_fd);
        close(saved);
        return test_failures ? 1 : 0;
}

TEST(the_journal_gets_the_fields) {
        int status;
        pid_t pid;

        if (geteuid() != 0)
                TEST_SKIP("not root: no mount namespace to put a journal socket in");
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid == 0)
                _exit(journal_child());
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status));
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                TEST_SKIP("no mount namespace here (unshare or mount refused)");
        CHECK_INT(WEXITSTATUS(status), 0);
        unsetenv("JOURNAL_STREAM");
}

DEFINE_TEST_MAIN()
