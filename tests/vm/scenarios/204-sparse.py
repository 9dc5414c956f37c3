# SPDX-License-Identifier: GPL-2.0-or-later
"""A 16 TiB sparse mapping is left alone (reason sparse); the rest is fixed.

A huge, mostly empty mapping (issue 7; what ASan's shadow is): the workload maps
16 TiB with MAP_NORESERVE and touches 4 MiB of it on node 0, beside 128 MiB misplaced
the ordinary way. The daemon fixes the 128 MiB, leaves the 16 TiB mapping alone
(reason sparse: walking it would hold a service CPU for minutes) and keeps answering."""
import json
import time

from scenario import check, sh, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-sparse", "balance")
    p, start, _ = env.start_workload(cg, 128, 0, 1, env={"WORKLOAD_RESERVE_GIB": "16384"})
    env.start_daemon()
    t = wait_local(env, p.pid, 0.95, 120)
    res["seconds_to_95pct_local"] = t
    check(t is not None, "the 128 MiB beside a 16 TiB sparse mapping not 95% local within 120 s")
    ranges = [[int(x, 16) for x in l.split()[0].split("-")] for l in open(f"/proc/{p.pid}/maps")]
    reserve = [a for a, b in ranges if b - a >= 16 << 40]
    check(len(reserve) == 1, f"no 16 TiB mapping in the workload: {ranges}")
    rstart = reserve[0]
    deadline = time.time() + 30
    reason = None
    while time.time() < deadline:
        st = json.loads(sh(env.ctl, "list", "--json").stdout)
        procs = [q for q in st.get("processes", []) if q.get("pid") == p.pid]
        reason = procs[0].get("reason") if procs else None
        if reason == "sparse":
            break
        time.sleep(1)
    res["reason"] = reason
    check(reason == "sparse", f"status gives reason {reason!r} for the process, not sparse")
    nodes = env.region_nodes(p.pid, rstart)
    res["sparse_pages"] = nodes
    check(nodes.get(1, 0) == 0, f"pages of the sparse mapping moved: {nodes}")
    check(env.daemon.poll() is None, "the daemon died")
    env.stop_daemon()
