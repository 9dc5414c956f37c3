/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control socket's request parser (daemon/control-request.h): status, list with
 * its filters and cursor, explain PID or CGROUP, and nothing near them. */
#include <string.h>
#include "control-request.h"
#include "test.h"

#define OK(s, c, p) do { q = (struct control_request) {}; CHECK_INT(control_request_parse(s, strlen(s), &q, &err), 0); \
                         CHECK_INT(q.cmd, c); CHECK_INT(q.pid, p); } while (0)
#define BAD(s) do { err = NULL; CHECK_INT(control_request_parse(s, sizeof(s) - 1, &q, &err), -EINVAL); CHECK(err); } while (0)

TEST(control_requests_valid) {
        struct control_request q;
        const char *err = NULL;

        OK("status", CONTROL_STATUS, 0);
        OK("list", CONTROL_LIST, 0);
        OK("list\r", CONTROL_LIST, 0);
        OK("explain 1", CONTROL_EXPLAIN, 1);
        OK("explain 4194304", CONTROL_EXPLAIN, 4194304);
}

/* Refused with a reason: no near misses, no PID that is not a PID, no control bytes. */
TEST(control_requests_invalid) {
        struct control_request q;
        const char *err = NULL;

        BAD("");
        BAD("\r");
        BAD("stat");
        BAD("Status");
        BAD("status ");
        BAD(" status");
        BAD("list x");
        BAD("list ");
        BAD("list /a ");
        BAD("list /a  /b");
        BAD("list 0");
        BAD("list /a%");
        BAD("list /a%4");
        BAD("list /a%zz");
        BAD("list /a%00b");
        BAD("list a.slice");
        BAD("list after=");
        BAD("list after=x/a");
        BAD("list after=p0");
        BAD("list after=c");
        BAD("list /a after=p1");
        BAD("list 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17");
        BAD("explain /a b");
        BAD("explain /a\"b");
        BAD("explain a/b");
        BAD("explain");
        BAD("explain ");
        BAD("explain 0");
        BAD("explain -1");
        BAD("explain +1");
        BAD("explain 1x");
        BAD("explain 1 ");
        BAD("explain  1");
        BAD("explain 2147483648");
        BAD("explain 99999999999999999999999");
        BAD("sta\0tus");
        BAD("status\n");
        BAD("st\xc3\xa9tus");
}

#undef OK
#undef BAD

/* 4095 bytes is an unknown command; 4096 is too long. */
TEST(control_request_too_long) {
        struct control_request q;
        const char *err = NULL;
        char big[CONTROL_REQUEST_MAX + 8];

        memset(big, 'a', sizeof(big));
        CHECK_INT(control_request_parse(big, CONTROL_REQUEST_MAX - 1, &q, &err), -EINVAL);
        CHECK(strstr(err, "unknown"));
        CHECK_INT(control_request_parse(big, CONTROL_REQUEST_MAX, &q, &err), -EINVAL);
        CHECK(strstr(err, "too long"));
}

/* list's filters and cursor, explain's cgroup: paths decoded, pids parsed. */
TEST(control_request_arguments) {
        struct control_request q;
        const char *err = NULL;
        const char *line = "list after=c/a%20b 42 /system.slice/db%25.service /%C3%A9t%C3%A9";

        CHECK_INT(control_request_parse(line, strlen(line), &q, &err), 0);
        CHECK_INT(q.cmd, CONTROL_LIST);
        CHECK_INT(q.after, 'c');
        CHECK_STR(control_request_str(&q, q.after_path), "/a b");
        CHECK_INT(q.n_filters, 3);
        CHECK_INT(q.filters[0].pid, 42);
        CHECK(control_request_str(&q, q.filters[0].path) == NULL);
        CHECK_STR(control_request_str(&q, q.filters[1].path), "/system.slice/db%.service");
        CHECK_STR(control_request_str(&q, q.filters[2].path), "/\xc3\xa9t\xc3\xa9");
        line = "list after=p77";
        CHECK_INT(control_request_parse(line, strlen(line), &q, &err), 0);
        CHECK_INT(q.after, 'p');
        CHECK_INT(q.after_pid, 77);
        CHECK_INT(q.n_filters, 0);
        line = "explain /user.slice/user-1000.slice";
        CHECK_INT(control_request_parse(line, strlen(line), &q, &err), 0);
        CHECK_INT(q.cmd, CONTROL_EXPLAIN);
        CHECK_INT(q.pid, 0);
        CHECK_STR(control_request_str(&q, q.path), "/user.slice/user-1000.slice");
        line = "explain /";
        CHECK_INT(control_request_parse(line, strlen(line), &q, &err), 0);
        CHECK_STR(control_request_str(&q, q.path), "/");
}

