/* SPDX-License-Identifier: GPL-2.0-or-later */
/* UTF-8 as tenants' names need it: every writer of their text (the metrics labels,
 * the JSON replies, the log, numabalancectl's terminal output) decodes with these,
 * so that valid means the same everywhere. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* The length (1 to 4) of the valid UTF-8 sequence s starts with, 0 if it starts none:
 * no overlong forms, no surrogates, nothing above U+10FFFF (what Go's
 * utf8.ValidString, and so node_exporter, accepts). Never reads past a NUL. */
size_t utf8_seq(const unsigned char *s);

/* The code point of the valid sequence of n bytes (utf8_seq()) at s. */
uint32_t utf8_code_point(const unsigned char *s, size_t n);

/* Whether code point cp is a control character: C0, DEL or C1 (U+0080-U+009F, which
 * terminals act on as they do on ESC). */
static inline int utf8_is_control(uint32_t cp) {
        return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}
