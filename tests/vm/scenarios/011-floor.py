# SPDX-License-Identifier: GPL-2.0-or-later
"""(i) a target node under the free-memory floor: nothing moved, reason logged.

free_floor_pct = 99: reason=target-full is logged within 60 s, the pages stay."""
import time

from scenario import check, fail, sysctl_numa_balancing


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-i", "balance")
    p, start, _ = env.start_workload(cg, 64, 0, 1)
    before = env.region_nodes(p.pid, start)
    env.start_daemon(extra_conf="[decide]\nfree_floor_pct = 99\n")
    deadline = time.time() + 60
    while "reason=target-full" not in env.log():
        if time.time() >= deadline:
            fail("no target-full reason logged within 60 s")
        time.sleep(0.5)
    check(env.region_nodes(p.pid, start) == before, "pages moved despite the floor")
    env.stop_daemon()
