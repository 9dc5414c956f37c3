/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Replayed page-level samples (sample-replay.h). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cleanup.h"
#include "log.h"
#include "page-agg.h"
#include "pagesize.h"
#include "sample-replay.h"

/* The longest line kept across reads: "TGID CPU 0xADDR" is under 64 bytes. */
#define LINE_MAX_KEPT 128

struct sample_replay {
        int fd;
        const struct topology *topo;
        char tail[LINE_MAX_KEPT];  /* a line cut at the end of the last read */
        size_t n_tail;
        bool dropping;             /* a line too long was dropped: the rest of it up to its
                                    * newline is no line of its own */
        uint64_t skipped;
        char *buf;                 /* LINE_MAX_KEPT + REPLAY_MAX_BYTES, allocated once: a
                                    * fresh megabyte a tick, and one array a line, kept
                                    * ASan's quarantine mapping new memory all the time
                                    * (ticks of 2-8 s in a guest) */
};

int sample_replay_open(const char *path, const struct topology *t, struct sample_replay **ret) {
        struct sample_replay *r;
        int fd;

        if (!path || !*path)
                return -EINVAL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        r = calloc(1, sizeof(*r));
        if (!r || !(r->buf = malloc(LINE_MAX_KEPT + REPLAY_MAX_BYTES))) {
                free(r);
                close(fd);
                return -ENOMEM;
        }
        r->fd = fd;
        r->topo = t;
        *ret = r;
        return 0;
}

void sample_replay_free(struct sample_replay *r) {
        if (!r)
                return;
        close(r->fd);
        free(r->buf);
        free(r);
}

/* One line, "TGID CPU ADDR"; returns whether it gave a sample. */
static bool replay_line(struct sample_replay *r, const char *line, size_t len, replay_sample_fn fn, void *userdata) {
        struct page_sample s;
        int node;

        if (page_agg_parse_line(line, len, &s) <= 0) {
                r->skipped += len > 0 && line[0] != '#';
                return false;
        }
        node = topology_cpu_node(r->topo, s.cpu);
        if (node < 0) {
                r->skipped++;
                return false;
        }
        fn(userdata, s.tid, s.addr & ~(uint64_t) (page_size() - 1), (unsigned) node, 1);
        return true;
}

int sample_replay_drain(struct sample_replay *r, replay_sample_fn fn, void *userdata) {
        char *buf = r->buf;
        size_t len, start = 0;
        ssize_t got;
        int n = 0;

        memcpy(buf, r->tail, r->n_tail);
        got = read(r->fd, buf + r->n_tail, REPLAY_MAX_BYTES);
        if (got < 0)
                return errno == EAGAIN ? 0 : -errno;
        len = r->n_tail + (size_t) got;
        for (size_t i = 0; i < len; i++)
                if (buf[i] == '\n') {
                        if (!r->dropping)
                                n += replay_line(r, buf + start, i - start, fn, userdata);
                        r->dropping = false;
                        start = i + 1;
                }
        r->n_tail = len - start;
        if (r->n_tail >= LINE_MAX_KEPT || (r->dropping && r->n_tail)) {
                /* No line is this long: drop it, and what comes of it until its newline. */
                r->skipped += !r->dropping;
                r->dropping = true;
                r->n_tail = 0;
        }
        memcpy(r->tail, buf + start, r->n_tail);
        if (r->skipped)
                log_debug("Replayed samples: %" PRIu64 " line(s) skipped so far", r->skipped);
        return n;
}
