/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tenants' text for a terminal (term-text.h). */
#include <stdint.h>
#include "term-text.h"

size_t term_text_char_len(const unsigned char *s) {
        uint32_t cp;
        size_t n;

        if (s[0] < 0x80)
                return s[0] >= 0x20 && s[0] != 0x7f ? 1 : 0;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2, cp = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3, cp = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4, cp = s[0] & 0x07;
        else
                return 0;       /* a continuation byte alone, or never valid */
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;       /* cut short (the NUL included) */
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* Overlong forms, surrogates, beyond U+10FFFF, and the C1 controls. */
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
            cp > 0x10ffff || (cp >= 0x80 && cp <= 0x9f))
                return 0;
        return n;
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
