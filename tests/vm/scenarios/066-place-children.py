# SPDX-License-Identifier: GPL-2.0-or-later
"""(place) a child forked by a placed thread gets its original mask back: opt-out, stop, kill -9.

A process placed by the daemon (memory bound to node 0, two threads started on node 1,
their affinity every CPU): its first thread, narrowed to node 0, forks a child that
execs sleep, so the child carries the narrowed mask across its exec. The daemon must
take the child for one of its placements (same cgroup, started after the placement,
exactly a mask it set: in the state file), and give it the original back with the
rest: at the opt-out, at a clean stop, and after a kill -9 (by the unit's
ExecStopPost= under systemd, else at the next start). Each time the child's affinity
must become every CPU again, the same as its parent's threads."""
import os
import signal
import time

from scenario import (all_thread_cpus, check, fail, node_cpus, start_gather, sys_list_text, sysctl_numa_balancing,
                      thread_cpus, wait_log)

STATE = "/run/numabalanced/affinity"


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.time() >= deadline:
            fail(f"{what} within {timeout} s")
        time.sleep(0.2)


def state_has(pid):
    try:
        return any(line.split()[:1] == [str(pid)] for line in open(STATE))
    except OSError:
        return False


def placed(p, tids, cpus):
    return all(thread_cpus(p.pid, t) == cpus for t in tids)


def fork_child(env, p, ready_prefix, cpus):
    """Asks the workload's first (placed) thread to fork; returns the child's pid once
    it carries the placed mask and the daemon has recorded it."""
    path = ready_prefix + ".child"
    try:
        os.unlink(path)
    except OSError:
        pass
    os.kill(p.pid, signal.SIGUSR1)
    child = int(wait_for(lambda: os.path.exists(path) and open(path).read().strip(), 30, "no child forked"))
    env.children.append(child)
    check(thread_cpus(child, child) == cpus, f"the child did not inherit the placed mask: {thread_cpus(child, child)}")
    wait_for(lambda: state_has(child), 30, f"child {child} not recorded in {STATE}")
    return child


def run(env, res):
    sysctl_numa_balancing(0)
    env.children = []
    cg = env.cgroup("nb-place-children", "place")
    p, _, tids = start_gather(env, cg, 64, 0, 1, threads=2, policy="bind")
    ready_prefix = p.args[-1]    # gather's READY_FILE
    original = all_thread_cpus(p.pid)[tids[0]]
    node0 = sys_list_text(node_cpus(0))
    try:
        env.start_daemon()
        wait_log(env, "Listening on", 120)

        # 1. Opt-out.
        wait_for(lambda: placed(p, tids, node0), 60, "threads not placed on node 0")
        child = fork_child(env, p, ready_prefix, node0)
        env.set_mode(cg, None)
        wait_for(lambda: thread_cpus(child, child) == original, 30,
                 f"the child kept the placed mask after the opt-out: {thread_cpus(child, child)}")
        res["restored_at_opt_out"] = True

        # 2. A clean stop.
        env.set_mode(cg, "place")
        wait_for(lambda: placed(p, tids, node0), 60, "threads not placed again")
        child = fork_child(env, p, ready_prefix, node0)
        env.stop_daemon()
        check(thread_cpus(child, child) == original, f"a clean stop left the child narrowed: "
              f"{thread_cpus(child, child)}")
        res["restored_at_stop"] = True

        # 3. kill -9: under the unit ExecStopPost= gives it back at once; by hand, the
        # next start does. Either is right; after the next start it must be back.
        env.start_daemon()
        wait_log(env, "Listening on", 120)
        wait_for(lambda: placed(p, tids, node0), 60, "threads not placed after the restart")
        child = fork_child(env, p, ready_prefix, node0)
        env.daemon.kill()
        env.daemon.wait()
        env.daemon = None
        time.sleep(1)
        res["restored_by_stop_post"] = thread_cpus(child, child) == original
        if env.shipped:
            check(res["restored_by_stop_post"], f"ExecStopPost= left the child narrowed after kill -9: "
                  f"{thread_cpus(child, child)}")
        env.set_mode(cg, None)
        env.start_daemon()
        wait_log(env, "Listening on", 120)
        wait_for(lambda: thread_cpus(child, child) == original, 30,
                 f"the child still narrowed after kill -9 and a restart: {thread_cpus(child, child)}")
        res["restored_after_kill"] = True
        env.stop_daemon()
    finally:
        for c in env.children:
            try:
                os.kill(c, signal.SIGKILL)
            except OSError:
                pass
