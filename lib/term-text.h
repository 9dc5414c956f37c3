/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Text from tenants (process names, cgroup paths) made safe for an operator's
 * terminal. Under a UTF-8 locale, valid UTF-8 passes but for what a terminal acts on
 * or what hides or reorders text: every control character, C1 (U+0080 to U+009F: CSI,
 * OSC and the rest, which terminals act on in UTF-8 as in 8-bit form) as well as C0
 * and DEL; the bidirectional overrides, embeddings and isolates (U+202A-U+202E,
 * U+2066-U+2069), which make a name read as another; and the other invisible format
 * characters (zero-width ones, U+2028/U+2029, U+FEFF, tags, ...). So does every byte
 * that is not valid UTF-8. Under any other locale (C, POSIX, Latin-1...), only
 * printable ASCII passes: an 8-bit terminal takes the 0x9b of U+00DB (0xc3 0x9b) for
 * CSI. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Whether the environment's character type locale (LC_ALL, LC_CTYPE, LANG: what
 * setlocale(LC_CTYPE, "") would choose) is UTF-8. The process's own locale is not
 * changed. A locale that is not installed is not UTF-8. */
bool term_text_locale_is_utf8(void);

/* Whether the output may carry UTF-8 (true) or printable ASCII only (false). Until
 * this is called, the first use takes it from term_text_locale_is_utf8(). */
void term_text_set_utf8(bool utf8);

/* The length of the character at s (1 to 4) that may be printed as it is, or 0 for a
 * byte that is not one. */
size_t term_text_char_len(const unsigned char *s);

/* s into buf (size bytes, NUL-terminated, cut at a character): each byte that is not
 * part of a printable character becomes '?'. Returns buf, or "-" for NULL. */
const char *term_text_safe(const char *s, char *buf, size_t size);

/* s to f, each byte that is not part of a printable character as \xNN. */
void term_text_print(FILE *f, const char *s);
