# SPDX-License-Identifier: GPL-2.0-or-later
"""Newer policies: weighted interleave (6.9+) never moved, prefer (many) (5.15+) moved
only with move_preferred = yes, and then only within its nodes.

A workload whose memory is weighted-interleaved over {0,1} and one whose memory is
prefer (many) {0,1} (first touched on node 0), both running on node 1, beside a
misplaced process of default policy in the same opted-in cgroup. With the shipped
configuration the control process is fixed (the daemon works) and the other two keep
their pages where they were, and numabalancectl explain names the policy as the
reason. Then, with [decide] move_preferred = yes, the prefer (many) memory moves to
node 1 and the weighted interleave still does not. The kernel must support both
modes: run on 6.9 or later (the 6.12 guest)."""
import time

from scenario import check, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-newpol", "balance")
    pw, sw, _ = env.start_workload(cg, 64, 0, 1, policy="weighted:0-1", pages="4k")
    pm, sm, _ = env.start_workload(cg, 64, 0, 1, policy="prefer-many:0-1", pages="4k")
    pc, _, _ = env.start_workload(cg, 64, 0, 1)
    w0, m0 = env.region_nodes(pw.pid, sw), env.region_nodes(pm.pid, sm)
    check(min(w0.get(0, 0), w0.get(1, 0)) > 0.3 * sum(w0.values()),
          f"weighted interleave spread the pages over both nodes: {w0}")
    check(m0.get(0, 0) > 0.95 * sum(m0.values()), f"prefer (many) memory starts on node 0: {m0}")
    res["weighted_before"], res["prefer_many_before"] = w0, m0

    env.start_daemon()
    t = wait_local(env, pc.pid, 0.95, 120)
    check(t is not None, "the control process was not fixed: the daemon did nothing")
    time.sleep(3)  # several scans after the control's: the others had their chances
    check(env.region_nodes(pw.pid, sw) == w0, f"weighted interleave memory moved: {w0} -> {env.region_nodes(pw.pid, sw)}")
    check(env.region_nodes(pm.pid, sm) == m0, f"prefer (many) memory moved: {m0} -> {env.region_nodes(pm.pid, sm)}")
    env.stop_daemon()

    env.start_daemon(extra_conf="[decide]\nmove_preferred = yes\n")
    t = wait_local(env, pm.pid, 0.95, 120)
    res["prefer_many_seconds_to_95pct"] = t
    check(t is not None, "with move_preferred = yes, prefer (many) memory was not moved to node 1 within 120 s")
    check(set(env.region_nodes(pm.pid, sm)) <= {0, 1}, "prefer (many) memory left its nodes")
    check(env.region_nodes(pw.pid, sw) == w0, "weighted interleave memory moved with move_preferred = yes")
    env.stop_daemon()
