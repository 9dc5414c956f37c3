/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "jv.h"
#include "parse.h"

struct reader {
        const char *s;
        size_t len, pos;
};

static void ws(struct reader *r) {
        while (r->pos < r->len && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' || r->s[r->pos] == '\n' ||
                                   r->s[r->pos] == '\r'))
                r->pos++;
}

static bool lit(struct reader *r, const char *word) {
        size_t n = strlen(word);
        if (r->len - r->pos < n || memcmp(r->s + r->pos, word, n) != 0)
                return false;
        r->pos += n;
        return true;
}

static int hex4(struct reader *r, unsigned *ret) {
        unsigned v = 0;
        if (r->len - r->pos < 4)
                return -EINVAL;
        for (int i = 0; i < 4; i++) {
                char c = r->s[r->pos++];
                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (unsigned) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (unsigned) (c - 'A' + 10);
                else
                        return -EINVAL;
        }
        *ret = v;
        return 0;
}

static size_t put_utf8(char *out, unsigned cp) {
        if (cp < 0x80) {
                out[0] = (char) cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char) (0xc0 | (cp >> 6));
                out[1] = (char) (0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char) (0xe0 | (cp >> 12));
                out[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char) (0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char) (0xf0 | (cp >> 18));
        out[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char) (0x80 | (cp & 0x3f));
        return 4;
}

/* At the opening quote. A decoded string is never longer than its escaped form. */
static int string(struct reader *r, char **ret) {
        size_t start = ++r->pos, w = 0;
        char *out;

        /* Find the end first, to size the buffer. */
        while (r->pos < r->len && r->s[r->pos] != '"') {
                /* A backslash skips the next byte, unless it is the last one: the
                 * error's offset stays inside the input. */
                if (r->s[r->pos] == '\\' && r->pos + 1 < r->len)
                        r->pos++;
                r->pos++;
        }
        if (r->pos >= r->len)
                return -EINVAL;
        out = malloc(r->pos - start + 1);
        if (!out)
                return -ENOMEM;
        r->pos = start;
        while (r->s[r->pos] != '"') {
                unsigned char c = (unsigned char) r->s[r->pos++];
                unsigned cp, lo;

                if (c < 0x20)
                        goto bad;
                if (c != '\\') {
                        out[w++] = (char) c;
                        continue;
                }
                switch (r->s[r->pos++]) {
                case '"': out[w++] = '"'; break;
                case '\\': out[w++] = '\\'; break;
                case '/': out[w++] = '/'; break;
                case 'b': out[w++] = '\b'; break;
                case 'f': out[w++] = '\f'; break;
                case 'n': out[w++] = '\n'; break;
                case 'r': out[w++] = '\r'; break;
                case 't': out[w++] = '\t'; break;
                case 'u':
                        if (hex4(r, &cp) < 0)
                                goto bad;
                        if (cp >= 0xd800 && cp < 0xdc00) {
                                if (!lit(r, "\\u") || hex4(r, &lo) < 0 || lo < 0xdc00 || lo >= 0xe000)
                                        goto bad;
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        } else if (cp >= 0xdc00 && cp < 0xe000)
                                goto bad;
                        if (cp == 0)
                                goto bad;  /* would cut the C string */
                        w += put_utf8(out + w, cp);
                        break;
                default:
                        goto bad;
                }
        }
        r->pos++;
        out[w] = 0;
        *ret = out;
        return 0;
bad:
        free(out);
        return -EINVAL;
}

static int number(struct reader *r, struct jv *v) {
        size_t start = r->pos;
        char *end;

        if (r->pos < r->len && r->s[r->pos] == '-')
                r->pos++;
        if (r->pos >= r->len)
                return -EINVAL;
        if (r->s[r->pos] == '0')
                r->pos++;
        else if (r->s[r->pos] >= '1' && r->s[r->pos] <= '9')
                while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
                        r->pos++;
        else
                return -EINVAL;
        if (r->pos < r->len && r->s[r->pos] == '.') {
                size_t d = ++r->pos;
                while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
                        r->pos++;
                if (r->pos == d)
                        return -EINVAL;
        }
        if (r->pos < r->len && (r->s[r->pos] == 'e' || r->s[r->pos] == 'E')) {
                size_t d;
                r->pos++;
                if (r->pos < r->len && (r->s[r->pos] == '+' || r->s[r->pos] == '-'))
                        r->pos++;
                d = r->pos;
                while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
                        r->pos++;
                if (r->pos == d)
                        return -EINVAL;
        }
        v->type = JV_NUMBER;
        v->text = strndup(r->s + start, r->pos - start);
        if (!v->text)
                return -ENOMEM;
        v->num = strtod(v->text, &end);  /* validated above: a full JSON number */
        return 0;
}

static int value(struct reader *r, struct jv *v, int depth);

/* At the '"' of an object member's key: the key, and the ':' after it. */
static int member_key(struct reader *r, char **ret) {
        char *key = NULL;
        int q;

        if (r->pos >= r->len || r->s[r->pos] != '"')
                return -EINVAL;
        q = string(r, &key);
        if (q < 0)
                return q;
        ws(r);
        if (r->pos >= r->len || r->s[r->pos] != ':') {
                free(key);
                return -EINVAL;
        }
        r->pos++;
        *ret = key;
        return 0;
}

