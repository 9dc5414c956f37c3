/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control socket's request parser (daemon/control-request.h): status, list,
 * explain PID, and nothing near them. */
#include <string.h>
#include "control-request.h"
#include "test.h"

#define OK(s, c, p) do { q = (struct control_request) {}; CHECK_INT(control_parse_request(s, strlen(s), &q, &err), 0); \
                         CHECK_INT(q.cmd, c); CHECK_INT(q.pid, p); } while (0)
#define BAD(s) do { err = NULL; CHECK_INT(control_parse_request(s, sizeof(s) - 1, &q, &err), -EINVAL); CHECK(err); } while (0)

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

/* 255 bytes is an unknown command; 256 is too long. */
TEST(control_request_too_long) {
        struct control_request q;
        const char *err = NULL;
        char big[300];

        memset(big, 'a', sizeof(big));
        CHECK_INT(control_parse_request(big, 255, &q, &err), -EINVAL);
        CHECK(strstr(err, "unknown"));
        CHECK_INT(control_parse_request(big, 256, &q, &err), -EINVAL);
        CHECK(strstr(err, "too long"));
}

/* The largest PID the kernel can have (PID_MAX_LIMIT is 2^22; pid_t goes to INT32_MAX). */
TEST(control_request_pid_bounds) {
        struct control_request q = {};
        const char *err = NULL;

        CHECK_INT(control_parse_request("explain 2147483647", 18, &q, &err), 0);
        CHECK_INT(q.cmd, CONTROL_EXPLAIN);
        CHECK_INT(q.pid, 2147483647);
}

/* What the client prints back: each refusal says what was wrong and what is accepted. */
TEST(control_request_errors_say_why) {
        struct control_request q = {};
        const char *err = NULL;
        char big[CONTROL_REQUEST_MAX + 8];

        CHECK_INT(control_parse_request("", 0, &q, &err), -EINVAL);
        CHECK_STR(err, CONTROL_ERROR_EMPTY);
        CHECK_STR(err, "empty request (accepted: status, list, explain PID)");
        CHECK_INT(control_parse_request("\r", 1, &q, &err), -EINVAL);
        CHECK_STR(err, CONTROL_ERROR_EMPTY);
        CHECK_INT(control_parse_request("help", 4, &q, &err), -EINVAL);
        CHECK_STR(err, "unknown command (accepted: status, list, explain PID)");
        CHECK_INT(control_parse_request("explain", 7, &q, &err), -EINVAL);
        CHECK_STR(err, "explain needs a PID");
        CHECK_INT(control_parse_request("explain self", 12, &q, &err), -EINVAL);
        CHECK_STR(err, "explain: not a valid PID (a decimal number from 1)");
        CHECK_INT(control_parse_request("explain 0", 9, &q, &err), -EINVAL);
        CHECK_STR(err, "explain: not a valid PID (a decimal number from 1)");
        CHECK_INT(control_parse_request("status\t", 7, &q, &err), -EINVAL);
        CHECK_STR(err, "request contains a control or non-ASCII byte");
        CHECK_INT(control_parse_request("list\x7f", 5, &q, &err), -EINVAL);
        CHECK_STR(err, "request contains a control or non-ASCII byte");
        memset(big, 'a', sizeof(big));
        CHECK_INT(control_parse_request(big, CONTROL_REQUEST_MAX, &q, &err), -EINVAL);
        CHECK_STR(err, CONTROL_ERROR_TOO_LONG);
        CHECK_STR(err, "request too long (at most " CONTROL_STRINGIFY(CONTROL_REQUEST_MAX) " bytes with its newline)");
        /* A '\r' before the newline does not count toward the limit; and too long is said
         * before the bytes are looked at. */
        big[CONTROL_REQUEST_MAX - 1] = '\r';
        CHECK_INT(control_parse_request(big, CONTROL_REQUEST_MAX, &q, &err), -EINVAL);
        CHECK(strstr(err, "unknown"));
        big[0] = '\x01';
        CHECK_INT(control_parse_request(big, CONTROL_REQUEST_MAX + 1, &q, &err), -EINVAL);
        CHECK_STR(err, CONTROL_ERROR_TOO_LONG);
}

/* A refused request leaves *ret as it was: the caller's, not half a request. */
TEST(control_request_refused_writes_nothing) {
        struct control_request q = { .cmd = CONTROL_LIST, .pid = 77 };
        const char *err = NULL;

        CHECK_INT(control_parse_request("explain 12x", 11, &q, &err), -EINVAL);
        CHECK_INT(q.cmd, CONTROL_LIST);
        CHECK_INT(q.pid, 77);
        CHECK_INT(control_parse_request("explain 12", 10, &q, &err), 0);
        CHECK_INT(q.cmd, CONTROL_EXPLAIN);
        CHECK_INT(q.pid, 12);
        /* And a good one after leaves no PID behind. */
        CHECK_INT(control_parse_request("status", 6, &q, &err), 0);
        CHECK_INT(q.cmd, CONTROL_STATUS);
        CHECK_INT(q.pid, 0);
}

DEFINE_TEST_MAIN()
