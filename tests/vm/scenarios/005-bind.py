# SPDX-License-Identifier: GPL-2.0-or-later
"""(b) memory bound to nodes {0,1}, threads on 1: moved to 1, within the bind set.

MPOL_BIND to {0,1}, 256 MiB first-touched on node 0: 95% local within 120 s."""
from scenario import check, node_share, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-b", "balance")
    p, start, _ = env.start_workload(cg, 256, 0, 1, policy="bind:0-1")
    check(node_share(env, p.pid, start, 0) > 0.95, "bound memory is not on node 0 to begin with")
    env.start_daemon()
    t = wait_local(env, p.pid, 0.95, 120)
    res["seconds_to_95pct_local"] = t
    check(t is not None, "bound memory not balanced to node 1 within 120 s")
    nodes = env.region_nodes(p.pid, start)
    check(set(nodes) <= {0, 1}, f"pages outside the bind set: {nodes}")
    env.stop_daemon()
