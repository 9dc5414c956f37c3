/* SPDX-License-Identifier: GPL-2.0-or-later */
/* From plans to moves: one migration job per (process, target node) built from the
 * tick's scans, largest first, split among the workers, run, and the results
 * accounted (per process, per cgroup, in total, and the ranges moved remembered for
 * the cooldown). On the event-loop thread, after every scan of the tick. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "manager-internal.h"
#include "scan.h"

/* Runs the moves the scans planned, for processes in balance mode (none with
 * --dry-run). Returns 0 (a failed run is logged; its jobs' counts stay exact), or
 * -ENOMEM when the jobs could not be built (nothing ran). */
int jobs_run(struct manager *m, const struct scan *scans, size_t n_scans, uint64_t now);
