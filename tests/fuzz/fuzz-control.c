/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control protocol on arbitrary bytes, both ways:
 *   - control_request_parse(): what any local user can send the daemon. Success only
 *     for the exact verbs, a pid in 1..INT32_MAX or a path for explain, at most
 *     CONTROL_FILTERS_MAX filters for list, nothing written on
 *     failure, and an error message every time it fails;
 *   - jv_parse(): how numabalancectl reads a reply. Valid or -EINVAL with an offset
 *     inside the input; no crash, no leak, bounded depth. */
#include <errno.h>
#include <string.h>
#include "control-request.h"
#include "fuzz.h"
#include "jv.h"

static void request(const char *s, size_t size) {
        struct control_request req, untouched;
        const char *err = NULL;
        int r;

        memset(&req, 0xa5, sizeof(req));
        untouched = req;
        r = control_request_parse(s, size, &req, &err);
        if (r < 0) {
                FUZZ_ASSERT(r == -EINVAL && err && *err);
                FUZZ_ASSERT(memcmp(&req, &untouched, sizeof(req)) == 0);
                return;
        }
        FUZZ_ASSERT(r == 0);
        FUZZ_ASSERT(size > 0 && size < CONTROL_REQUEST_MAX + 1);
        switch (req.cmd) {
        case CONTROL_STATUS:
                FUZZ_ASSERT(size >= 6 && memcmp(s, "status", 6) == 0);
                break;
        case CONTROL_LIST:
                FUZZ_ASSERT(size >= 4 && memcmp(s, "list", 4) == 0);
                FUZZ_ASSERT(req.n_filters <= CONTROL_FILTERS_MAX);
                break;
        case CONTROL_EXPLAIN:
                FUZZ_ASSERT(size > 8 && memcmp(s, "explain ", 8) == 0);
                FUZZ_ASSERT((req.pid >= 1) != (req.path >= 0));
                FUZZ_ASSERT(req.path < 0 || control_request_str(&req, req.path)[0] == '/');
                break;
        default:
                FUZZ_ASSERT(!"unknown command accepted");
        }
}

static unsigned depth(const struct jv *v) {
        unsigned d = 0;
        if (v->type == JV_ARRAY || v->type == JV_OBJECT)
                for (size_t i = 0; i < v->n; i++) {
                        unsigned c = depth(&v->items[i]);
                        if (c > d)
                                d = c;
                }
        return d + 1;
}

static void reply(const char *s, size_t size) {
        struct jv *v = NULL;
        size_t off = SIZE_MAX;
        int r = jv_parse(s, size, &v, &off);

        if (r < 0) {
                FUZZ_ASSERT(r == -EINVAL || r == -ENOMEM);
                FUZZ_ASSERT(v == NULL);
                if (r == -EINVAL)
                        FUZZ_ASSERT(off <= size);
                return;
        }
        FUZZ_ASSERT(v != NULL);
        FUZZ_ASSERT(depth(v) <= JV_DEPTH_MAX + 1);
        if (v->type == JV_STRING)
                FUZZ_ASSERT(v->text != NULL);
        jv_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        request((const char *) data, size);
        reply((const char *) data, size);
        return 0;
}
