/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Page-level samples replayed from a file (daemon/sample-replay.h): each drain hands
 * the lines added since the last one, the node of each sample's CPU; a line that does
 * not parse, or names a CPU of no node, is skipped; a line cut at the end waits for
 * the rest. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "sample-replay.h"
#include "test.h"
#include "topology.h"

static struct topology *topo;   /* tests/data/sys/2n2c: CPUs 0-1 node 0, 2-3 node 1 */
static char path[] = "/tmp/test-sample-replay-XXXXXX";

struct got {
        pid_t tgid[16];
        uint64_t addr[16];
        unsigned node[16];
        size_t n;
};

static void take(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        struct got *g = userdata;

        if (g->n < 16) {
                g->tgid[g->n] = tgid;
                g->addr[g->n] = addr;
                g->node[g->n] = node;
                g->n++;
        }
}

static void append(const char *text) {
        int fd = open(path, O_WRONLY | O_APPEND);

        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text))
                abort();
        close(fd);
}

TEST(lines_as_they_are_appended) {
        struct sample_replay *r = NULL;
        struct got g = {};
        int fd = mkstemp(path);

        if (fd < 0) {
                TEST_FAIL("mkstemp: %m");
                return;
        }
        close(fd);
        CHECK_INT(sample_replay_open(path, topo, &r), 0);
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
        unlink(path);
}

TEST(missing_file_is_an_error) {
        struct sample_replay *r = NULL;

        CHECK(sample_replay_open("/nonexistent/replay", topo, &r) < 0);
        CHECK(r == NULL);
}

static int intro(void) {
        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0) {
                fprintf(stderr, "cannot read the stored 2n2c topology\n");
                return 1;
        }
        return 0;
}

static void outro(void) {
        topology_free(topo);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
