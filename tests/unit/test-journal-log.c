/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging straight to the journal (daemon/journal-log.h): only when JOURNAL_STREAM
 * names our own stderr (a child inherits the variable with another stderr), and a
 * message the journal does not take still reaches stderr, with its level. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
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
        log_set_sink(NULL);
        dup2(saved, STDERR_FILENO);
        close(saved);
        unsetenv("JOURNAL_STREAM");
        n = pread(fd, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = 0;
        close(fd);
        unlink(path);
        CHECK_MSG(!strstr(buf, "hello from the test") || strstr(buf, "<6>hello from the test\n"),
                  "the message went to stderr as plain text: %s", buf);
        /* Without the sink, the same message is on stderr: the check above means something. */
        log_info("hello again");
}

DEFINE_TEST_MAIN()
