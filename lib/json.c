/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>
#include <inttypes.h>
#include "json.h"
#include "utf8.h"

void json_init(struct json *j, FILE *f, bool pretty) {
        *j = (struct json) { .f = f, .pretty = pretty };
}

static void indent(struct json *j) {
        if (!j->pretty)
                return;
        fputc('\n', j->f);
        for (int i = 0; i < j->depth; i++)
                fputs("  ", j->f);
}

/* Called before every value or key: separator and indentation. */
static void before(struct json *j) {
        if (j->after_key) {
                j->after_key = false;
                return;
        }
        if (j->depth > 0) {
                if (j->need_comma[j->depth])
                        fputc(',', j->f);
                j->need_comma[j->depth] = true;
                indent(j);
        }
}

static void open_(struct json *j, char c) {
        before(j);
        fputc(c, j->f);
        if (j->depth + 1 < JSON_DEPTH_MAX)
                j->depth++;
        j->need_comma[j->depth] = false;
}

static void close_(struct json *j, char c) {
        bool had = j->need_comma[j->depth];
        if (j->depth > 0)
                j->depth--;
        if (had)
                indent(j);
        fputc(c, j->f);
}

void json_object_begin(struct json *j) { open_(j, '{'); }
void json_object_end(struct json *j) { close_(j, '}'); }
void json_array_begin(struct json *j) { open_(j, '['); }
void json_array_end(struct json *j) { close_(j, ']'); }

/* Strings from tenants (comm, cgroup paths) as valid JSON in valid UTF-8: UTF-8
 * passes as it is (a name round-trips), every control character is escaped (C1 too,
 * U+0080-U+009F, which terminals act on), and a byte that is not UTF-8 becomes
 * U+FFFD, so that nothing from /proc can break the document. */
static void put_string(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; p && *p;) {
                size_t n = utf8_seq(p);
                uint32_t cp = n ? utf8_code_point(p, n) : 0;

                if (n == 0) {
                        fputs("\\ufffd", f);
                        p++;
                        continue;
                }
                if (cp == '"')
                        fputs("\\\"", f);
                else if (cp == '\\')
                        fputs("\\\\", f);
                else if (cp == '\n')
                        fputs("\\n", f);
                else if (cp == '\t')
                        fputs("\\t", f);
                else if (cp == '\r')
                        fputs("\\r", f);
                else if (utf8_is_control(cp))
                        fprintf(f, "\\u%04x", (unsigned) cp);
                else
                        fwrite(p, 1, n, f);
                p += n;
        }
        fputc('"', f);
}

void json_key(struct json *j, const char *key) {
        before(j);
        put_string(j->f, key);
        fputs(j->pretty ? ": " : ":", j->f);
        j->after_key = true;
}

void json_string(struct json *j, const char *s) {
        before(j);
        if (s)
                put_string(j->f, s);
        else
                fputs("null", j->f);
}

void json_u64(struct json *j, uint64_t v) { before(j); fprintf(j->f, "%" PRIu64, v); }
void json_i64(struct json *j, int64_t v) { before(j); fprintf(j->f, "%" PRId64, v); }
void json_bool(struct json *j, bool v) { before(j); fputs(v ? "true" : "false", j->f); }
void json_null(struct json *j) { before(j); fputs("null", j->f); }

void json_double(struct json *j, double v) {
        before(j);
        if (isfinite(v))
                fprintf(j->f, "%.6g", v);
        else
                fputs("null", j->f);
}

void json_finish(struct json *j) { fputc('\n', j->f); fflush(j->f); }
