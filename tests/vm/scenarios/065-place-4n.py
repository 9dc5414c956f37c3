# SPDX-License-Identifier: GPL-2.0-or-later
"""(place, 4 nodes of 1 CPU) never more busy threads on a node than its CPUs; one thread is placed.

A process of two busy threads, memory bound to node 0: no node has two CPUs, so it is
not placed (too-many) and its threads keep their affinity for 20 s. Then, alone, a
process of one busy thread with its memory bound to node 2, started on node 3: it ends
beside its memory, and no page moves. Two outcomes are right, and which one happens is
the scheduler's: the daemon places the thread on node 2 (its affinity narrowed to node
2's CPU), or the scheduler has already run it on node 2 and the daemon rightly leaves it
(reason already-together). The scenario waits for either and records which
(`outcome`); it never waits for a placement that has no reason to happen."""
import time

from scenario import (wait_log, all_thread_cpus, check, explain, fail, node_cpus, start_gather, sys_list_text,
                      sysctl_numa_balancing, thread_cpus, thread_node, vmstat)


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-place-4n", "place")
    two, _, _ = start_gather(env, cg, 64, 0, 1, threads=2, policy="bind")
    before = all_thread_cpus(two.pid)
    moved0 = vmstat("pgmigrate_success")
    env.start_daemon()
    wait_log(env, "Listening on", 120)
    deadline = time.time() + 20
    while time.time() < deadline:
        check(all_thread_cpus(two.pid) == before, f"two busy threads placed on a 1-CPU node: {all_thread_cpus(two.pid)}")
        time.sleep(0.5)
    pl = explain(env, two.pid).get("placement") or {}
    check(pl.get("placed_node") is None and pl.get("reason") in ("too-many", "nowhere-together"), f"explain: {pl}")
    # One at a time: the two threads above, which no node can take, would otherwise
    # hold whichever CPU the scheduler gave them.
    two.kill()
    two.wait()
    one, start, tids = start_gather(env, cg, 64, 2, 3, threads=1, policy="bind")
    # All it has outside the bound region: the daemon runs already (place-bound says why).
    movable = env.pages_off_node(one.pid, None, start)
    node2 = sys_list_text(node_cpus(2))
    deadline = time.time() + 60
    while True:
        if thread_cpus(one.pid, tids[0]) == node2:
            res["outcome"] = "placed"
            break
        pl = explain(env, one.pid).get("placement") or {}
        if pl.get("reason") == "already-together" and pl.get("placed_node") is None and \
                thread_node(one.pid, tids[0]) == 2:
            res["outcome"] = "already-together"
            break
        if time.time() >= deadline:
            fail(f"the one-thread process is neither placed on node 2 nor running there: "
                 f"{all_thread_cpus(one.pid)}, last on node {thread_node(one.pid, tids[0])}, {pl}")
        time.sleep(0.5)
    # The guest's count (compaction included: place-bound's docstring), recorded only.
    res["pages_migrated_guest"] = vmstat("pgmigrate_success") - moved0
    nodes = env.region_nodes(one.pid, start)
    check(set(nodes) == {2}, f"bound memory moved: {nodes}")
    # At most what it had outside the bound region follows the thread, not the 64 MiB.
    res["pages_moved"] = env.pages_moved(one.pid)
    check(res["pages_moved"] <= movable + 64,
          f"the daemon moved {res['pages_moved']} pages, {movable} were movable: bound memory must not move")
    env.stop_daemon()
