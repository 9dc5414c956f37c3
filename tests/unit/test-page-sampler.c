/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which page-level sampler (daemon/page-sampler.h): none when pmu = off or when no PMU
 * can be looked for (the chain says the scheduler's source alone, and why), a replay
 * when asked (its samples drained per process, as the manager takes them; the stored
 * recording tests/data/sw/split2.samples through it, as the VM scenario 106 feeds it),
 * and an error, said, for a replay file that is not there. The PMU and software
 * samplers need hardware or perf: test-source.py and test-sw-sampler cover them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "config.h"
#include "log.h"
#include "page-sampler.h"
#include "pagesize.h"
#include "test.h"
#include "topology.h"

static struct topology *topo;   /* tests/data/sys/2n2c */
static struct topology *topo_2n1m;  /* the recording's: CPU 0 on node 0, CPU 1 on node 1 */
static char logged[4096];

/* The log lines at info level or above since the last clear: the chain as said. */
static void capture(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(logged);

        snprintf(logged + n, sizeof(logged) - n, "<%d>%s\n", level, msg);
}

static const struct node_time_source bpf_like = { .name = "bpf" };

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
        CHECK_INT(page_sampler_choose(&cfg, "/proc", "/sys", topo, &node_time_source_proc, &s), 0);
        CHECK(s == NULL);
        CHECK(page_sampler_name(s) == NULL);
        CHECK_STR(page_sampler_chain(&node_time_source_proc, s), "proc");
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
        CHECK_INT(page_sampler_choose(&cfg, "/proc", "/sys", topo, &node_time_source_proc, &s), 0);
        CHECK(s != NULL);
        if (s) {
                CHECK_STR(page_sampler_name(s), "replay");
                CHECK_STR(page_sampler_chain(&node_time_source_proc, s), "replay+proc");
                CHECK_STR(page_sampler_chain(&bpf_like, s), "replay+bpf");
                CHECK_INT(page_sampler_watch(s, 100, 0), 0);
                page_sampler_span(s, 100, 0, true);
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
        CHECK(page_sampler_choose(&cfg, "/proc", "/sys", topo, &node_time_source_proc, &s) < 0);
        CHECK(s == NULL);
        config_done(&cfg);
}

/* The chain line the operator reads when page-level sampling is off. */
TEST(off_says_the_chain) {
        struct nb_config cfg;
        struct page_sampler *s = NULL;

        config_defaults(&cfg);
        cfg.pmu = PMU_MODE_OFF;
        logged[0] = 0;
        CHECK_INT(page_sampler_choose(&cfg, "/proc", "/sys", topo, &node_time_source_proc, &s), 0);
        CHECK_STR(logged, "<6>Sampling chain: /proc only: page-level sampling off: [sample] pmu = off\n");
        logged[0] = 0;
        CHECK_INT(page_sampler_choose(&cfg, "/proc", "/sys", topo, &bpf_like, &s), 0);
        CHECK_STR(logged, "<6>Sampling chain: BPF scheduler only: page-level sampling off: [sample] pmu = off\n");
        CHECK(s == NULL);
        config_done(&cfg);
}

/* pmu = auto where the PMUs cannot be listed (no bus/event_source under sys_root): no
 * sampler, not an error, and the chain says which directory. */
TEST(auto_without_event_sources_is_none) {
        struct nb_config cfg;
        struct page_sampler *s = (struct page_sampler *) 1;
        char sys[] = "/tmp/test-page-sampler-sys-XXXXXX", expect[512];

        if (!mkdtemp(sys)) {
                TEST_FAIL("mkdtemp: %m");
                return;
        }
        config_defaults(&cfg);
        CHECK_INT(cfg.pmu, PMU_MODE_AUTO);
        logged[0] = 0;
        CHECK_INT(page_sampler_choose(&cfg, "/proc", sys, topo, &node_time_source_proc, &s), 0);
        CHECK(s == NULL);
        CHECK_STR(page_sampler_chain(&node_time_source_proc, s), "proc");
        snprintf(expect, sizeof(expect), "<6>Sampling chain: /proc only: page-level sampling off: cannot read "
                 "%s/bus/event_source/devices: No such file or directory\n", sys);
        CHECK_STR(logged, expect);
        config_done(&cfg);
        rmdir(sys);
}

/* No sampler: the calls that take one may still be made with none. */
TEST(none_is_safe_to_pass) {
        page_sampler_span(NULL, 1, 0, true);
        page_sampler_free(NULL);
        CHECK(page_sampler_name(NULL) == NULL);
        CHECK_STR(page_sampler_chain(NULL, NULL), "proc");
}

/* pmu = replay without replay_path: refused, said. */
TEST(replay_without_a_path_is_an_error) {
        struct nb_config cfg;
        struct page_sampler *s = NULL;

        config_defaults(&cfg);
        cfg.pmu = PMU_MODE_REPLAY;
        free(cfg.replay_path);
        cfg.replay_path = NULL;
        logged[0] = 0;
        CHECK_INT(page_sampler_choose(&cfg, "/proc", "/sys", topo, &node_time_source_proc, &s), -EINVAL);
        CHECK(s == NULL);
        CHECK_STR(logged, "<3>[sample] pmu = replay: cannot open replay_path \"\": Invalid argument\n");
        config_done(&cfg);
}

struct pages {
        pid_t pid;
        uint64_t start, length, page;
        uint64_t n, others, unaligned, wrong_half;
        uint64_t per_node[2];
        uint16_t *hits;         /* per page of the buffer */
};

static void tally(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        struct pages *p = userdata;

        p->n++;
        if (tgid != p->pid || addr < p->start || addr >= p->start + p->length || node > 1) {
                p->others++;
                return;
        }
        p->unaligned += addr % p->page != 0;
        /* Thread A (CPU 0, node 0) read the first half, thread B (node 1) the second. */
        p->wrong_half += (addr - p->start < p->length / 2) != (node == 0);
        p->per_node[node] += count;
        p->hits[(addr - p->start) / p->page] += (uint16_t) count;
}

/* The stored recording (tests/data/sw/README.md: two threads on CPU 0 and CPU 1 of the
 * 2n1m topology, each reading its own half of 8 MiB) turned into replay lines for one
 * process, as tests/vm/scenarios/106-replay.py does: the drain hands every sample, each
 * on the node of its thread's half; thread B's pages mostly sampled twice or more (the
 * evidence the two-sample rule needs). */
TEST(replay_the_stored_recording) {
        char path[] = "/tmp/test-page-sampler-split2-XXXXXX", line[128];
        struct pages p = { .pid = 4242, .start = UINT64_C(0x7f0000000000), .length = 8 << 20, .page = page_size() };
        FILE *in = fopen(TEST_DATA_DIR "/sw/split2.samples", "r"), *out;
        int fd = mkstemp(path), cpu_of[2] = { -1, -1 };
        uint64_t lines = 0, twice = 0;
        struct page_sampler *s = NULL;
        struct nb_config cfg;
        int r;

        if (!in || fd < 0 || !(out = fdopen(fd, "w"))) {
                TEST_FAIL("the recording or a temporary file: %m");
                if (in)
                        fclose(in);
                return;
        }
        for (unsigned c = 0; c < 8; c++) {
                int node = topology_cpu_node(topo_2n1m, c);
                if (node >= 0 && node < 2 && cpu_of[node] < 0)
                        cpu_of[node] = (int) c;
        }
        CHECK(cpu_of[0] == 0 && cpu_of[1] == 1);
        while (fgets(line, sizeof(line), in)) {
                unsigned node;
                uint64_t off;

                if (line[0] == '#' || sscanf(line, "%u 0x%" SCNx64, &node, &off) != 2)
                        continue;
                if (node >= 2 || off >= p.length) {
                        TEST_FAIL("a recorded sample off the 2 nodes or the 8 MiB: %s", line);
                        continue;
                }
                fprintf(out, "%d %d 0x%" PRIx64 "\n", p.pid, cpu_of[node], p.start + off);
                lines++;
        }
        fclose(in);
        fclose(out);
        CHECK_INT(lines, 12255);

        config_defaults(&cfg);
        cfg.pmu = PMU_MODE_REPLAY;
        free(cfg.replay_path);
        cfg.replay_path = strdup(path);
        CHECK_INT(page_sampler_choose(&cfg, "/proc", "/sys", topo_2n1m, &node_time_source_proc, &s), 0);
        p.hits = calloc(p.length / p.page, sizeof(*p.hits));
        if (s && p.hits) {
                /* A replay samples whatever the file holds: watching changes nothing. */
                CHECK_INT(page_sampler_watch(s, p.pid, 0), 0);
                page_sampler_span(s, p.pid, 0, true);
                r = page_sampler_drain(s, tally, &p);
                CHECK_INT(r, lines);
                CHECK_INT(p.n, lines);
                CHECK_INT(p.others, 0);
                CHECK_INT(p.unaligned, 0);
                CHECK_INT(p.wrong_half, 0);
                CHECK_INT(p.per_node[0], 5446);
                CHECK_INT(p.per_node[1], 6809);
                if (p.page == 4096) {
                        for (uint64_t i = p.length / 2 / p.page; i < p.length / p.page; i++)
                                twice += p.hits[i] >= 2;
                        CHECK_INT(twice, 996);
                }
                /* Drained: nothing more until more is written. */
                CHECK_INT(page_sampler_drain(s, tally, &p), 0);
                page_sampler_unwatch(s, p.pid);
        }
        CHECK(s != NULL);
        free(p.hits);
        page_sampler_free(s);
        unlink(path);
        config_done(&cfg);
}

static int intro(void) {
        log_set_max_level(LOG_LVL_INFO);
        log_set_sink(capture);
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0 ||
               topology_read(TEST_DATA_DIR "/sys/2n1m", &topo_2n1m) < 0;
}

static void outro(void) {
        topology_free(topo);
        topology_free(topo_2n1m);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
