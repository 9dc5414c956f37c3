/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Page-level samples replayed from a file (daemon/sample-replay.h): each drain hands
 * the lines added since the last one, the node of each sample's CPU, one count for the
 * page of its address; a line that does not parse, or names a CPU of no node, is
 * skipped and counted (said at debug level only); a line cut at the end waits for the
 * rest; one longer than any sample is dropped; more than a drain reads comes with the
 * next one. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "log.h"
#include "pagesize.h"
#include "sample-replay.h"
#include "test.h"
#include "topology.h"

static struct topology *topo;   /* tests/data/sys/2n2c: CPUs 0-1 node 0, 2-3 node 1 */
static char path[] = "/tmp/test-sample-replay-XXXXXX";

struct got {
        pid_t tgid[16];
        uint64_t addr[16];
        unsigned node[16];
        uint64_t count[16];
        size_t n, all;         /* n: kept (the first 16), all: every one handed */
};

static void take(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        struct got *g = userdata;

        if (g->n < 16) {
                g->tgid[g->n] = tgid;
                g->addr[g->n] = addr;
                g->node[g->n] = node;
                g->count[g->n] = count;
                g->n++;
        }
        g->all++;
}

/* The debug log: the only place the skipped lines are counted. */
static char logged[4096];

static void capture(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(logged);

        snprintf(logged + n, sizeof(logged) - n, "<%d>%s\n", level, msg);
}

/* A fresh empty replay file at path, opened. */
static struct sample_replay *fresh(void) {
        struct sample_replay *r = NULL;
        int fd = open(path, O_WRONLY | O_TRUNC);

        if (fd < 0)
                return NULL;
        close(fd);
        return sample_replay_open(path, topo, &r) < 0 ? NULL : r;
}

static void append(const char *text) {
        int fd = open(path, O_WRONLY | O_APPEND);

        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text))
                abort();
        close(fd);
}

TEST(lines_as_they_are_appended) {
        struct sample_replay *r = fresh();
        struct got g = {};

        CHECK(r != NULL);
        if (!r)
                return;
        CHECK_INT(sample_replay_drain(r, take, &g), 0);
        append("100 0 0x7f0000001000\n101 3 0x7f0000002000\nnot a sample\n102 9 0x1000\n103 2 0x7f00");
        CHECK_INT(sample_replay_drain(r, take, &g), 2);
        CHECK_INT(g.n, 2);
        CHECK(g.n == 2 && g.tgid[0] == 100 && g.addr[0] == UINT64_C(0x7f0000001000) && g.node[0] == 0);
        CHECK(g.n == 2 && g.tgid[1] == 101 && g.addr[1] == UINT64_C(0x7f0000002000) && g.node[1] == 1);
        /* The cut line's rest: it comes whole now, once. */
        append("00003000\n");
        CHECK_INT(sample_replay_drain(r, take, &g), 1);
        CHECK(g.n == 3 && g.tgid[2] == 103 && g.addr[2] == UINT64_C(0x7f0000003000) && g.node[2] == 1);
        CHECK_INT(sample_replay_drain(r, take, &g), 0);
        sample_replay_free(r);
}

TEST(missing_file_is_an_error) {
        struct sample_replay *r = NULL;

        CHECK(sample_replay_open("/nonexistent/replay", topo, &r) < 0);
        CHECK(r == NULL);
}

/* Each sample is one count for the page of its address (the base page size). */
TEST(one_count_per_sample_on_its_page) {
        struct sample_replay *r = fresh();
        struct got g = {};
        uint64_t page = page_size();

        CHECK(r != NULL);
        if (!r)
                return;
        append("100 1 0x7f0000001234\n100\t3\t0X7F0000005FFF\r\n");
        CHECK_INT(sample_replay_drain(r, take, &g), 2);
        CHECK(g.n == 2 && g.addr[0] == (UINT64_C(0x7f0000001234) & ~(page - 1)) && g.node[0] == 0 && g.count[0] == 1);
        CHECK(g.n == 2 && g.addr[1] == (UINT64_C(0x7f0000005fff) & ~(page - 1)) && g.node[1] == 1 && g.count[1] == 1);
        sample_replay_free(r);
}

/* What is not a sample is skipped, counted, and said at debug level; comments and
 * empty lines are not counted; the samples around them are taken. */
