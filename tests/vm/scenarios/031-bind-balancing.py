# SPDX-License-Identifier: GPL-2.0-or-later
"""A bind policy with the balancing flag (MPOL_F_NUMA_BALANCING): the kernel's while
kernel.numa_balancing is on, the daemon's within the bind set while it is off.

64 MiB bound to {0,1} with the flag, first touched on node 0, read on node 1. With
kernel.numa_balancing = 1 (and the shipped kernel_numa_balancing = leave) the daemon
says the kernel has it, and passes none of its pages to move_pages(2) (no batch line
for it in the log). The kernel is told to wait 10 minutes before it scans the
workload, so that the memory is still misplaced when the daemon decides. With
kernel.numa_balancing = 0 the daemon moves such memory (a second workload, placed
then) to node 1, within {0,1}. The kernel
must take the flag on mbind(2): 6.12 does."""
import re
import time

from scenario import check, kernel_scan_delay_ms, sysctl_numa_balancing, wait_local, wait_log


def run(env, res):
    # The kernel's balancing holds off this workload for 10 minutes: in a 6.12 guest it
    # had the 64 MiB local before the daemon's first look at them, which then had no
    # misplaced memory to say it leaves to the kernel.
    cg = env.cgroup("nb-bbal", "balance")
    old_delay = kernel_scan_delay_ms(600000)
    try:
        kernel_phase(env, cg)
    finally:
        kernel_scan_delay_ms(old_delay)
    daemon_phase(env, res, cg)


def kernel_phase(env, cg):
    sysctl_numa_balancing(1)
    p, start, _ = env.start_workload(cg, 64, 0, 1, policy="bind-balancing:0-1", pages="4k")
    line = open(f"/proc/{p.pid}/numa_maps").read()
    check(re.search(rf"^{start:x} bind=[a-z|]*balancing:0-1 ", line, re.M) is not None,
          "numa_maps shows the bind policy with its balancing flag")
    env.start_daemon()
    wait_log(env, "kernel.numa_balancing is on", 30)
    # Said when the decision is made (it may first say its threads have not run yet).
    wait_log(env, f"pid={p.pid} comm=workload: not moving: its memory policy asks the kernel's NUMA balancing", 60)
    time.sleep(2)  # a few more scans
    log = env.log()
    check(re.search(rf"pid={p.pid} pages=\d+ ", log) is None, "the daemon moved pages the kernel balances")
    env.stop_daemon()


def daemon_phase(env, res, cg):
    # A second such workload, placed with the kernel's balancing off: the daemon's now.
    sysctl_numa_balancing(0)
    q, qstart, _ = env.start_workload(cg, 64, 0, 1, policy="bind-balancing:0-1", pages="4k")
    q0 = env.region_nodes(q.pid, qstart)
    check(q0.get(0, 0) > 0.95 * sum(q0.values()), f"the second workload's memory starts on node 0: {q0}")
    env.start_daemon()
    t = wait_local(env, q.pid, 0.95, 120)
    res["seconds_to_95pct_local"] = t
    check(t is not None, "with kernel.numa_balancing = 0, the memory was not balanced to node 1 within 120 s")
    check(set(env.region_nodes(q.pid, qstart)) <= {0, 1}, "pages outside the bind set")
    check("kernel.numa_balancing is on" not in env.log(), "the daemon said the kernel balances with it off")
    env.stop_daemon()
