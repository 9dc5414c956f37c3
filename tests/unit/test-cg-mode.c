/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a cgroup's mode means (lib/cg-mode.h): every mode against every question, with
 * and without a dry run, written out as the table the header draws. */
#include <stdbool.h>
#include "cg-mode.h"
#include "config.h"
#include "test.h"

struct meaning {
        enum cg_mode mode;
        bool is_set, opted_out, watched, advises, moves, places, decides_placement;
};

static const struct meaning table[] = {
        /*  mode             set    off    watch  advise moves  places decides */
        { CG_MODE_UNSET,   false, false, false, false, false, false, false },
        { CG_MODE_OFF,     true,  true,  false, false, false, false, false },
        { CG_MODE_ADVISE,  true,  false, true,  true,  false, false, true  },
        { CG_MODE_BALANCE, true,  false, true,  false, true,  false, false },
        { CG_MODE_PLACE,   true,  false, true,  false, true,  true,  true  },
};

/* The table covers every mode: one row each, in order, and no named mode past it. */
TEST(every_mode_in_table) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                CHECK_INT(table[i].mode, i);
                CHECK_MSG(strcmp(config_cg_mode_name(table[i].mode), "?") != 0, "mode %zu has no name", i);
        }
        CHECK_STR(config_cg_mode_name((enum cg_mode) ELEMENTSOF(table)), "?");
}

TEST(questions) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const struct meaning *t = &table[i];
                enum cg_mode m = t->mode;

                CHECK_MSG(cg_mode_is_set(m) == t->is_set, "%s: is_set", config_cg_mode_name(m));
                CHECK_MSG(cg_mode_opted_out(m) == t->opted_out, "%s: opted_out", config_cg_mode_name(m));
                CHECK_MSG(cg_mode_watched(m) == t->watched, "%s: watched", config_cg_mode_name(m));
                CHECK_MSG(cg_mode_advises(m) == t->advises, "%s: advises", config_cg_mode_name(m));
                CHECK_MSG(cg_mode_moves(m) == t->moves, "%s: moves", config_cg_mode_name(m));
                CHECK_MSG(cg_mode_places(m) == t->places, "%s: places", config_cg_mode_name(m));
                CHECK_MSG(cg_mode_decides_placement(m) == t->decides_placement, "%s: decides_placement",
                          config_cg_mode_name(m));
        }
}

/* Under a dry run nothing is carried out and every moving mode shows as advise;
 * otherwise the mode's own answers hold. */
TEST(questions_under_dry_run) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const struct meaning *t = &table[i];
                enum cg_mode m = t->mode;

                for (int dry = 0; dry <= 1; dry++) {
                        CHECK_MSG(cg_mode_moves_now(m, dry) == (t->moves && !dry), "%s/%d: moves_now",
                                  config_cg_mode_name(m), dry);
                        CHECK_MSG(cg_mode_places_now(m, dry) == (t->places && !dry), "%s/%d: places_now",
                                  config_cg_mode_name(m), dry);
                        CHECK_MSG(cg_mode_reports_only(m, dry) == (t->advises || dry), "%s/%d: reports_only",
                                  config_cg_mode_name(m), dry);
                        CHECK_INT(cg_mode_shown(m, dry), t->moves && dry ? CG_MODE_ADVISE : m);
                }
        }
        CHECK_STR(config_cg_mode_name(cg_mode_shown(CG_MODE_PLACE, true)), "advise");
        CHECK_STR(config_cg_mode_name(cg_mode_shown(CG_MODE_BALANCE, false)), "balance");
}

/* How the answers hang together: what the call sites asked inline before the header. */
TEST(relations) {
        for (enum cg_mode m = CG_MODE_UNSET; m <= CG_MODE_PLACE; m++) {
                CHECK(cg_mode_watched(m) == (cg_mode_advises(m) || cg_mode_moves(m)));
                CHECK(cg_mode_decides_placement(m) == (cg_mode_places(m) || cg_mode_advises(m)));
                CHECK(!cg_mode_places(m) || cg_mode_moves(m));
                CHECK(!cg_mode_watched(m) || cg_mode_is_set(m));
                CHECK(!(cg_mode_watched(m) && cg_mode_opted_out(m)));
                /* The walk's order: every mode from balance on moves pages. */
                CHECK(cg_mode_moves(m) == (m >= CG_MODE_BALANCE));
                for (int dry = 0; dry <= 1; dry++) {
                        /* A watched process either has its pages moved or only reported. */
                        if (cg_mode_watched(m))
                                CHECK(cg_mode_reports_only(m, dry) == !cg_mode_moves_now(m, dry));
                        CHECK(!cg_mode_places_now(m, dry) || cg_mode_moves_now(m, dry));
                }
        }
}

DEFINE_TEST_MAIN()
