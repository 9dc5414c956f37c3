/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small, strict JSON reader (RFC 8259): one value, nothing but white space around
 * it, no trailing commas, no control bytes in strings, bounded depth. Used by
 * numabalancectl to read the daemon's replies, and by the tests to check that every
 * document the daemon writes is valid. Numbers keep their text, so that 64-bit
 * counters read back exactly. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cleanup.h"

#define JV_DEPTH_MAX 64

enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv {
        enum jv_type type;
        bool b;
        double num;
        char *text;                /* JV_STRING: decoded (UTF-8, NUL-terminated); JV_NUMBER: as written */
        size_t n;                  /* JV_ARRAY, JV_OBJECT: number of items */
        struct jv *items;
        char **keys;               /* JV_OBJECT: decoded keys */
};

/* Returns 0, -EINVAL (not valid JSON; *ret_offset, if not NULL, says where), or -ENOMEM. */
int jv_parse(const char *buf, size_t len, struct jv **ret, size_t *ret_offset);
void jv_free(struct jv *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct jv *, jv_free);

/* Member of an object (the first with that key), or NULL. NULL-safe. */
const struct jv *jv_get(const struct jv *obj, const char *key);
/* The value as a type, or the default when v is NULL or of another type (or, for
 * jv_u64/jv_i64, not an integer in range). */
const char *jv_str(const struct jv *v, const char *dflt);
uint64_t jv_u64(const struct jv *v, uint64_t dflt);
int64_t jv_i64(const struct jv *v, int64_t dflt);
double jv_num(const struct jv *v, double dflt);
bool jv_bool(const struct jv *v, bool dflt);
bool jv_is_null(const struct jv *v);
