# SPDX-License-Identifier: GPL-2.0-or-later
"""(a) default policy, memory on node 0, threads on node 1: the daemon makes it local.

512 MB, asserted: 95% local within 300 s, the region on node 1 per numa_maps, and
a batch line moving pages from node 0 to node 1. pages=system: the guest kernel's THP
default (Debian: always); 4k: base pages. As in production, the balancer is already
running when the workload appears: the daemon starts first (with its shipped timings)
and the time counts from the moment the workload's memory is in place, exactly as for
the kernel's own balancing (002-kernel). extra_conf is added to the daemon's config
(102-proc-forced)."""
import re

from scenario import check, node_share, sysctl_numa_balancing, wait_local, warm_memory


def run(env, res, pages="system", extra_conf=""):
    sysctl_numa_balancing(0)
    warm_memory(env)
    cg = env.cgroup("nb-a", "balance")
    env.start_daemon(shipped_timing=True, extra_conf=extra_conf)
    p, start, _ = env.start_workload(cg, 512, 0, 1, pages=pages)
    t = wait_local(env, p.pid, 0.95, 300)
    res["seconds_to_95pct_local"] = t
    check(t is not None, f"not 95% local within 300 s: {env.show(p.pid)['local_share']}")
    check(node_share(env, p.pid, start, 1) >= 0.95, "the region is not on node 1 per numa_maps")
    check("moved=" in env.log(), "no migration batch logged")
    check(re.search(r"from=0:\d+ to=1 moved=[1-9]", env.log()), "no batch moved pages from node 0 to node 1")
    env.stop_daemon()
    env.log()
