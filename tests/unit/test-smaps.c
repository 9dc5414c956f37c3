/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Locked VMAs (lib/smaps) from a captured smaps, and what the plan makes of them:
 * locked memory stays unless move_mlocked. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include "numa_maps.h"
#include "parse.h"
#include "plan.h"
#include "smaps.h"
#include "topology.h"
#include "test.h"

/* tests/data/proc/mlocked.*: 4 MiB mlock()ed at 7fa02b600000, 2 MiB mlock2(MLOCK_ONFAULT)
 * at 7fa02b400000 (VmFlags "lo lf"), the 2 MiB before it (7fa02b200000) not locked. */
#define LOCKED 0x7fa02b600000ull
#define ONFAULT 0x7fa02b400000ull
#define UNLOCKED 0x7fa02b200000ull

static char *load(const char *name, size_t *len) {
        char path[512];
        char *buf = NULL;

        snprintf(path, sizeof(path), "%s/proc/%s", TEST_DATA_DIR, name);
        if (parse_read_file_at(AT_FDCWD, path, 1 << 20, &buf, len) < 0)
                TEST_FAIL("cannot read %s", path);
        return buf;
}

TEST(locked_vmas_of_captured_smaps) {
        size_t len = 0, n = 0;
        _cleanup_free_ char *buf = load("mlocked.smaps", &len);
        _cleanup_free_ uint64_t *starts = NULL;

        CHECK_INT(smaps_locked_parse(buf, len, &starts, &n), 0);
        CHECK_INT(n, 2);
        CHECK(smaps_locked_has(starts, n, LOCKED));
        CHECK(smaps_locked_has(starts, n, ONFAULT));
        CHECK(!smaps_locked_has(starts, n, UNLOCKED));
}

TEST(locked_flags_only_as_a_whole_mnemonic) {
        const char *text =
                "1000-2000 rw-p 00000000 00:00 0 /tmp/VmFlags: lo\n"
                "Locked:  4 kB\n"
                "VmFlags: rd wr lox ac\n"
                "3000-4000 rw-p 00000000 00:00 0\n"
                "VmFlags: rd wr mr mw me lo\n"
                "VmFlags: lo\n"
                "5000-6000 rw-p 00000000 00:00 0\n"
                "Size: 4 kB\n"
                "VmFlags: lf slo\n";
        _cleanup_free_ uint64_t *starts = NULL;
        size_t n = 0;

        CHECK_INT(smaps_locked_parse(text, strlen(text), &starts, &n), 0);
        CHECK_INT(n, 1);
        CHECK(smaps_locked_has(starts, n, 0x3000));
        free(starts);
        starts = NULL;
        CHECK_INT(smaps_locked_parse("", 0, &starts, &n), 0);
        CHECK_INT(n, 0);
        CHECK(!smaps_locked_has(starts, n, 0x3000));
}

TEST(locked_read_gone) {
        _cleanup_free_ uint64_t *starts = NULL;
        size_t n = 0;

        CHECK_INT(smaps_read_locked(TEST_DATA_DIR "/proc/root", 99999, &starts, &n), -ESRCH);
}

/* The captured process with its threads on node 1 of the 2-node test bed: everything
 * on node 0 is misplaced; the locked VMAs stay unless move_mlocked. */
static void decide(bool move_mlocked, struct plan *ret) {
        _cleanup_(topology_freep) struct topology *t = NULL;
        _cleanup_(numa_maps_freep) struct numa_maps *maps = NULL;
        _cleanup_free_ char *buf = NULL, *sm = NULL;
        _cleanup_free_ uint64_t *starts = NULL, *ends = NULL;
        _cleanup_free_ bool *locked = NULL;
        uint64_t cpu[2] = { 0, 1000000 }, reserved[2] = {};
        struct plan_params pp = { .min_cpu_share_pct = 60, .free_floor_pct = 5, .min_misplaced_kb = 2048,
                                  .move_mlocked = move_mlocked };
        struct plan_input in = { .cpu_ns = cpu };
        size_t len = 0, slen = 0, n = 0;

        *ret = (struct plan) {};
        buf = load("mlocked.numa_maps", &len);
        sm = load("mlocked.smaps", &slen);
        if (!buf || !sm || topology_read(TEST_DATA_DIR "/sys/2n2c", &t) < 0 || numa_maps_parse(buf, len, &maps) < 0 ||
            smaps_locked_parse(sm, slen, &starts, &n) < 0) {
                TEST_FAIL("inputs");
                return;
        }
        ends = calloc(maps->n_vmas, sizeof(*ends));
        locked = calloc(maps->n_vmas, sizeof(*locked));
        for (size_t i = 0; i < maps->n_vmas; i++) {
                ends[i] = maps->vmas[i].start + (2u << 20);
                locked[i] = smaps_locked_has(starts, n, maps->vmas[i].start);
        }
        nodemask_parse("0-1", &in.mems_allowed);
        in.maps = maps;
        in.vma_end = ends;
        in.vma_mlocked = locked;
        CHECK_INT(plan_decide(t, &in, &pp, reserved, ret), 0);
}

static bool planned(const struct plan *p, uint64_t start) {
        for (size_t i = 0; i < p->n_moves; i++)
                if (p->moves[i].start == start)
                        return true;
        return false;
}

TEST(plan_leaves_locked_memory) {
        struct plan p;

        decide(false, &p);
        CHECK(planned(&p, UNLOCKED));
        CHECK(!planned(&p, LOCKED));
        CHECK(!planned(&p, ONFAULT));
        CHECK_INT(p.skipped_bytes[REASON_MLOCKED], 6u << 20);
        CHECK_STR(plan_reason_name(REASON_MLOCKED), "mlocked");
        plan_done(&p);
}

TEST(plan_moves_locked_memory_when_configured) {
        struct plan p;

        decide(true, &p);
        CHECK(planned(&p, UNLOCKED));
        CHECK(planned(&p, LOCKED));
        CHECK(planned(&p, ONFAULT));
        CHECK_INT(p.skipped_bytes[REASON_MLOCKED], 0);
        plan_done(&p);
}

DEFINE_TEST_MAIN()
