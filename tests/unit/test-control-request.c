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

DEFINE_TEST_MAIN()
