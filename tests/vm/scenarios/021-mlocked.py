# SPDX-License-Identifier: GPL-2.0-or-later
"""mlocked memory is left alone unless move_mlocked = yes.

64 MiB touched on node 0 and mlock()ed, its threads on node 1: it stays on node 0,
`explain` says `mlocked`, while a misplaced process beside it is fixed. With
`move_mlocked = yes` it is moved like any other."""
import json

from scenario import check, sh, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-mlock", "balance")
    pm, sm, _ = env.start_workload(cg, 64, 0, 1, env={"WORKLOAD_MLOCK": "1"})
    pc, _, _ = env.start_workload(cg, 128, 0, 1)
    before = env.region_nodes(pm.pid, sm)
    check(set(before) == {0}, f"locked memory not on node 0 to begin with: {before}")
    env.start_daemon()
    t = wait_local(env, pc.pid, 0.95, 120)
    check(t is not None, "the misplaced process beside it was not fixed: the daemon did nothing")
    d = json.loads(sh(env.ctl, "explain", "--json", str(pm.pid)).stdout)
    check(d.get("reason") == "mlocked" and d.get("skipped_bytes", {}).get("mlocked", 0) >= 60 << 20,
          f"explain does not say mlocked: {d.get('reason')} {d.get('skipped_bytes')}")
    after = env.region_nodes(pm.pid, sm)
    check(after == before, f"locked memory moved: {before} -> {after}")
    env.stop_daemon()

    env.start_daemon(extra_conf="[decide]\nmove_mlocked = yes\n")
    t = wait_local(env, pm.pid, 0.95, 120)
    res["move_mlocked_seconds"] = t
    check(t is not None, "with move_mlocked = yes the locked memory was not moved within 120 s")
    env.stop_daemon()
