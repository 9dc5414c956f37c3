/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tenants' text for a terminal (lib/term-text.h): UTF-8 passes, controls do not. */
#include <stdlib.h>
#include "term-text.h"
#include "test.h"

static const char *safe(const char *s) {
        static char buf[256];
        return term_text_safe(s, buf, sizeof(buf));
}

static char *printed(const char *s) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        term_text_print(f, s);
        fclose(f);
        return out;
}

TEST(utf8_passes) {
        CHECK_STR(safe("/user.slice/caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x98\x80"),
                  "/user.slice/caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x98\x80");
        CHECK_STR(safe("\xc2\xa0nbsp"), "\xc2\xa0nbsp");   /* U+00A0: the first after C1 */
        CHECK_STR(safe(NULL), "-");
}

/* C1 as UTF-8 (U+009B is CSI: ESC [ to a terminal), and as a raw 8-bit byte. */
TEST(controls_go) {
        CHECK_STR(safe("a\xc2\x9b" "31mred"), "a??31mred");
        CHECK_STR(safe("a\xc2\x85" "b"), "a??b");
        CHECK_STR(safe("a\x9b" "31m"), "a?31m");
        CHECK_STR(safe("a\x1b[2Jb\x7f\n"), "a?[2Jb??");
}

TEST(invalid_utf8_goes) {
        CHECK_STR(safe("\xc0\xaf"), "??");              /* overlong '/' */
        CHECK_STR(safe("\xe0\x80\xaf"), "???");         /* overlong */
        CHECK_STR(safe("\xed\xa0\x80"), "???");         /* a surrogate */
        CHECK_STR(safe("\xf4\x90\x80\x80"), "????");    /* beyond U+10FFFF */
        CHECK_STR(safe("\xe6\x97"), "??");              /* cut short */
        CHECK_STR(safe("\xff\xfe"), "??");
}

/* Cut at a character, never inside one. */
TEST(cut_at_a_character) {
        char buf[5];

        CHECK_STR(term_text_safe("ab\xe6\x97\xa5", buf, sizeof(buf)), "ab");
        CHECK_STR(term_text_safe("abcdef", buf, sizeof(buf)), "abcd");
}

TEST(print_escapes_bytes) {
        char *s = printed("x\xc2\x9by\x1b\xc3\xa9");

        CHECK_STR(s, "x\\xc2\\x9by\\x1b\xc3\xa9");
        free(s);
}

DEFINE_TEST_MAIN()
