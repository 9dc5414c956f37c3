# SPDX-License-Identifier: GPL-2.0-or-later
"""(place) a node without room: no placement, the threads keep their affinity.

Node 0's two CPUs are kept busy by two threads of another cgroup, pinned there. A
process with its memory bound to node 0 and two threads started on node 1 is not
placed (there is no room for two more busy threads on node 0): its threads' affinity
stays as the application left it for 20 s and `explain` says no-room.

The daemon's service CPU is node 1's first: its own CPU time, which it leaves out of a
node's load, is then nowhere near node 0.

A node's load is the CPU time its threads got, less the deciding process's own and the
daemon's; demand that did not run is not seen. On a single-threaded TCG guest, which
runs the vCPUs in turn, that time is not what the spinners asked for: node 0 measured
0.49 and 0.00 CPUs busy by others in two runs of 30 (the process's own threads had
taken the spinners' time there), and by that measure it had room. So the scenario
holds the daemon to its own measure: a placement on node 0 must come from a round that
logged room there (2 CPUs less the rounded load at least its busy threads), recorded
as placed_with_measured_room; else nothing is placed and explain says why."""
import os
import re
import subprocess
import time

from scenario import (wait_log, all_thread_cpus, check, explain, fail, node_cpus, start_gather, sys_list_text,
                      sysctl_numa_balancing)


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
    env.start_daemon(service_cpus=str(sys_list_text(node_cpus(1))[0]))
    wait_log(env, "Listening on", 120)
    deadline = time.time() + 20
    while time.time() < deadline and all_thread_cpus(p.pid) == before:
        time.sleep(0.5)
    if all_thread_cpus(p.pid) != before:
        rounds = re.findall(r"placement round: place node 0 \([a-z-]+\), (\d+) busy, .*?; node 0: (\d+) CPUs, "
                            r"([0-9.]+) busy by others", env.log())
        check(rounds, f"threads placed with no round placing them on node 0 logged: {all_thread_cpus(p.pid)}")
        busy, cpus, load = rounds[-1]
        check(int(cpus) - round(float(load)) >= int(busy),
              f"threads placed on node 0 though the round measured no room: {rounds[-1]}")
        res["placed_with_measured_room"] = rounds[-1]
        env.stop_daemon()
        return
    pl = explain(env, p.pid).get("placement") or {}
    res["reason"] = pl.get("reason")
    # Not placed: no room on node 0 (its threads, together on node 1, stay there).
    check(pl.get("placed_node") is None and pl.get("decision_node") != 0 and
          pl.get("reason") in ("no-room", "already-together"), f"explain: {pl}")
    env.stop_daemon()
