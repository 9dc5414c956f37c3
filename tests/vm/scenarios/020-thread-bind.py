# SPDX-License-Identifier: GPL-2.0-or-later
"""A thread's own policy and the launch policy are obeyed: their bound memory stays.

A worker thread binds itself to node 0 (set_mempolicy), maps and touches 64 MiB there,
then reads it on node 1 with the other threads: numa_maps shows the main thread's
`default` on that memory. A process started with `numactl --membind=0` touches 64 MiB
on node 0 and runs on node 1 (every thread inherits bind:0). Neither region changes
while a misplaced process beside them is fixed (so the daemon works) and both are
scanned again and again. (Before thread policies the first was moved to node 1.)"""
import json
import time

from scenario import check, in_move_call, sh, sysctl_numa_balancing, wait_local


def vma_policy(pid, start):
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            fields = line.split()
            if int(fields[0], 16) == start:
                return fields[1]
    return None


def scans(env, pid):
    d = json.loads(sh(env.ctl, "explain", "--json", str(pid)).stdout)
    return d.get("scans", 0) if d.get("watched") else 0


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-thread", "balance")
    pt, st, _ = env.start_workload(cg, 64, 0, 1, policy="thread-bind:0")
    pl, sl, _ = env.start_workload(cg, 64, 0, 1, prefix=("numactl", "--membind=0"))
    pc, _, _ = env.start_workload(cg, 128, 0, 1)
    check(vma_policy(pt.pid, st) == "default", "the worker's memory shows a VMA policy: not the case under test")
    check(vma_policy(pl.pid, sl) == "bind:0", "numactl --membind=0 did not show in numa_maps")
    before = {(pt.pid, st): env.region_nodes(pt.pid, st), (pl.pid, sl): env.region_nodes(pl.pid, sl)}
    for (pid, start), nodes in before.items():
        check(set(nodes) == {0}, f"pid {pid}: bound memory not all on node 0 to begin with: {nodes}")
    env.start_daemon()
    t = wait_local(env, pc.pid, 0.95, 120)
    check(t is not None, "the misplaced process beside them was not fixed: the daemon did nothing")
    res["control_seconds"] = t
    # Several more scans of each (scan_min_ms = 500 while they look misplaced): 30 s
    # of the daemon's time, not counting a move call of the misplaced process held in
    # the kernel (a tick waits for it; on 6.12 under TCG one call of 34 huge pages took
    # 34 s in CI), up to 240 s in all.
    deadline, limit, held = time.time() + 30, time.time() + 240, 0.0
    while time.time() < min(deadline, limit) and min(scans(env, pt.pid), scans(env, pl.pid)) < 4:
        time.sleep(0.5)
        if in_move_call(env.daemon.pid) or in_move_call(pc.pid):
            deadline += 0.5
            held += 0.5
    res["seconds_in_held_move_calls"] = held
    check(min(scans(env, pt.pid), scans(env, pl.pid)) >= 4, "the bound processes were not scanned 4 times")
    for (pid, start), b in before.items():
        after = env.region_nodes(pid, start)
        check(after == b, f"pid {pid}: bound memory moved: {b} -> {after}")
    env.stop_daemon()
