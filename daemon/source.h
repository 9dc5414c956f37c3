/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one place that decides where thread placement comes from, and says so once. */
#pragma once
#include <stdbool.h>
#include "config.h"
#include "node-time.h"
#include "topology.h"

/* want: [sample] source. SOURCE_AUTO tries BPF and falls back to /proc; SOURCE_BPF
 * makes a missing BPF an error; SOURCE_PROC does not try BPF. Logs one line naming the
 * source in use and why. Returns 0 with *ret (release it with node_time_source_free()),
 * or -errno when want is SOURCE_BPF and BPF cannot be used (logged). */
int source_choose(enum sample_source want, const struct topology *t,
                  const struct node_time_source **ret);