/* What numabalancectl encodes, the daemon decodes back: every byte but NUL. */
TEST(control_path_round_trip) {
        struct control_request q;
        const char *err = NULL;
        char path[256], line[CONTROL_REQUEST_MAX], cursor[1024];
        size_t o = 0;

        path[o++] = '/';
        for (int b = 1; b < 256; b++)
                if (b != '/')
                        path[o++] = (char) b;
        path[o] = 0;
        memcpy(line, "explain ", 8);
        CHECK(control_path_encode(path, line + 8, sizeof(line) - 8) > 0);
        CHECK_INT(control_request_parse(line, strlen(line), &q, &err), 0);
        CHECK_STR(control_request_str(&q, q.path), path);
        /* A cursor is one word a client gives back as it came. */
        CHECK(control_request_cursor_format('s', path, 0, cursor, sizeof(cursor)) > 0);
        snprintf(line, sizeof(line), "list after=%s", cursor);
        CHECK_INT(control_request_parse(line, strlen(line), &q, &err), 0);
        CHECK_INT(q.after, 's');
        CHECK_STR(control_request_str(&q, q.after_path), path);
        /* Too small a buffer is said, not cut. */
        CHECK_INT(control_path_encode(path, line, 10), -1);
}

/* The largest PID the kernel can have (PID_MAX_LIMIT is 2^22; pid_t goes to INT32_MAX). */
TEST(control_request_pid_bounds) {
        struct control_request q = {};
        const char *err = NULL;

        CHECK_INT(control_request_parse("explain 2147483647", 18, &q, &err), 0);
        CHECK_INT(q.cmd, CONTROL_EXPLAIN);
        CHECK_INT(q.pid, 2147483647);
}

/* What the client prints back: each refusal says what was wrong and what is accepted. */
TEST(control_request_errors_say_why) {
        struct control_request q = {};
        const char *err = NULL;
        char big[CONTROL_REQUEST_MAX + 8];

        CHECK_INT(control_request_parse("", 0, &q, &err), -EINVAL);
        CHECK_STR(err, CONTROL_ERROR_EMPTY);
        CHECK_STR(err, "empty request (accepted: status, list, explain PID|CGROUP)");
        CHECK_INT(control_request_parse("\r", 1, &q, &err), -EINVAL);
        CHECK_STR(err, CONTROL_ERROR_EMPTY);
        CHECK_INT(control_request_parse("help", 4, &q, &err), -EINVAL);
        CHECK_STR(err, "unknown command (accepted: status, list, explain PID|CGROUP)");
        CHECK_INT(control_request_parse("explain", 7, &q, &err), -EINVAL);
        CHECK_STR(err, "explain needs a PID or a cgroup");
        CHECK_INT(control_request_parse("explain self", 12, &q, &err), -EINVAL);
        CHECK_STR(err, "explain: not a valid PID (a decimal number from 1) nor a cgroup path");
        CHECK_INT(control_request_parse("explain 0", 9, &q, &err), -EINVAL);
        CHECK_STR(err, "explain: not a valid PID (a decimal number from 1) nor a cgroup path");
        CHECK_INT(control_request_parse("status\t", 7, &q, &err), -EINVAL);
        CHECK_STR(err, "request contains a control or non-ASCII byte");
        CHECK_INT(control_request_parse("list\x7f", 5, &q, &err), -EINVAL);
        CHECK_STR(err, "request contains a control or non-ASCII byte");
        memset(big, 'a', sizeof(big));
        CHECK_INT(control_request_parse(big, CONTROL_REQUEST_MAX, &q, &err), -EINVAL);
        CHECK_STR(err, CONTROL_ERROR_TOO_LONG);
        CHECK_STR(err, "request too long (at most " CONTROL_STRINGIFY(CONTROL_REQUEST_MAX) " bytes with its newline)");
        /* A '\r' before the newline does not count toward the limit; and too long is said
         * before the bytes are looked at. */
        big[CONTROL_REQUEST_MAX - 1] = '\r';
        CHECK_INT(control_request_parse(big, CONTROL_REQUEST_MAX, &q, &err), -EINVAL);
        CHECK(strstr(err, "unknown"));
        big[0] = '\x01';
        CHECK_INT(control_request_parse(big, CONTROL_REQUEST_MAX + 1, &q, &err), -EINVAL);
        CHECK_STR(err, CONTROL_ERROR_TOO_LONG);
}

/* A refused request leaves *ret as it was: the caller's, not half a request. */
TEST(control_request_refused_writes_nothing) {
        struct control_request q = { .cmd = CONTROL_LIST, .pid = 77 };
        const char *err = NULL;

        CHECK_INT(control_request_parse("explain 12x", 11, &q, &err), -EINVAL);
        CHECK_INT(q.cmd, CONTROL_LIST);
        CHECK_INT(q.pid, 77);
        CHECK_INT(control_request_parse("explain 12", 10, &q, &err), 0);
        CHECK_INT(q.cmd, CONTROL_EXPLAIN);
        CHECK_INT(q.pid, 12);
        /* And a good one after leaves no PID behind. */
        CHECK_INT(control_request_parse("status", 6, &q, &err), 0);
        CHECK_INT(q.cmd, CONTROL_STATUS);
        CHECK_INT(q.pid, 0);
}

DEFINE_TEST_MAIN()
