# SPDX-License-Identifier: GPL-2.0-or-later
"""(place) a node without room: no placement, the threads keep their affinity.

Node 0's two CPUs are kept busy by two threads of another cgroup, pinned there. A
process with its memory bound to node 0 and two threads started on node 1 is not
placed (there is no room for two more busy threads on node 0): its threads' affinity
stays as the application left it for 20 s and `explain` says no-room."""
import os
import subprocess
import time

from scenario import wait_log, all_thread_cpus, check, explain, fail, start_gather, sysctl_numa_balancing


def run(env, res):
    sysctl_numa_balancing(0)
    busy_cg = env.cgroup("nb-place-busy")
    ready = env.tmp_path("spin")
    procs_file = os.path.join(busy_cg, "cgroup.procs")

    def enter():
        with open(procs_file, "w") as f:
            f.write(str(os.getpid()))

    spin = subprocess.Popen([os.path.join(env.build, "tests", "vm", "spin"), ready, "0", "0"], preexec_fn=enter,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env.procs.append(spin)
    deadline = time.time() + 60
    while not os.path.exists(ready):
        if time.time() >= deadline or spin.poll() is not None:
            fail("spin did not start")
        time.sleep(0.2)

    cg = env.cgroup("nb-place-noroom", "place")
    p, _, _ = start_gather(env, cg, 64, 0, 1, threads=2, policy="bind")
    before = all_thread_cpus(p.pid)
    env.start_daemon()
    wait_log(env, "Listening on", 120)
    deadline = time.time() + 20
    while time.time() < deadline:
        check(all_thread_cpus(p.pid) == before, f"threads placed on a node without room: {all_thread_cpus(p.pid)}")
        time.sleep(0.5)
    pl = explain(env, p.pid).get("placement") or {}
    res["reason"] = pl.get("reason")
    # Not placed: no room on node 0 (its threads, together on node 1, stay there).
    check(pl.get("placed_node") is None and pl.get("decision_node") != 0 and
          pl.get("reason") in ("no-room", "already-together"), f"explain: {pl}")
    env.stop_daemon()
