/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/samplers: chosen for the stored topologies (2n2c; sparse, whose one memory
 * node is node 0), attached only while a process is recorded and never on one memory
 * node, an attach that fails undone and tried again, the page samples drained into the
 * records, a reused pid left watched, and the samplers chosen again when a second node
 * has memory. The sources themselves need BPF and a PMU: source.h is implemented here
 * (a placement source and a page sampler that count what is asked of them). Each case
 * starts from fresh fakes (fresh()). */
#include <errno.h>
#include <stdlib.h>
#include "page-agg.h"
#include "samplers.h"
#include "test.h"
#include "tiered.h"

#define SYS_2N2C TEST_DATA_DIR "/sys/2n2c"
#define SYS_ONE_NODE TEST_DATA_DIR "/sys/sparse"

/* --- source.h, faked ---------------------------------------------------------- */

struct page_sampler {
        pid_t watched[8];
        size_t n_watched;
};

struct queued_sample {
        pid_t tgid;
        uint64_t addr;
        unsigned node;
        uint64_t count;
};

static struct {
        bool source_on, pages_on;
        unsigned source_attaches, pages_attaches;
        int pages_arm_fails;       /* page_sampler_arm(on) fails this many times */
        bool choose_fails;         /* source_choose() refuses */
        pid_t source_unwatched[8];
        size_t n_source_unwatched;
        struct queued_sample queued[8];  /* handed over at the next drain */
        size_t n_queued;
        struct page_sampler sampler;
} fake;

static int fake_arm(const struct node_time_source *s, bool on) {
        (void) s;
        fake.source_attaches += on && !fake.source_on;
        fake.source_on = on;
        return 0;
}

static void fake_unwatch(const struct node_time_source *s, pid_t pid) {
        (void) s;
        if (fake.n_source_unwatched < ELEMENTSOF(fake.source_unwatched))
                fake.source_unwatched[fake.n_source_unwatched++] = pid;
}

static const struct node_time_source fake_source = { .name = "fake", .unwatch = fake_unwatch, .arm = fake_arm };

int source_choose(enum sample_source want, const struct topology *t, const struct node_time_source **ret) {
        (void) want, (void) t;
        if (fake.choose_fails)
                return -EOPNOTSUPP;
        *ret = &fake_source;
        return 0;
}

int page_sampler_choose(const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                        const struct topology *t, const struct node_time_source *placement,
                        struct page_sampler **ret) {
        (void) cfg, (void) proc_root, (void) sys_root, (void) t, (void) placement;
        *ret = &fake.sampler;
        return 0;
}

const char *page_sampler_name(const struct page_sampler *s) { return s ? "fake-pages" : NULL; }

int page_sampler_arm(struct page_sampler *s, bool on) {
        (void) s;
        if (on && fake.pages_arm_fails > 0) {
                fake.pages_arm_fails--;
                return -ENOMEM;
        }
        fake.pages_attaches += on && !fake.pages_on;
        fake.pages_on = on;
        return 0;
}

static bool watched(pid_t pid) {
        for (size_t i = 0; i < fake.sampler.n_watched; i++)
                if (fake.sampler.watched[i] == pid)
                        return true;
        return false;
}

int page_sampler_watch(struct page_sampler *s, pid_t pid, uid_t owner) {
        (void) owner;
        if (!watched(pid) && s->n_watched < ELEMENTSOF(s->watched))
                s->watched[s->n_watched++] = pid;
        return 0;
}

void page_sampler_unwatch(struct page_sampler *s, pid_t pid) {
        for (size_t i = 0; i < s->n_watched; i++)
                if (s->watched[i] == pid)
                        s->watched[i--] = s->watched[--s->n_watched];
}

int page_sampler_drain(struct page_sampler *s, page_sample_fn fn, void *userdata) {
        size_t n = fake.n_queued;

        (void) s;
        for (size_t i = 0; i < fake.n_queued; i++)
                fn(userdata, fake.queued[i].tgid, fake.queued[i].addr, fake.queued[i].node, fake.queued[i].count);
        fake.n_queued = 0;
        return (int) n;
}

uint64_t page_sampler_take_cpu_ns(struct page_sampler *s) {
        (void) s;
        return 7;
}

const struct sample_quota *page_sampler_quota(const struct page_sampler *s) {
        (void) s;
        return NULL;
}

void page_sampler_free(struct page_sampler *s) { (void) s; }
void page_sampler_set_reader(struct page_sampler *s, struct tenant_reader *reader) { (void) s, (void) reader; }

/* --- the records --------------------------------------------------------------- */

/* Records made by hand (proc_records_find() bisects the pids, sorted): only what the
 * samplers read of them. */
static struct proc_rec recs[2];
static struct proc_rec *rec_ptrs[2];
static struct damon_range db_mapped = { 0x10000, 0x20000 };

