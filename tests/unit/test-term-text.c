/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tenants' text for a terminal (lib/term-text.h): under a UTF-8 locale, UTF-8 passes,
 * controls, bidi overrides and invisible format characters do not; under any other,
 * printable ASCII only. */
#include <locale.h>
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
        term_text_set_utf8(true);
        CHECK_STR(safe("/user.slice/caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x98\x80"),
                  "/user.slice/caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x98\x80");
        CHECK_STR(safe("\xc2\xa0nbsp"), "\xc2\xa0nbsp");   /* U+00A0: the first after C1 */
        CHECK_STR(safe(NULL), "-");
}

/* C1 as UTF-8 (U+009B is CSI: ESC [ to a terminal), and as a raw 8-bit byte. */
TEST(controls_go) {
        term_text_set_utf8(true);
        CHECK_STR(safe("a\xc2\x9b" "31mred"), "a??31mred");
        CHECK_STR(safe("a\xc2\x85" "b"), "a??b");
        CHECK_STR(safe("a\x9b" "31m"), "a?31m");
        CHECK_STR(safe("a\x1b[2Jb\x7f\n"), "a?[2Jb??");
}

TEST(invalid_utf8_goes) {
        term_text_set_utf8(true);
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

        term_text_set_utf8(true);
        CHECK_STR(term_text_safe("ab\xe6\x97\xa5", buf, sizeof(buf)), "ab");
        CHECK_STR(term_text_safe("abcdef", buf, sizeof(buf)), "abcd");
}

TEST(print_escapes_bytes) {
        char *s;

        term_text_set_utf8(true);
        s = printed("x\xc2\x9by\x1b\xc3\xa9");
        CHECK_STR(s, "x\\xc2\\x9by\\x1b\xc3\xa9");
        free(s);
}

/* Under UTF-8, what reorders or hides text goes too: the bidi embeddings and
 * overrides (U+202A-U+202E; U+202E before "gpj.exe" shows "exe.jpg"), the isolates
 * (U+2066-U+2069), zero-width characters, the BOM, tags. Their neighbours in the
 * same blocks are text. */
TEST(utf8_bidi_and_invisible_go) {
        char *s;

        term_text_set_utf8(true);
        CHECK_STR(safe("/a/\xe2\x80\xae" "gpj.exe"), "/a/???gpj.exe");
        for (unsigned cp = 0x202a; cp <= 0x202e; cp++) {
                char in[8] = { (char) 0xe2, (char) 0x80, (char) (0x80 | (cp & 0x3f)), 'x', 0 };
                CHECK_MSG(strcmp(safe(in), "???x") == 0, "U+%04X passed: %s", cp, safe(in));
        }
        for (unsigned cp = 0x2066; cp <= 0x2069; cp++) {
                char in[8] = { (char) 0xe2, (char) 0x81, (char) (0x80 | (cp & 0x3f)), 'x', 0 };
                CHECK_MSG(strcmp(safe(in), "???x") == 0, "U+%04X passed: %s", cp, safe(in));
        }
        CHECK_STR(safe("a\xe2\x80\x8b" "b\xe2\x80\x8f" "c"), "a???b???c");   /* ZWSP, RLM */
        CHECK_STR(safe("\xef\xbb\xbf" "x"), "???x");                           /* U+FEFF */
        CHECK_STR(safe("\xe2\x80\xa8" "x"), "???x");                           /* U+2028 */
        CHECK_STR(safe("\xf3\xa0\x80\x81" "x"), "????x");                     /* U+E0001, a tag */
        CHECK_STR(safe("\xe2\x80\x90\xe2\x80\xaf\xe2\x81\xb0"),           /* U+2010, U+202F, U+2070 */
                  "\xe2\x80\x90\xe2\x80\xaf\xe2\x81\xb0");
        s = printed("a\xe2\x80\xae" "b\xe2\x81\xa7" "c");
        CHECK_STR(s, "a\\xe2\\x80\\xaeb\\xe2\\x81\\xa7c");
        free(s);
}

/* Under a locale that is not UTF-8, only printable ASCII: U+00DB is 0xc3 0x9b, whose
 * 0x9b an 8-bit terminal takes for CSI; every byte of 0x80 or more is escaped. */
TEST(not_utf8_ascii_only) {
        char *s;

        term_text_set_utf8(false);
        CHECK_STR(safe("/user.slice/caf\xc3\xa9"), "/user.slice/caf??");
        CHECK_STR(safe("\xc3\x9b" "2J"), "??2J");
        CHECK_STR(safe("a b~\x7f\x1b"), "a b~??");
        s = printed("caf\xc3\xa9 \xc3\x9b" "2J\x1b\xe2\x80\xae");
        CHECK_STR(s, "caf\\xc3\\xa9 \\xc3\\x9b2J\\x1b\\xe2\\x80\\xae");
        free(s);
        CHECK_INT(term_text_char_len((const unsigned char *) "\xc3\xa9"), 0);
        CHECK_INT(term_text_char_len((const unsigned char *) "e"), 1);
        term_text_set_utf8(true);
        CHECK_INT(term_text_char_len((const unsigned char *) "\xc3\xa9"), 2);
}

/* The locale is the environment's, as setlocale(LC_CTYPE, "") would take it: LC_ALL
 * first, then LC_CTYPE, then LANG; one that is not installed is not UTF-8. The
 * process's own locale stays "C". */
TEST(locale_from_the_environment) {
        locale_t u = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t) 0);

        unsetenv("LC_ALL");
        unsetenv("LC_CTYPE");
        setenv("LANG", "C", 1);
        CHECK(!term_text_locale_is_utf8());
        setenv("LC_ALL", "POSIX", 1);
        CHECK(!term_text_locale_is_utf8());
        setenv("LC_ALL", "xx_NOWHERE.UTF-8", 1);     /* not installed: C */
        CHECK(!term_text_locale_is_utf8());
        if (u != (locale_t) 0) {
                freelocale(u);
                setenv("LC_ALL", "C.UTF-8", 1);
                CHECK(term_text_locale_is_utf8());
                unsetenv("LC_ALL");
                setenv("LC_CTYPE", "C.UTF-8", 1);
                CHECK(term_text_locale_is_utf8());
                setenv("LC_ALL", "C", 1);             /* LC_ALL wins */
                CHECK(!term_text_locale_is_utf8());
                unsetenv("LC_ALL");
                unsetenv("LC_CTYPE");
                setenv("LANG", "C.UTF-8", 1);
                CHECK(term_text_locale_is_utf8());
        } else
                fprintf(stderr, "no C.UTF-8 locale here: its half skipped\n");
        CHECK_STR(setlocale(LC_CTYPE, NULL), "C");
}

DEFINE_TEST_MAIN()
