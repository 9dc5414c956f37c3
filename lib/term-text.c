/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Tenants' text for a terminal (term-text.h). */
#include <stdint.h>
#include "term-text.h"
#include "utf8.h"

size_t term_text_char_len(const unsigned char *s) {
        size_t n = utf8_seq(s);

        return n && !utf8_is_control(utf8_code_point(s, n)) ? n : 0;
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
