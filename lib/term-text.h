/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Text from tenants (process names, cgroup paths) made safe for an operator's
 * terminal: valid UTF-8 passes, and every control character goes, C1 (U+0080 to
 * U+009F: CSI, OSC and the rest, which terminals act on in UTF-8 as in 8-bit form)
 * as well as C0 and DEL, and so does every byte that is not valid UTF-8. */
#pragma once
#include <stddef.h>
#include <stdio.h>

/* The length of the valid UTF-8 character at s (1 to 4) whose code point is printable
 * (not C0, DEL or C1), or 0 for a byte that is not one. */
size_t term_text_char_len(const unsigned char *s);

/* s into buf (size bytes, NUL-terminated, cut at a character): each byte that is not
 * part of a printable character becomes '?'. Returns buf, or "-" for NULL. */
const char *term_text_safe(const char *s, char *buf, size_t size);

/* s to f, each byte that is not part of a printable character as \xNN. */
void term_text_print(FILE *f, const char *s);