static void fresh(struct proc_records *procs, size_t n) {
        fake = (typeof(fake)) {};
        for (size_t i = 0; i < ELEMENTSOF(recs); i++) {
                recs[i] = (struct proc_rec) { .pid = (pid_t) (100 + i), .seen_tick = 1 };
                rec_ptrs[i] = &recs[i];
        }
        *procs = (struct proc_records) { .v = rec_ptrs, .n = n };
}

static void free_evidence(void) {
        for (size_t i = 0; i < ELEMENTSOF(recs); i++) {
                page_agg_free(recs[i].seen);
                sampled_cold_free(recs[i].sampled);
        }
}

static const struct nb_config exchange_cfg = { .exchange = true, .cold_age_ms = 10000 };

static struct topology *read_topology(const char *sys_root) {
        struct topology *t = NULL;

        if (topology_read(sys_root, &t) < 0)
                abort();
        return t;
}

static int start(struct samplers *s, const struct topology *t) {
        struct nb_config cfg = { .source = SOURCE_PROC };

        samplers_init(s);
        return samplers_start(s, &cfg, "/proc", "/sys", t);
}

/* --- the cases ----------------------------------------------------------------- */

/* Idle means idle: nothing attached while nothing is recorded, both attached for the
 * first process (counted once), detached after the last. */
TEST(attached_only_while_a_process_is_recorded) {
        _cleanup_(topology_freep) struct topology *t = read_topology(SYS_2N2C);
        struct proc_records procs;
        struct counters c = {};
        struct samplers s;

        fresh(&procs, 0);
        CHECK_INT(start(&s, t), 0);
        CHECK(!s.one_node && s.source == &fake_source && s.pages == &fake.sampler);
        samplers_sync(&s, &procs, &c);
        CHECK(!s.armed && !fake.source_on && !fake.pages_on);

        procs.n = 1;
        samplers_watch(&s, &procs, &c, 100, 1000);
        CHECK(s.armed && fake.source_on && fake.pages_on && watched(100));
        procs.n = 2;
        samplers_watch(&s, &procs, &c, 101, 1000);
        CHECK_INT(fake.source_attaches, 1);
        CHECK_INT(fake.pages_attaches, 1);
        CHECK_INT(c.sampler_arms, 1);

        procs.n = 0;
        samplers_sync(&s, &procs, &c);
        CHECK(!s.armed && !fake.source_on && !fake.pages_on);
        CHECK_INT(c.sampler_arms, 1);
        samplers_done(&s);
}

/* An attach that fails leaves both detached, and is tried again at the next call. */
TEST(failed_attach_is_undone_and_tried_again) {
        _cleanup_(topology_freep) struct topology *t = read_topology(SYS_2N2C);
        struct proc_records procs;
        struct counters c = {};
        struct samplers s;

        fresh(&procs, 1);
        fake.pages_arm_fails = 1;
        CHECK_INT(start(&s, t), 0);
        samplers_sync(&s, &procs, &c);
        CHECK(!s.armed && !fake.source_on && !fake.pages_on);
        CHECK_INT(c.sampler_arms, 0);
        samplers_sync(&s, &procs, &c);
        CHECK(s.armed && fake.source_on && fake.pages_on);
        CHECK_INT(c.sampler_arms, 1);
        samplers_done(&s);
}

/* One memory node: nothing is attached whatever is recorded, until a second node has
 * memory; the samplers are then chosen again, detached, and attach for the records. */
TEST(one_memory_node_attaches_nothing_until_a_second_comes) {
        _cleanup_(topology_freep) struct topology *t = read_topology(SYS_ONE_NODE);
        _cleanup_(topology_freep) struct topology *t2 = NULL;
        struct proc_records procs;
        struct counters c = {};
        struct samplers s;

        fresh(&procs, 1);
        CHECK_INT(start(&s, t), 0);
        CHECK(s.one_node);
        samplers_watch(&s, &procs, &c, 100, 1000);
        CHECK(!s.armed && fake.source_attaches + fake.pages_attaches == 0);
        CHECK_INT(samplers_second_node(&s, SYS_ONE_NODE, &t2), 0);
        CHECK(t2 == NULL);

        CHECK_INT(samplers_second_node(&s, SYS_2N2C, &t2), 1);
        CHECK(t2 && nodemask_weight(&t2->with_memory) == 2);
        CHECK_INT(samplers_rechoose(&s, &(struct nb_config) { .source = SOURCE_PROC }, "/proc", "/sys", t2, NULL), 0);
        CHECK(!s.one_node && !s.armed && s.source == &fake_source);
        samplers_sync(&s, &procs, &c);
        CHECK(s.armed && fake.source_on && fake.pages_on);
        /* Two nodes: not read again. */
        topology_free(t2);
        t2 = NULL;
        CHECK_INT(samplers_second_node(&s, SYS_2N2C, &t2), 0);
        samplers_done(&s);
}

/* Chosen again and refused (source = bpf, BPF gone): the /proc source, never NULL,
 * and nothing attached. */
