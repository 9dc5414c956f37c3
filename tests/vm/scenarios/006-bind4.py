# SPDX-License-Identifier: GPL-2.0-or-later
"""(c) 4 nodes, bound to {1,3}, threads on 3: moved to 3, never through 0 or 2.

Memory first-touched on node 1; that no page is on 0 or 2 is checked on every poll
of numabalancectl show, and 95% on node 3 within 150 s."""
from scenario import check, node_share, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-c", "balance")
    p, start, _ = env.start_workload(cg, 128, 1, 3, policy="bind:1,3")
    env.start_daemon()

    def never_outside(d):
        for v in d["vmas"]:
            if int(v["start"], 16) == start:
                check(set(v["node_pages"]) <= {"1", "3"}, f"pages on a node outside {{1,3}}: {v['node_pages']}")

    t = wait_local(env, p.pid, 0.95, 150, on_poll=never_outside)
    res["seconds_to_95pct_local"] = t
    check(t is not None, "not moved to node 3 within 150 s")
    check(node_share(env, p.pid, start, 3) >= 0.95, "region not on node 3")
    env.stop_daemon()
