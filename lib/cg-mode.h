/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a cgroup's mode means, in one place: every module that asks whether a cgroup's
 * processes are watched, have their pages moved or their threads placed, asks here,
 * so that a new mode, or a changed one, is one table (tests/unit/test-cg-mode.c checks
 * every mode against every question). Its name and parsing are config.c's.
 *
 *   mode     watched  moves pages  places threads  placement decided
 *   unset    -        -            -               -
 *   off      -        -            -               -
 *   advise   yes      -            -               yes (said, not done)
 *   balance  yes      yes          -               -
 *   place    yes      yes          yes             yes
 *
 * Under a dry run (numabalanced --dry-run) every mode only says what it would do:
 * the *_now() questions and cg_mode_reports_only() take it. */
#pragma once
#include <stdbool.h>

/* place: balance, and the busy threads of a process placed beside its memory when that
 * is cheaper than moving the memory (lib/thread-place.c). Ordered: every mode from
 * BALANCE on moves pages (cg_mode_moves()). UNSET: no setting applies. */
enum cg_mode { CG_MODE_UNSET = 0, CG_MODE_OFF, CG_MODE_ADVISE, CG_MODE_BALANCE, CG_MODE_PLACE };

/* Whether a setting applies at all: a mode named on the cgroup's path. */
static inline bool cg_mode_is_set(enum cg_mode m) { return m != CG_MODE_UNSET; }

/* Whether the setting opts the cgroup out (off): nothing of it is watched. */
static inline bool cg_mode_opted_out(enum cg_mode m) { return m == CG_MODE_OFF; }

/* Whether the walk selects the cgroup: its processes are read, decided on and reported
 * (advise, balance, place). */
static inline bool cg_mode_watched(enum cg_mode m) {
        return m == CG_MODE_ADVISE || m == CG_MODE_BALANCE || m == CG_MODE_PLACE;
}

/* Whether the mode only reports what it decides (advise), whatever the run. */
static inline bool cg_mode_advises(enum cg_mode m) { return m == CG_MODE_ADVISE; }

/* Whether the mode has the cgroup's pages moved: balance and place. */
static inline bool cg_mode_moves(enum cg_mode m) { return m == CG_MODE_BALANCE || m == CG_MODE_PLACE; }

/* Whether a group's shared memory (daemon/share-groups.h) is moved for the mode's
 * processes: balance. place puts their threads beside it and moves none of it. */
static inline bool cg_mode_moves_shared(enum cg_mode m) { return m == CG_MODE_BALANCE; }

/* Whether the mode has the busy threads of its processes placed (narrowed): place. */
static inline bool cg_mode_places(enum cg_mode m) { return m == CG_MODE_PLACE; }

/* Whether the placer decides where the cgroup's threads would go: place, which then
 * narrows them, and advise, which says so. */
static inline bool cg_mode_decides_placement(enum cg_mode m) { return m == CG_MODE_PLACE || m == CG_MODE_ADVISE; }

/* Whether pages are moved now: a moving mode, and not a dry run. */
static inline bool cg_mode_moves_now(enum cg_mode m, bool dry_run) { return cg_mode_moves(m) && !dry_run; }

/* Whether threads are placed now: place, and not a dry run. */
static inline bool cg_mode_places_now(enum cg_mode m, bool dry_run) { return cg_mode_places(m) && !dry_run; }

/* Whether what is decided is only reported, never carried out: advise, or a dry run. */
static inline bool cg_mode_reports_only(enum cg_mode m, bool dry_run) { return cg_mode_advises(m) || dry_run; }

/* The mode a process is shown in: under a dry run a moving mode acts as advise. */
static inline enum cg_mode cg_mode_shown(enum cg_mode m, bool dry_run) {
        return cg_mode_moves(m) && dry_run ? CG_MODE_ADVISE : m;
}
