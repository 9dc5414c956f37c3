/* SPDX-License-Identifier: GPL-2.0-or-later */
/* UTF-8 decoding (utf8.h). */
#include "utf8.h"

size_t utf8_seq(const unsigned char *s) {
        unsigned char c = s[0], lo = 0x80, hi = 0xbf;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                return (s[1] & 0xc0) == 0x80 ? 2 : 0;
        if (c >= 0xe0 && c <= 0xef) {
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed)
                        hi = 0x9f;     /* the surrogates */
                return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
        }
        if (c >= 0xf0 && c <= 0xf4) {
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;     /* above U+10FFFF */
                return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
        }
        return 0;
}

uint32_t utf8_code_point(const unsigned char *s, size_t n) {
        static const unsigned char lead_mask[] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
        uint32_t cp = s[0] & lead_mask[n <= 4 ? n : 0];

        for (size_t i = 1; i < n; i++)
                cp = (cp << 6) | (s[i] & 0x3f);
        return cp;
}
