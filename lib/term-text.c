/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tenants' text for a terminal (term-text.h). */
#include <langinfo.h>
#include <locale.h>
#include <stdint.h>
#include <strings.h>
#include "term-text.h"
#include "utf8.h"

enum { CHARSET_UNSET, CHARSET_UTF8, CHARSET_ASCII };
static int charset;

bool term_text_locale_is_utf8(void) {
        locale_t l = newlocale(LC_CTYPE_MASK, "", (locale_t) 0);
        const char *cs;
        bool r;

        if (l == (locale_t) 0)
                return false;
        cs = nl_langinfo_l(CODESET, l);
        r = cs && (strcasecmp(cs, "UTF-8") == 0 || strcasecmp(cs, "UTF8") == 0);
        freelocale(l);
        return r;
}

void term_text_set_utf8(bool utf8) {
        charset = utf8 ? CHARSET_UTF8 : CHARSET_ASCII;
}

/* Invisible format characters: shown as they are, they hide text or reorder it (a
 * right-to-left override before "gpj.exe" makes it read "exe.jpg"). The
 * bidirectional embeddings, overrides and isolates and Unicode's other default
 * ignorable format characters (category Cf, and the line and paragraph separators). */
static bool invisible(uint32_t cp) {
        return cp == 0x00ad ||                        /* soft hyphen */
               cp == 0x061c ||                        /* Arabic letter mark */
               cp == 0x180e ||                        /* Mongolian vowel separator */
               (cp >= 0x200b && cp <= 0x200f) ||      /* zero-width space, joiners, LRM, RLM */
               (cp >= 0x2028 && cp <= 0x202e) ||      /* line, paragraph separators; LRE..RLO */
               (cp >= 0x2060 && cp <= 0x206f) ||      /* word joiner.. ; LRI..PDI; deprecated */
               cp == 0xfeff ||                        /* zero-width no-break space (BOM) */
               (cp >= 0xfff9 && cp <= 0xfffb) ||      /* interlinear annotation */
               (cp >= 0x1d173 && cp <= 0x1d17a) ||    /* musical formatting */
               (cp >= 0xe0000 && cp <= 0xe007f);      /* tags */
}

size_t term_text_char_len(const unsigned char *s) {
        size_t n;
        uint32_t cp;

        if (charset == CHARSET_UNSET)
                term_text_set_utf8(term_text_locale_is_utf8());
        if (charset == CHARSET_ASCII)
                return *s >= 0x20 && *s < 0x7f ? 1 : 0;
        n = utf8_seq(s);
        if (n == 0)
                return 0;
        cp = utf8_code_point(s, n);
        return utf8_is_control(cp) || invisible(cp) ? 0 : n;
}

const char *term_text_safe(const char *s, char *buf, size_t size) {
        const unsigned char *p = (const unsigned char *) s;
        size_t o = 0;

        if (!s)
                return "-";
        if (size == 0)
                return "";
        while (*p) {
                size_t n = term_text_char_len(p);

                if (n == 0) {
                        if (o + 1 >= size)
                                break;
                        buf[o++] = '?';
                        p++;
                        continue;
                }
                if (o + n >= size)
                        break;
                for (size_t i = 0; i < n; i++)
                        buf[o++] = (char) p[i];
                p += n;
        }
        buf[o] = 0;
        return buf;
}

void term_text_print(FILE *f, const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        while (p && *p) {
                size_t n = term_text_char_len(p);

                if (n == 0) {
                        fprintf(f, "\\x%02x", *p++);
                        continue;
                }
                fwrite(p, 1, n, f);
                p += n;
        }
}
