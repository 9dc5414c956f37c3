/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Page-level samples replayed from a file ([sample] pmu = replay, replay_path): how
 * samples recorded on a real CPU (the software source's, which an emulated CPU cannot
 * produce) are fed to a daemon in the test bed's TCG guests. One sample per line,
 * "TGID CPU ADDR" (lib/page-agg's stream syntax, the first field the process), as
 * they are appended: each drain reads what was added since the last one, at most
 * REPLAY_MAX_BYTES, a line cut at the end kept for the next. The path comes from the
 * root-owned configuration; it is a test feature, like pmu = page-faults. */
#pragma once
#include <stdint.h>
#include <sys/types.h>
#include "topology.h"

#define REPLAY_MAX_BYTES (1 << 20)

struct sample_replay;

int sample_replay_open(const char *path, const struct topology *t, struct sample_replay **ret);
void sample_replay_free(struct sample_replay *r);

typedef void (*replay_sample_fn)(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count);
/* Hands each complete line added since the last call to fn (the node of its CPU; a
 * line that does not parse, or a CPU of no node, is skipped and counted). Returns the
 * number of samples, or -errno. */
int sample_replay_drain(struct sample_replay *r, replay_sample_fn fn, void *userdata);