/* One more, empty, item of array or object v (cap: its room so far), and in an
 * object its key, which this takes over even on failure. */
static int append_item(struct jv *v, size_t *cap, char *key, struct jv **ret) {
        bool obj = v->type == JV_OBJECT;

        if (v->n == *cap) {
                size_t nc = *cap ? *cap * 2 : 8;
                struct jv *ni = realloc(v->items, nc * sizeof(*ni));
                char **nk = ni && obj ? realloc(v->keys, nc * sizeof(*nk)) : NULL;
                if (ni)
                        v->items = ni;
                if (nk)
                        v->keys = nk;
                if (!ni || (obj && !nk)) {
                        free(key);
                        return -ENOMEM;
                }
                *cap = nc;
        }
        v->items[v->n] = (struct jv) {};
        if (obj)
                v->keys[v->n] = key;
        *ret = &v->items[v->n++];
        return 0;
}

/* At the '[' or '{'. Items are added to v as they are read: on failure, jv_done()
 * of v frees what was read. */
static int container(struct reader *r, struct jv *v, int depth) {
        bool obj = r->s[r->pos] == '{';
        char close = obj ? '}' : ']';
        size_t cap = 0;
        int q;

        v->type = obj ? JV_OBJECT : JV_ARRAY;
        r->pos++;
        ws(r);
        if (r->pos < r->len && r->s[r->pos] == close) {
                r->pos++;
                return 0;
        }
        for (;;) {
                char *key = NULL;
                struct jv *item;

                ws(r);
                if (obj) {
                        q = member_key(r, &key);
                        if (q < 0)
                                return q;
                }
                q = append_item(v, &cap, key, &item);
                if (q < 0)
                        return q;
                q = value(r, item, depth + 1);
                if (q < 0)
                        return q;
                ws(r);
                if (r->pos >= r->len)
                        return -EINVAL;
                if (r->s[r->pos] == ',') {
                        r->pos++;
                        continue;
                }
                if (r->s[r->pos] == close) {
                        r->pos++;
                        return 0;
                }
                return -EINVAL;
        }
}

static int value(struct reader *r, struct jv *v, int depth) {
        ws(r);
        if (r->pos >= r->len)
                return -EINVAL;
        if (depth > JV_DEPTH_MAX)
                return -EINVAL;
        switch (r->s[r->pos]) {
        case 'n':
                if (!lit(r, "null"))
                        return -EINVAL;
                v->type = JV_NULL;
                return 0;
        case 't':
        case 'f':
                v->type = JV_BOOL;
                v->b = r->s[r->pos] == 't';
                return lit(r, v->b ? "true" : "false") ? 0 : -EINVAL;
        case '"':
                v->type = JV_STRING;
                return string(r, &v->text);
        case '[':
        case '{':
                return container(r, v, depth);
        default:
                return number(r, v);
        }
}

static void jv_done(struct jv *v) {
        for (size_t i = 0; i < v->n; i++) {
                jv_done(&v->items[i]);
                if (v->type == JV_OBJECT)
                        free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
        free(v->text);
}

void jv_free(struct jv *v) {
        if (!v)
                return;
        jv_done(v);
        free(v);
}

int jv_parse(const char *buf, size_t len, struct jv **ret, size_t *ret_offset) {
        struct reader r = { .s = buf, .len = len };
        struct jv *v = calloc(1, sizeof(*v));
        int q;

        if (!v)
                return -ENOMEM;
        q = value(&r, v, 0);
        if (q >= 0) {
                ws(&r);
                if (r.pos != r.len)
                        q = -EINVAL;
        }
        if (q < 0) {
                if (ret_offset)
                        *ret_offset = r.pos;
                jv_free(v);
                return q;
        }
        *ret = v;
        return 0;
}

const struct jv *jv_get(const struct jv *obj, const char *key) {
        if (!obj || obj->type != JV_OBJECT)
                return NULL;
        for (size_t i = 0; i < obj->n; i++)
                if (strcmp(obj->keys[i], key) == 0)
                        return &obj->items[i];
        return NULL;
}

const char *jv_str(const struct jv *v, const char *dflt) {
        return v && v->type == JV_STRING ? v->text : dflt;
}

uint64_t jv_u64(const struct jv *v, uint64_t dflt) {
        uint64_t x;
        if (!v || v->type != JV_NUMBER || parse_u64(v->text, 0, UINT64_MAX, &x) < 0)
                return dflt;
        return x;
}

int64_t jv_i64(const struct jv *v, int64_t dflt) {
        uint64_t x;
        if (!v || v->type != JV_NUMBER)
                return dflt;
        if (v->text[0] == '-') {
                if (parse_u64(v->text + 1, 0, (uint64_t) INT64_MAX + 1, &x) < 0)
                        return dflt;
                return x == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) x;
        }
        if (parse_u64(v->text, 0, INT64_MAX, &x) < 0)
                return dflt;
        return (int64_t) x;
}

double jv_num(const struct jv *v, double dflt) {
        return v && v->type == JV_NUMBER && isfinite(v->num) ? v->num : dflt;
}

bool jv_bool(const struct jv *v, bool dflt) {
        return v && v->type == JV_BOOL ? v->b : dflt;
}

bool jv_is_null(const struct jv *v) {
        return !v || v->type == JV_NULL;
}
