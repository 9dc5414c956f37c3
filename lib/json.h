/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small streaming JSON writer: correct escaping of untrusted strings (comm
 * names, file paths), commas handled by nesting state. Writes to a FILE. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH_MAX 32

struct json {
        FILE *f;
        int depth;
        bool need_comma[JSON_DEPTH_MAX];
        bool after_key;
        bool pretty;
};

void json_init(struct json *j, FILE *f, bool pretty);
void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_double(struct json *j, double v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* Ends the document with a newline. */
void json_finish(struct json *j);
