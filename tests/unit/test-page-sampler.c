/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which page-level sampler (daemon/page-sampler.h): none when pmu = off (the chain
 * says the scheduler's source alone), a replay when asked (its samples drained per
 * process, as the manager takes them), and an error, said, for a replay file that is
 * not there. The PMU and software samplers need hardware or perf: test-source.py and
 * test-sw-sampler cover them. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "config.h"
#include "log.h"
#include "page-sampler.h"
#include "test.h"
#include "topology.h"

static struct topology *topo;

static const struct placement_source bpf_like = { .name = "bpf" };

struct drained {
        pid_t tgid[8];
        uint64_t addr[8];
        size_t n;
};

static void take(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        struct drained *d = userdata;

        if (d->n < 8) {
                d->tgid[d->n] = tgid;
                d->addr[d->n++] = addr;
        }
}

TEST(off_means_none) {
        struct nb_config cfg;
        struct page_sampler *s = (struct page_sampler *) 1;

        config_defaults(&cfg);
        cfg.pmu = PMU_MODE_OFF;
        CHECK_INT(page_sampler_choose(&cfg, "/proc", "/sys", topo, &placement_source_proc, &s), 0);
        CHECK(s == NULL);
        CHECK(page_sampler_name(s) == NULL);
        CHECK_STR(page_sampler_chain(&placement_source_proc, s), "proc");
        CHECK_STR(page_sampler_chain(&bpf_like, s), "bpf");
        config_done(&cfg);
}

TEST(replay_drains_what_was_written) {
        char path[] = "/tmp/test-page-sampler-XXXXXX";
        struct nb_config cfg;
        struct page_sampler *s = NULL;
        struct drained d = {};
        int fd = mkstemp(path);
        static const char lines[] = "100 0 0x7f0000001000\n101 2 0x7f0000002000\n";

        CHECK(fd >= 0 && write(fd, lines, sizeof(lines) - 1) == (ssize_t) sizeof(lines) - 1);
        close(fd);
        config_defaults(&cfg);
        cfg.pmu = PMU_MODE_REPLAY;
        free(cfg.replay_path);
        cfg.replay_path = strdup(path);
        CHECK_INT(page_sampler_choose(&cfg, "/proc", "/sys", topo, &placement_source_proc, &s), 0);
        CHECK(s != NULL);
        if (s) {
                CHECK_STR(page_sampler_name(s), "replay");
                CHECK_STR(page_sampler_chain(&placement_source_proc, s), "replay+proc");
                CHECK_INT(page_sampler_watch(s, 100), 0);
                page_sampler_span(s, 100, true);
                CHECK_INT(page_sampler_drain(s, take, &d), 2);
                CHECK_INT(d.n, 2);
                CHECK(d.n == 2 && d.tgid[0] == 100 && d.addr[1] == UINT64_C(0x7f0000002000));
                page_sampler_unwatch(s, 100);
                page_sampler_free(s);
        }
        unlink(path);
        config_done(&cfg);
}

TEST(replay_without_its_file_is_an_error) {
        struct nb_config cfg;
        struct page_sampler *s = NULL;

        config_defaults(&cfg);
        cfg.pmu = PMU_MODE_REPLAY;
        free(cfg.replay_path);
        cfg.replay_path = strdup("/nonexistent/replay");
        CHECK(page_sampler_choose(&cfg, "/proc", "/sys", topo, &placement_source_proc, &s) < 0);
        CHECK(s == NULL);
        config_done(&cfg);
}

static int intro(void) {
        log_set_max_level(LOG_LVL_ERR);
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0;
}

static void outro(void) {
        topology_free(topo);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