TEST(refused_rechoice_leaves_the_proc_source_detached) {
        _cleanup_(topology_freep) struct topology *t = read_topology(SYS_2N2C);
        struct proc_records procs;
        struct counters c = {};
        struct samplers s;

        fresh(&procs, 1);
        CHECK_INT(start(&s, t), 0);
        fake.choose_fails = true;
        CHECK_INT(samplers_rechoose(&s, &(struct nb_config) { .source = SOURCE_BPF }, "/proc", "/sys", t, NULL),
                  -EOPNOTSUPP);
        CHECK(s.source == &node_time_source_proc && s.pages == NULL && s.one_node);
        samplers_sync(&s, &procs, &c);
        CHECK(!s.armed && fake.source_attaches + fake.pages_attaches == 0);
        samplers_done(&s);
}

/* The drain: every sample counted; those of no record, or outside the mappings its
 * last full read found, dropped; the rest in the record's evidence. */
TEST(drain_feeds_the_records_mapped_samples) {
        _cleanup_(topology_freep) struct topology *t = read_topology(SYS_2N2C);
        struct proc_records procs;
        struct counters c = {};
        struct samplers s;

        fresh(&procs, 2);
        recs[0].mapped = &db_mapped;
        recs[0].n_mapped = 1;
        CHECK_INT(start(&s, t), 0);
        fake.queued[fake.n_queued++] = (struct queued_sample) { 100, 0x11000, 1, 3 };
        fake.queued[fake.n_queued++] = (struct queued_sample) { 100, 0x30000, 1, 2 };   /* unmapped */
        fake.queued[fake.n_queued++] = (struct queued_sample) { 101, 0x11000, 0, 4 };   /* nothing read yet */
        fake.queued[fake.n_queued++] = (struct queued_sample) { 999, 0x11000, 0, 5 };   /* not recorded */
        CHECK_INT(samplers_drain(&s, &procs, t, &exchange_cfg, &c), 7);
        CHECK_INT(c.page_samples, 14);
        CHECK_INT(c.page_samples_unmapped, 6);
        CHECK(recs[0].seen != NULL && recs[1].seen == NULL);
        CHECK(recs[0].sampled == NULL);    /* no slow node: the exchange has nothing to do */
        CHECK_INT(fake.n_queued, 0);
        free_evidence();
        samplers_done(&s);
}

/* With a slow node and the exchange on, the samples of a process whose memory may
 * move are kept over the cold age (lib/sampled-cold.h), those outside what its last
 * full read mapped too (a mapping made since is in use); an advise cgroup's are not.
 * The exchange turned off, the kept ones go at the next drain. */
TEST(drain_keeps_the_sampled_pages_for_the_exchange) {
        _cleanup_(topology_freep) struct topology *t = tiered_topology();
        struct cg_rec balance = { .mode = CG_MODE_BALANCE }, advise = { .mode = CG_MODE_ADVISE };
        struct nb_config off = exchange_cfg;
        struct proc_records procs;
        struct counters c = {};
        struct samplers s;

        fresh(&procs, 2);
        recs[0].mapped = recs[1].mapped = &db_mapped;
        recs[0].n_mapped = recs[1].n_mapped = 1;
        recs[0].cg = &balance;
        recs[1].cg = &advise;
        CHECK_INT(start(&s, t), 0);
        fake.queued[fake.n_queued++] = (struct queued_sample) { 100, 0x11000, 0, 3 };
        fake.queued[fake.n_queued++] = (struct queued_sample) { 101, 0x11000, 0, 3 };
        off.exchange = false;
        (void) samplers_drain(&s, &procs, t, &off, &c);
        CHECK(recs[0].sampled == NULL && recs[1].sampled == NULL);
        fake.queued[fake.n_queued++] = (struct queued_sample) { 100, 0x30000, 0, 3 };   /* unmapped */
        fake.queued[fake.n_queued++] = (struct queued_sample) { 101, 0x11000, 0, 3 };
        (void) samplers_drain(&s, &procs, t, &exchange_cfg, &c);
        CHECK(recs[0].sampled != NULL && recs[1].sampled == NULL);
        (void) samplers_drain(&s, &procs, t, &off, &c);
        CHECK(recs[0].sampled == NULL);
        free_evidence();
        samplers_done(&s);
}

/* A departed record: the placement source unwatches its pid; the page sampler keeps
 * it while a record seen in this tick holds it (the pid reused). */
TEST(unwatch_keeps_a_reused_pid_watched) {
        _cleanup_(topology_freep) struct topology *t = read_topology(SYS_2N2C);
        struct proc_records procs;
        struct counters c = {};
        struct samplers s;

        fresh(&procs, 2);
        CHECK_INT(start(&s, t), 0);
        samplers_watch(&s, &procs, &c, 100, 1000);
        samplers_watch(&s, &procs, &c, 101, 1000);
        recs[0].seen_tick = 2;     /* 100's new record, seen at tick 2 */
        samplers_unwatch(&s, &procs, 100, 2);
        samplers_unwatch(&s, &procs, 101, 2);
        CHECK_INT(fake.n_source_unwatched, 2);
        CHECK(watched(100) && !watched(101));
        samplers_done(&s);
}

DEFINE_TEST_MAIN()
