# SPDX-License-Identifier: GPL-2.0-or-later
"""(f) advise mode: the plan is logged, nothing moves.

"advise: would move" is logged within 60 s, and the pages stay where they are."""
import time

from scenario import check, fail, sysctl_numa_balancing


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-f", "advise")
    p, start, _ = env.start_workload(cg, 64, 0, 1)
    before = env.region_nodes(p.pid, start)
    env.start_daemon()
    deadline = time.time() + 60
    while "advise: would move" not in env.log():
        if time.time() >= deadline:
            fail("no advise line logged within 60 s")
        time.sleep(0.5)
    time.sleep(2)
    check(env.region_nodes(p.pid, start) == before, "advise mode moved pages")
    env.stop_daemon()
