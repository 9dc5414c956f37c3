/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench.py's tiering-redis load: GETs of a Redis server's keys "key:0".."key:N-1"
 * (as DEBUG POPULATE names them), the key chosen by a Zipf law so that a few are hot,
 * each rank mapped to a key by a fixed permutation so that the hot keys are spread
 * over the whole dataset (populated in key order, so over all of its memory), not
 * the first ones allocated. One connection per thread, one request in flight each,
 * every request timed.
 *
 *     kvload PORT KEYS ZIPF_S THREADS WARM_S MEASURE_S
 *
 * Prints one JSON object: GETs a second and their latency percentiles over the
 * MEASURE_S seconds after WARM_S, and GETs a second for each 5 s from the start. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "latency-hist.h"

#define STEP_S 5
#define STEPS_MAX 1024

static int port;
static uint64_t keys;
static double *cdf;               /* cdf[r]: P(rank <= r) */
static uint64_t t_start, t_measure, t_end;

struct worker {
        pthread_t t;
        uint64_t seed;
        struct hist h;            /* the measured window's */
        uint64_t steps[STEPS_MAX];
        int error;
};

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static uint64_t next_rand(uint64_t *s) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

/* The key of a Zipf-drawn rank: rank * A mod keys, A prime and not a factor of keys. */
static uint64_t draw_key(uint64_t *seed) {
        double u = (double) (next_rand(seed) >> 11) / (double) (UINT64_C(1) << 53);
        uint64_t lo = 0, hi = keys - 1;

        while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;

                if (cdf[mid] < u)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return (lo * UINT64_C(2654435761)) % keys;
}

static int connect_local(void) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

        if (fd < 0)
                return -errno;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (struct sockaddr *) &a, sizeof(a)) < 0) {
                int e = -errno;

                close(fd);
                return e;
        }
        return fd;
}

/* Reads one bulk-string reply ("$len\r\n" then len bytes and "\r\n", or "$-1\r\n"). */
static int read_reply(int fd, char *buf, size_t size) {
        size_t have = 0, need = 0;

        for (;;) {
                ssize_t n = read(fd, buf + have, size - have);
                char *crlf;

                if (n <= 0)
                        return n < 0 ? -errno : -EPIPE;
                have += (size_t) n;
                if (!need && (crlf = memmem(buf, have, "\r\n", 2))) {
                        long len;

                        if (buf[0] != '$')
                                return -EPROTO;
                        len = strtol(buf + 1, NULL, 10);
                        need = (size_t) (crlf - buf) + 2 + (len >= 0 ? (size_t) len + 2 : 0);
                        if (need > size)
                                return -EMSGSIZE;
                }
                if (need && have >= need)
                        return 0;
                if (have == size)
                        return -EMSGSIZE;
        }
}

static void *work(void *arg) {
        struct worker *w = arg;
        char req[128], reply[65536];
        int fd = connect_local(), r;

        if (fd < 0) {
                w->error = -fd;
                return NULL;
        }
        for (;;) {
                uint64_t k = draw_key(&w->seed), t0 = now_ns(), t1;
                int klen = snprintf(req + 64, 64, "key:%" PRIu64, k);
                int len = snprintf(req, 64, "*2\r\n$3\r\nGET\r\n$%d\r\n", klen);

                memcpy(req + len, req + 64, (size_t) klen);
                memcpy(req + len + klen, "\r\n", 2);
                if (write(fd, req, (size_t) (len + klen + 2)) != len + klen + 2) {
                        w->error = errno ? errno : EPIPE;
                        break;
                }
                if ((r = read_reply(fd, reply, sizeof(reply))) < 0) {
                        w->error = -r;   /* read_reply's own code: errno may be stale */
                        break;
                }
                t1 = now_ns();
                if (t1 >= t_end)
                        break;
                if ((t1 - t_start) / 1000000000u / STEP_S < STEPS_MAX)
                        w->steps[(t1 - t_start) / 1000000000u / STEP_S]++;
                if (t0 >= t_measure)
                        hist_add(&w->h, t1 - t0);
        }
        close(fd);
        return NULL;
}

static uint64_t percentile(const struct hist *h, double q) {
        uint64_t seen = 0, want = (uint64_t) ceil(q * (double) h->n);

        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                seen += h->b[i];
                if (seen >= want && want)
                        return hist_bucket_low(i);
        }
        return h->worst;
}

int main(int argc, char **argv) {
        unsigned threads;
        double s, sum = 0, acc = 0;
        uint64_t warm, measure;
        struct worker *w;
        struct hist all = {};

        if (argc != 7) {
                fprintf(stderr, "usage: kvload PORT KEYS ZIPF_S THREADS WARM_S MEASURE_S\n");
                return 2;
        }
        port = atoi(argv[1]);
        keys = strtoull(argv[2], NULL, 10);
        s = atof(argv[3]);
        threads = (unsigned) atoi(argv[4]);
        warm = strtoull(argv[5], NULL, 10);
        measure = strtoull(argv[6], NULL, 10);
        if (!keys || keys % 2654435761u == 0 || !threads || threads > 64 || !measure) {
                fprintf(stderr, "kvload: bad arguments\n");
                return 2;
        }
        cdf = malloc(keys * sizeof(*cdf));
        w = calloc(threads, sizeof(*w));
        if (!cdf || !w)
                return 1;
        for (uint64_t r = 0; r < keys; r++)
                sum += pow((double) (r + 1), -s);
        for (uint64_t r = 0; r < keys; r++)
                cdf[r] = (acc += pow((double) (r + 1), -s) / sum);
        cdf[keys - 1] = 1.0;
        t_start = now_ns();
        t_measure = t_start + warm * 1000000000u;
        t_end = t_measure + measure * 1000000000u;
        for (unsigned i = 0; i < threads; i++) {
                w[i].seed = 0x9e3779b97f4a7c15u * (i + 1);
                if (pthread_create(&w[i].t, NULL, work, &w[i]) != 0)
                        return 1;
        }
        for (unsigned i = 0; i < threads; i++) {
                pthread_join(w[i].t, NULL);
                if (w[i].error) {
                        fprintf(stderr, "kvload: thread %u: %s\n", i, strerror(w[i].error));
                        return 1;
                }
                hist_merge(&all, &w[i].h);
        }
        printf("{\"gets_per_s\": %.1f, \"p50_us\": %.1f, \"p99_us\": %.1f, \"p999_us\": %.1f, \"gets\": %" PRIu64
               ", \"steps_s\": %d, \"gets_per_s_by_step\": [", (double) all.n / (double) measure,
               percentile(&all, 0.5) / 1e3, percentile(&all, 0.99) / 1e3, percentile(&all, 0.999) / 1e3, all.n,
               STEP_S);
        for (uint64_t k = 0; k < (warm + measure) / STEP_S && k < STEPS_MAX; k++) {
                uint64_t n = 0;

                for (unsigned i = 0; i < threads; i++)
                        n += w[i].steps[k];
                printf("%s%.1f", k ? ", " : "", (double) n / STEP_S);
        }
        printf("]}\n");
        free(cdf);
        free(w);
        return 0;
}
