# SPDX-License-Identifier: GPL-2.0-or-later
"""(a) with the kernel's own NUMA balancing instead of the daemon: timed, for comparison.

The time to 95% local and the share at the end are recorded, not asserted."""
from scenario import sysctl_numa_balancing, wait_local, warm_memory


def run(env, res, pages="system"):
    warm_memory(env)
    sysctl_numa_balancing(1)
    try:
        p, start, _ = env.start_workload(None, 512, 0, 1, pages=pages)
        t = wait_local(env, p.pid, 0.95, 300)
        res["kernel_seconds_to_95pct_local"] = t
        res["kernel_final_local_share"] = env.show(p.pid)["local_share"]
    finally:
        sysctl_numa_balancing(0)
