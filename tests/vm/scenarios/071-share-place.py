# SPDX-License-Identifier: GPL-2.0-or-later
"""(share, place) busy members of a group go beside its shared memory; none of it moves.

tests/vm/shmgroup.c: a leader writes 64 MiB of shared memory while its cgroup's CPUs
are node 0's, forks two workers that read all of it, and the cgroup (place) is then
given every CPU. Under place the daemon moves threads, not a group's shared memory:
asserted within 120 s, at least one worker is placed on node 0 (beside the memory; a
worker left unplaced for want of room is a right outcome too), none anywhere else,
explain says each worker was decided with its group (two or three: the leader, idle,
is in the round once scanned) or alone (no room for both together: decided member by
member), and
for the whole run the shared memory stays on node 0 with no shared byte moved
(status)."""
import os
import time

from scenario import check, explain, node_cpus, sysctl_numa_balancing, wait_log, warm_memory
import scenario

share = scenario.load("share-balance")
BOUND_S = 120


def placed_nodes(env, pids, together=None):
    out = {}
    for pid in pids:
        pl = explain(env, pid).get("placement") or {}
        out[pid] = pl.get("placed_node")
        if together is not None and pl.get("decided_with"):
            together[pid] = pl.get("decided_with")
    return out


def run(env, res):
    sysctl_numa_balancing(0)
    warm_memory(env)
    cg = env.cgroup("nb-share-place", "place", mems="0-1", cpus=node_cpus(0))
    try:
        lead = share.start(env, cg, lambda ready: ["lead", str(share.SIZE_MB), "2", ready], "shmgroup")
        leader, start_addr, workers = int(lead[0]), int(lead[1], 16), [int(x) for x in lead[3:]]
        with open(os.path.join(cg, "cpuset.cpus"), "w") as f:
            f.write(f"{node_cpus(0)},{node_cpus(1)}")
        env.start_daemon()
        wait_log(env, "Listening on", 120)
        deadline = time.time() + BOUND_S
        placed, together = {}, {}
        off_node0 = 0
        while time.time() < deadline:
            placed = placed_nodes(env, workers, together)
            nodes = env.region_nodes(leader, start_addr)
            off_node0 = max(off_node0, sum(v for k, v in nodes.items() if k != 0))
            if any(n == 0 for n in placed.values()):
                break
            time.sleep(2)
        res["placed_nodes"] = placed
        res["decided_with"] = together
        # Decided as one group (both workers, with the idle leader once a scan has read
        # it: 2 or 3), or, without room for both workers' threads together, member by
        # member (1): all are right.
        check(together and all(n in (1, 2, 3) for n in together.values()),
              f"explain's decided_with is not the group's size or 1: {together}")
        check(any(n == 0 for n in placed.values()), f"no worker placed on node 0 within {BOUND_S} s: {placed}")
        check(all(n in (None, 0) for n in placed.values()), f"a worker placed away from its memory: {placed}")
        time.sleep(5)   # the moves of a few more ticks, had there been any
        nodes = env.region_nodes(leader, start_addr)
        off_node0 = max(off_node0, sum(v for k, v in nodes.items() if k != 0))
        res["leader_nodes"] = nodes
        check(off_node0 == 0, f"shared pages left node 0 under place: {nodes}")
        check(env.status().get("shared_moved_bytes", -1) == 0, "status counts shared bytes moved under place")
        ex = explain(env, workers[0]).get("share_group") or {}
        check(ex.get("moves_shared") is False, f"explain says its shared memory moves under place: {ex}")
        env.stop_daemon()
    finally:
        share.kill_cgroup(cg)
        time.sleep(0.5)
