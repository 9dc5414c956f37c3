/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The BPF placement source ("bpf"): sched.bpf.c on sched_switch counts, per watched
 * process, CPU time per node; sample() reads the counters and returns the delta
 * since its previous call. A process is watched from its first sample() (which only
 * records the baseline) until unwatch(). */
#pragma once
#include "node-time.h"
#include "topology.h"

/* Opens, configures (rodata, map sizes) and loads the program (the verifier runs now,
 * so that a BPF that does not work is said at start), and fills the CPU -> node map
 * from t. Attached to nothing until the source's arm(on) (node-time.h). Returns 0 with *ret (free it with
 * node_time_source_free()), or -errno with *ret_why saying which step failed (a static
 * string; errno in the return). Logs nothing above debug: the caller says which
 * source it uses. count_stats fills the program's event counters (debug, benchmark). */
int sched_loader_new(const struct topology *t, bool count_stats, const struct node_time_source **ret,
                     const char **ret_why);

/* The attach point in use ("tp_btf/sched_switch" or "raw_tp/sched_switch"). */
const char *sched_loader_attach_point(const struct node_time_source *s);
/* The program's id (for bpftool prog show id N), or -1. */
int sched_loader_prog_id(const struct node_time_source *s);
