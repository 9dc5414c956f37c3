/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sampling slots shared among owners (lib/sample-quota.h): one owner wanting every
 * slot no longer takes them all once another wants some; what is refused is counted
 * per owner. */
#include "sample-quota.h"
#include "test.h"

TEST(max_min_fair) {
        const uint64_t want[4] = { 1000, 10, 0, 300 };
        uint64_t share[4];

        sample_quota_fill(want, 4, 256, share);
        /* 10 for the small one; the 246 left split evenly between the two large. */
        CHECK_INT(share[0], 123);
        CHECK_INT(share[1], 10);
        CHECK_INT(share[2], 0);
        CHECK_INT(share[3], 123);
        /* Room for all: each its want. */
        sample_quota_fill(want, 4, 2000, share);
        CHECK_INT(share[0], 1000);
        CHECK_INT(share[3], 300);
        /* Fewer slots than owners: one each, as far as they go. */
        {
                const uint64_t w3[3] = { 5, 5, 5 };
                uint64_t s3[3];
                sample_quota_fill(w3, 3, 2, s3);
                CHECK_INT(s3[0] + s3[1] + s3[2], 2);
                CHECK(s3[0] <= 1 && s3[1] <= 1 && s3[2] <= 1);
        }
}

/* The first owner takes all 256 while alone; a second one arriving gets its share,
 * the first's excess is what it has to give back, and its further asks are refused
 * and counted against it. */
TEST(a_newcomer_gets_its_share) {
        struct sample_quota q;
        unsigned taken = 0;

        sample_quota_init(&q, 256);
        CHECK_INT(sample_quota_want(&q, 1000, 256), 0);
        while (sample_quota_take(&q, 1000))
                taken++;
        CHECK_INT(taken, 256);
        CHECK_INT(q.refused, 1);
        CHECK_INT(sample_quota_want(&q, 2000, 4), 0);
        CHECK_INT(sample_quota_share(&q, 2000), 4);
        CHECK_INT(sample_quota_share(&q, 1000), 252);
        CHECK_INT(sample_quota_excess(&q, 1000), 4);
        /* The host is full until the first gives back. */
        CHECK(!sample_quota_take(&q, 2000));
        sample_quota_give(&q, 1000, sample_quota_excess(&q, 1000));
        for (int i = 0; i < 4; i++)
                CHECK(sample_quota_take(&q, 2000));
        CHECK(!sample_quota_take(&q, 2000));   /* beyond its want */
        CHECK(!sample_quota_take(&q, 1000));
        CHECK_INT(q.v[0].uid, 1000);
        CHECK_INT(q.v[0].refused, 2);
        CHECK_INT(q.v[1].refused, 2);
        /* The newcomer leaves: the first may take everything again. */
        sample_quota_give(&q, 2000, 4);
        CHECK_INT(sample_quota_want(&q, 2000, 0), 0);
        CHECK_INT(sample_quota_share(&q, 1000), 256);
        CHECK(sample_quota_take(&q, 1000));
        sample_quota_done(&q);
}

/* Many owners (more than the stack arrays hold): each still gets an even share. */
TEST(many_owners) {
        struct sample_quota q;

        sample_quota_init(&q, 1024);
        for (uid_t u = 1; u <= 100; u++)
                CHECK_INT(sample_quota_want(&q, u, 1000), 0);
        for (uid_t u = 1; u <= 100; u++)
                CHECK(sample_quota_share(&q, u) == 10 || sample_quota_share(&q, u) == 11);
        sample_quota_done(&q);
}

/* The caller's table (the BPF watch map): which ids are in it, never more than its
 * size, and which were ever. */
struct table {
        bool in[256], ever[256];
        unsigned n, size;
        bool overflowed;
};

static int hold(void *userdata, uint32_t id, bool on) {
        struct table *t = userdata;

        if (on && !t->in[id]) {
                t->overflowed |= ++t->n > t->size;
                t->ever[id] = true;
        } else if (!on && t->in[id])
                t->n--;
        t->in[id] = on;
        return 0;
}

static unsigned held_in(const struct table *t, uint32_t from, uint32_t to) {
        unsigned n = 0;

        for (uint32_t i = from; i <= to; i++)
                n += t->in[i];
        return n;
}

/* One owner's 20 processes fill an 8-entry table; another's 3 arrive and get theirs;
 * the first's waiting processes take turns at each ask, so each is watched at some
 * point; the table never holds more than its size. */
TEST(watch_slots_shared_and_turned) {
        struct table t = { .size = 8 };
        struct sample_quota_slots s;
        uint64_t now = 1000000;
        bool all = true;

        sample_quota_slots_init(&s, 8, hold, &t);
        for (uint32_t id = 1; id <= 20; id++)
                CHECK(sample_quota_slots_ask(&s, id, 1000, now) >= 0);
        CHECK_INT(held_in(&t, 1, 20), 8);
        for (uint32_t id = 100; id <= 102; id++)
                CHECK_INT(sample_quota_slots_ask(&s, id, 2000, now), 1);
        CHECK_INT(held_in(&t, 100, 102), 3);
        CHECK_INT(held_in(&t, 1, 20), 5);
        /* The first owner's processes ask again, as their scans come, a second apart:
         * no turn is cut short of SAMPLE_TURN_MS... */
        for (uint32_t id = 1; id <= 20; id++)
                CHECK(sample_quota_slots_ask(&s, id, 1000, now + id * 1000) >= 0);
        CHECK(!t.ever[9]);   /* asked before a turn was over */
        /* ...and over a few rounds every one had a turn. */
        for (int round = 1; round < 8; round++)
                for (uint32_t id = 1; id <= 20; id++)
                        CHECK(sample_quota_slots_ask(&s, id, 1000, now + (uint64_t) (round * 20 + id) * 1000) >= 0);
        for (uint32_t id = 1; id <= 20; id++)
                all &= t.ever[id];
        CHECK(all);
        CHECK_INT(held_in(&t, 1, 20), 5);
        CHECK_INT(held_in(&t, 100, 102), 3);
        CHECK(!t.overflowed);
        CHECK(s.quota.refused > 0);
        CHECK_INT(s.quota.v[1].refused, 0);   /* uid 2000 was never refused */
        /* The second owner leaves: the first grows back into the room as it asks. */
        for (uint32_t id = 100; id <= 102; id++)
                sample_quota_slots_forget(&s, id, now + 200000);
        CHECK_INT(held_in(&t, 100, 102), 0);
        for (uint32_t id = 1; id <= 20; id++)
                CHECK(sample_quota_slots_ask(&s, id, 1000, now + 200000) >= 0);
        CHECK_INT(held_in(&t, 1, 20), 8);
        CHECK(!t.overflowed);
        sample_quota_slots_done(&s);
}

DEFINE_TEST_MAIN()
