/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Log lines carry text that unprivileged users choose (comm names, cgroup paths):
 * what reaches a sink is one line, control bytes written as \xNN. */
#include <string.h>
#include "log.h"
#include "test.h"

static char got[16384];
static int got_calls;
static const struct log_fields *got_fields;

static void sink(int level, int error, const struct log_fields *fields, const char *msg) {
        (void) level;
        (void) error;
        got_fields = fields;
        snprintf(got, sizeof(got), "%s", msg);
        got_calls++;
}

static void escaped(const char *in, const char *want) {
        char out[256];
        size_t n = log_escape(in, out, sizeof(out));
        CHECK_STR(out, want);
        CHECK_INT(n, strlen(want));
}

/* Log lines from here on go to sink(), counted from 0. */
static void capture(void) {
        log_set_sink(sink);
        got[0] = 0;
        got_calls = 0;
        got_fields = NULL;
}

TEST(escape_control_bytes) {
        escaped("", "");
        escaped("workload", "workload");
        escaped("a b)c", "a b)c");                      /* spaces and ) are text */
        escaped("x\nmoved=1", "x\\x0amoved=1");
        escaped("\t\r\x1b[2J\x7f", "\\x09\\x0d\\x1b[2J\\x7f");
        escaped("caf\xc3\xa9", "caf\xc3\xa9");          /* UTF-8 passes */
}

/* C1 controls (U+0080-U+009F): U+009B is CSI, ESC [ to a terminal, U+009D OSC, U+0085
 * NEL a new line to some readers. As UTF-8 (0xc2 0x80-0x9f) both bytes are escaped;
 * as raw 8-bit bytes that are not valid UTF-8, the byte is. The characters beside
 * them, 0xc3 0x9b (U+00DB), U+00A0 and invalid bytes above 0x9f, pass. */
TEST(escape_c1_controls) {
        escaped("a\xc2\x9b" "31mred", "a\\xc2\\x9b31mred");
        escaped("\xc2\x80\xc2\x85\xc2\x9d\xc2\x9f", "\\xc2\\x80\\xc2\\x85\\xc2\\x9d\\xc2\\x9f");
        escaped("a\x9b" "31m\x85\x80", "a\\x9b31m\\x85\\x80");
        escaped("\xc3\x9b\xc2\xa0", "\xc3\x9b\xc2\xa0");   /* U+00DB, U+00A0: text */
        escaped("\xff\xa0\xc2", "\xff\xa0\xc2");              /* invalid, not C1: as before */
        escaped("\xe0\x9b", "\xe0\\x9b");                     /* no sequence: the lone 0x9b goes */
}

/* Cut between characters: a character that does not fit whole, or its escape, is
 * left out. */
TEST(escape_truncation_keeps_characters_whole) {
        char small[6];

        CHECK_INT(log_escape("abc\xc3\xa9", small, sizeof(small)), 5);
        CHECK_STR(small, "abc\xc3\xa9");
        CHECK_INT(log_escape("abcd\xc3\xa9", small, sizeof(small)), 4);
        CHECK_STR(small, "abcd");
        CHECK_INT(log_escape("a\xc2\x9b", small, sizeof(small)), 1);
        CHECK_STR(small, "a");
}

/* Truncation never cuts an escape in half and always terminates. */
TEST(escape_truncation_keeps_escapes_whole) {
        char small[6];

        CHECK_INT(log_escape("ab\ncd", small, sizeof(small)), 2);
        CHECK_STR(small, "ab");
        CHECK_INT(log_escape("abcdefgh", small, sizeof(small)), 5);
        CHECK_STR(small, "abcde");
        CHECK_INT(log_escape("abc", small, 0), 0);
}

/* Through the logger: a comm with a newline is one line at the sink; the structured
 * field keeps the raw value for the journal. */
TEST(logger_message_is_one_line_field_raw) {
        struct log_fields lf = {};

        capture();
        log_fields_str(&lf, "NUMABALANCED_COMM", "evil\npid=1 moved everything");
        log_full_errno_fields(LOG_LVL_INFO, 0, &lf, "pid=%d comm=%s: moving", 42, "evil\npid=1 moved everything");
        CHECK_INT(got_calls, 1);
        CHECK_STR(got, "pid=42 comm=evil\\x0apid=1 moved everything: moving");
        CHECK(strchr(got, '\n') == NULL);
        CHECK(got_fields != NULL && strcmp(got_fields->f[0].value, "evil\npid=1 moved everything") == 0);
}

/* A message made entirely of control bytes, at the formatter's limit: every byte
 * escaped, nothing lost to the escaping (4 bytes each fit). */
TEST(logger_escapes_a_whole_message_at_the_limit) {
        char big[3000];

        capture();
        memset(big, '\n', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        log_info("%s", big);
        CHECK_INT(strlen(got), 4 * 2047);
        CHECK(strchr(got, '\n') == NULL);
}

/* Through the logger, as the foreground's stderr and a syslog file get it: a C1 CSI
 * in a comm reaches the sink escaped. */
TEST(logger_escapes_c1) {
        capture();
        log_info("comm=%s", "x\xc2\x9b" "2J\x9b" "2J");
        CHECK_INT(got_calls, 1);
        CHECK_STR(got, "comm=x\\xc2\\x9b2J\\x9b2J");
        CHECK(strchr(got, (char) 0x9b) == NULL);
}

/* Below the level: not formatted, not sent. */
TEST(logger_below_the_level_not_sent) {
        capture();
        log_set_max_level(LOG_LVL_INFO);
        log_debug("hidden");
        CHECK_INT(got_calls, 0);
}

/* At most burst messages per interval; the first one allowed after some were refused
 * says how many. */
TEST(ratelimit_burst_per_interval) {
        struct log_ratelimit rl = LOG_RATELIMIT(1000, 3);
        uint64_t sup = 99;
        unsigned ok = 0;

        for (int i = 0; i < 10; i++)
                ok += log_ratelimit_ok(&rl, 5000 + (uint64_t) i, &sup);
        CHECK_INT(ok, 3);
        CHECK_INT(sup, 0);
        /* Still in the interval: refused. */
        CHECK(!log_ratelimit_ok(&rl, 5999, &sup));
        /* The next interval: allowed, with the 8 refused. */
        CHECK(log_ratelimit_ok(&rl, 6000, &sup));
        CHECK_INT(sup, 8);
        CHECK(log_ratelimit_ok(&rl, 6001, NULL));
        CHECK(log_ratelimit_ok(&rl, 6002, &sup));
        CHECK_INT(sup, 0);
        CHECK(!log_ratelimit_ok(&rl, 6003, &sup));
        /* A clock at 0, or going back, starts an interval rather than refusing forever. */
        rl = LOG_RATELIMIT(1000, 1);
        CHECK(log_ratelimit_ok(&rl, 0, NULL));
        CHECK(!log_ratelimit_ok(&rl, 1, NULL));
        CHECK(log_ratelimit_ok(&rl, 1001, NULL));
        CHECK(log_ratelimit_ok(&rl, 10, &sup));
        CHECK_INT(sup, 0);
}

DEFINE_TEST_MAIN()
