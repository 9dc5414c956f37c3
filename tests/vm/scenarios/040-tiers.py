# SPDX-License-Identifier: GPL-2.0-or-later
"""Memory on the slow node (2n1m-hmat's memory-only node 2) stays there: not pulled to DRAM.

256 MiB first-touched on node 0 by a process whose threads stay on node 0, then moved
to node 2 with migratepages(8) (its policy stays default, so nothing but the tier keeps
it there). With the default rule (node 2 has no CPUs; from 6.10 the kernel also puts it
in a lower tier, from its HMAT figures): the daemon logs node 2 as a lower tier,
explains the process as lower-tier, show marks node 2 slow, and after 60 s at least 95%
of the region is still on node 2. Then, to show the check can fail, the daemon again
with slow_nodes = 1 (node 2 ordinary memory): the region follows the threads to node 0,
95% within 120 s."""
import os
import subprocess
import time

from scenario import check, node_share, sysctl_numa_balancing, wait_local, wait_log

SIZE_MB = 256
STAY_S = 60


def run(env, res):
    sysctl_numa_balancing(0)
    tiers = subprocess.run(["sh", "-c", "grep -H . /sys/devices/virtual/memory_tiering/memory_tier*/nodelist"],
                           capture_output=True, text=True).stdout.split()
    res["kernel_memory_tiers"] = tiers
    cg = env.cgroup("nb-tier", "balance")
    p, start, _ = env.start_workload(cg, SIZE_MB, 0, 0)
    subprocess.run(["migratepages", str(p.pid), "0", "2"], check=True)
    on2 = node_share(env, p.pid, start, 2)
    check(on2 >= 0.95, f"migratepages left {on2:.1%} of the region on node 2")

    # Its memory is all hot (the workload reads it): where the kernel has DAMON, DAMON's
    # evidence would rightly promote it (042-promote-damon), so DAMON is off here; where
    # it has none (6.1), the default (auto) is kept and status must say why it is unused.
    has_damon = os.path.isdir("/sys/kernel/mm/damon/admin/kdamonds")
    env.start_daemon(extra_conf="[sample]\ndamon = off\n" if has_damon else "")
    wait_log(env, "Memory on nodes 2 is a lower tier", 30)
    wait_log(env, "Listening on", 30)
    damon = env.status().get("damon")
    res["status_damon"] = damon
    if not has_damon:
        check(damon and "CONFIG_DAMON_SYSFS" in damon, f"status does not say DAMON is unavailable: {damon!r}")
    wait_log(env, "reason=lower-tier", 60)
    nodes = {n["node"]: n for n in env.show(p.pid)["nodes"]}
    check(nodes.get(2, {}).get("slow") is True, f"show does not mark node 2 slow: {nodes.get(2)}")
    res["node2_tier"] = nodes.get(2, {}).get("tier")
    time.sleep(STAY_S)
    on2 = node_share(env, p.pid, start, 2)
    res["share_on_node2_after_60s"] = round(on2, 4)
    check(on2 >= 0.95, f"the daemon pulled memory off the slow node: {on2:.1%} left on node 2")
    check("to=0 moved=" not in env.log(), "a batch moved pages to node 0")
    env.stop_daemon()

    env.start_daemon(extra_conf="[decide]\nslow_nodes = 1\n")
    t = wait_local(env, p.pid, 0.95, 120)
    res["seconds_to_95pct_local_with_node2_fast"] = t
    check(t is not None, "with slow_nodes = 1 the region did not follow its threads to node 0 within 120 s")
    env.stop_daemon()