TEST(bad_lines_skipped_and_counted) {
        struct sample_replay *r = fresh();
        struct got g = {};

        CHECK(r != NULL);
        if (!r)
                return;
        log_set_max_level(LOG_LVL_DEBUG);
        log_set_sink(capture);
        logged[0] = 0;
        append("# TGID CPU ADDR\n"
               "\n"
               "200 0 0x1000\n"
               "not a sample\n"
               "100 0\n"                     /* two fields */
               "100 0 0x1000 extra\n"        /* four */
               "0 0 0x1000\n"                /* no process 0 */
               "-1 0 0x1000\n"
               "100 0 1000\n"                /* the address is hexadecimal, with 0x */
               "100 0 0xg000\n"
               "100 x 0x1000\n"
               "100 4 0x1000\n"              /* CPU 4: not in 2n2c */
               "100 8192 0x1000\n"           /* beyond any CPU number */
               "201 2 0x2000\n");
        CHECK_INT(sample_replay_drain(r, take, &g), 2);
        CHECK(g.n == 2 && g.tgid[0] == 200 && g.tgid[1] == 201 && g.node[1] == 1);
        CHECK_STR(logged, "<7>Replayed samples: 10 line(s) skipped so far\n");
        /* So far: the count goes on from there, said at each drain while there are some. */
        logged[0] = 0;
        append("bad\n");
        CHECK_INT(sample_replay_drain(r, take, &g), 0);
        CHECK_STR(logged, "<7>Replayed samples: 11 line(s) skipped so far\n");
        log_set_sink(NULL);
        log_set_max_level(LOG_LVL_ERR);
        sample_replay_free(r);
}

/* A "line" longer than any sample, with no newline yet, is dropped (and counted),
 * not kept growing; the lines after it are taken. */
TEST(overlong_line_dropped) {
        struct sample_replay *r = fresh();
        struct got g = {};
        char junk[301];

        CHECK(r != NULL);
        if (!r)
                return;
        memset(junk, 'x', sizeof(junk) - 1);
        junk[sizeof(junk) - 1] = 0;
        append(junk);
        CHECK_INT(sample_replay_drain(r, take, &g), 0);
        append("\n300 2 0x3000\n");
        CHECK_INT(sample_replay_drain(r, take, &g), 1);
        CHECK(g.n == 1 && g.tgid[0] == 300 && g.addr[0] == 0x3000);
        sample_replay_free(r);
}

/* More than a drain reads (REPLAY_MAX_BYTES): the rest comes with the next drain, and
 * the line cut at the boundary is neither lost nor taken twice. */
TEST(more_than_one_drain_reads) {
        struct sample_replay *r = fresh();
        static const char line[] = "100 0 0x7f0000001000\n";      /* 21 bytes */
        size_t lines = REPLAY_MAX_BYTES / (sizeof(line) - 1) * 6 / 5, first = REPLAY_MAX_BYTES / (sizeof(line) - 1);
        struct got g = {};
        FILE *f;

        CHECK(r != NULL);
        if (!r)
                return;
        f = fopen(path, "a");
        if (!f) {
                TEST_FAIL("fopen: %m");
                sample_replay_free(r);
                return;
        }
        for (size_t i = 0; i < lines; i++)
                fputs(line, f);
        fclose(f);
        CHECK_INT(sample_replay_drain(r, take, &g), first);
        CHECK_INT(sample_replay_drain(r, take, &g), lines - first);
        CHECK_INT(g.all, lines);
        CHECK_INT(sample_replay_drain(r, take, &g), 0);
        sample_replay_free(r);
}

TEST(no_path_is_invalid) {
        struct sample_replay *r = NULL;

        CHECK_INT(sample_replay_open(NULL, topo, &r), -EINVAL);
        CHECK_INT(sample_replay_open("", topo, &r), -EINVAL);
        CHECK(r == NULL);
}

/* A line too long to keep, cut at a read's end: the rest of it, coming in a later
 * drain, is no line of its own (it made up a sample: tgid 100 at 0x5000). */
TEST(the_rest_of_a_dropped_line_is_dropped_too) {
        struct sample_replay *r = fresh();
        struct got g = {};
        char junk[201];

        CHECK(r != NULL);
        if (!r)
                return;
        memset(junk, '1', 200);
        junk[200] = 0;
        append(junk);
        CHECK_INT(sample_replay_drain(r, take, &g), 0);
        append(" 100 0 0x5000\n101 0 0x6000\n");
        CHECK_INT(sample_replay_drain(r, take, &g), 1);
        CHECK(g.n >= 1 && g.tgid[g.n - 1] == 101);
        for (size_t i = 0; i < g.n; i++)
                CHECK(g.tgid[i] != 100);
        sample_replay_free(r);
}

static int intro(void) {
        int fd = mkstemp(path);

        if (fd < 0) {
                perror("mkstemp");
                return 1;
        }
        close(fd);
        log_set_max_level(LOG_LVL_ERR);
        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0) {
                fprintf(stderr, "cannot read the stored 2n2c topology\n");
                return 1;
        }
        return 0;
}

static void outro(void) {
        unlink(path);
        topology_free(topo);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
