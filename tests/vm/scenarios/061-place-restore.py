# SPDX-License-Identifier: GPL-2.0-or-later
"""(place) kill -9 and a restart, then a clean stop: every thread gets back the affinity it had.

A process placed by the daemon (memory bound to node 0, threads started on node 1); the
daemon is killed with SIGKILL: the threads stay narrowed (nothing ran to restore them)
and the originals are in the state file; the cgroup is opted out while the daemon is
down, and the restarted daemon gives every thread its affinity back at start. Opted in
again, placed again, a clean stop (SIGTERM) restores them too."""
import os
import time

from scenario import (all_thread_cpus, check, fail, node_cpus, start_gather, sys_list_text, sysctl_numa_balancing,
                      thread_cpus, wait_log)

STATE = "/run/numabalanced/affinity"


def wait_placed(pid, tids, cpus, timeout):
    deadline = time.time() + timeout
    while not all(thread_cpus(pid, t) == cpus for t in tids):
        if time.time() >= deadline:
            fail(f"threads not placed within {timeout} s: {all_thread_cpus(pid)}")
        time.sleep(0.2)


def wait_restored(pid, before, timeout, what):
    deadline = time.time() + timeout
    while all_thread_cpus(pid) != before:
        if time.time() >= deadline:
            fail(f"affinity not restored {what}: {all_thread_cpus(pid)} vs {before}")
        time.sleep(0.2)


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-place-restore", "place")
    p, _, tids = start_gather(env, cg, 64, 0, 1, threads=2, policy="bind")
    before = all_thread_cpus(p.pid)
    node0 = sys_list_text(node_cpus(0))
    env.start_daemon()
    wait_log(env, "Listening on", 120)
    wait_placed(p.pid, tids, node0, 60)
    check(os.path.exists(STATE) and str(p.pid) in open(STATE).read(), "no original affinity saved under /run")

    env.daemon.kill()
    env.daemon.wait()
    env.daemon = None
    time.sleep(1)
    check(all(thread_cpus(p.pid, t) == node0 for t in tids), "threads changed with nobody to change them")
    os.removexattr(cg, "trusted.numabalanced")
    env.start_daemon()
    wait_log(env, "Listening on", 120)
    wait_restored(p.pid, before, 30, "at the start after kill -9")
    wait_log(env, "given their original affinity back", 10)
    res["restored_after_kill"] = True

    os.setxattr(cg, "trusted.numabalanced", b"place")
    wait_placed(p.pid, tids, node0, 60)
    env.stop_daemon()
    check(all_thread_cpus(p.pid) == before, f"a clean stop left threads narrowed: {all_thread_cpus(p.pid)}")
    res["restored_after_stop"] = True
