# SPDX-License-Identifier: GPL-2.0-or-later
"""(d, e) a cpuset, an interleave policy, a cgroup not opted in: all left alone.

(d) a cpuset that allows node 0 only; (e) an interleave policy and a cgroup that did
not opt in: their pages do not change, while a misplaced process beside them is fixed
(so the daemon works)."""
import time

from scenario import check, node_cpus, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    cg_d = env.cgroup("nb-d", "balance", mems="0", cpus=node_cpus(0) + "," + node_cpus(1))
    pd, sd, _ = env.start_workload(cg_d, 64, 0, 1)
    cg_e = env.cgroup("nb-e", "balance")
    pi, si, _ = env.start_workload(cg_e, 64, 0, 1, policy="interleave:0-1")
    pc, sc, _ = env.start_workload(cg_e, 128, 0, 1)
    cg_off = env.cgroup("nb-off")
    po, so, _ = env.start_workload(cg_off, 64, 0, 1)
    before = {k: env.region_nodes(*k) for k in [(pd.pid, sd), (pi.pid, si), (po.pid, so)]}
    env.start_daemon()
    t = wait_local(env, pc.pid, 0.95, 120)
    check(t is not None, "the control process in the opted-in cgroup was not fixed: the daemon did nothing")
    time.sleep(3)
    for k, b in before.items():
        after = env.region_nodes(*k)
        check(after == b, f"pid {k[0]} changed: {b} -> {after}")
    res["control_seconds"] = t
    env.stop_daemon()
