# SPDX-License-Identifier: GPL-2.0-or-later
"""(place) an application that pins its own threads: never touched; its memory follows them.

Two threads pinned by the application to node 1, 128 MiB first-touched on node 0: under
mode place their affinity is never changed (20 s of polls) and `explain` says the
threads are the application's (pinned); the memory moves to node 1, as in balance."""
import time

from scenario import wait_log, all_thread_cpus, check, explain, start_gather, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-place-pinned", "place")
    p, _, _ = start_gather(env, cg, 128, 0, 1, threads=2, affinity="pinned")
    before = all_thread_cpus(p.pid)
    env.start_daemon()
    wait_log(env, "Listening on", 120)
    t = wait_local(env, p.pid, 0.9, 60)
    res["seconds_to_90pct_local"] = t
    check(t is not None, "memory of pinned threads did not follow them within 60 s")
    deadline = time.time() + 20
    while time.time() < deadline:
        check(all_thread_cpus(p.pid) == before, f"the application's affinity was changed: {all_thread_cpus(p.pid)}")
        time.sleep(0.5)
    pl = explain(env, p.pid).get("placement") or {}
    check(pl.get("placed_node") is None, f"explain says placed: {pl}")
    check(pl.get("reason") in ("pinned", "already-together"), f"explain's reason: {pl.get('reason')}")
    env.stop_daemon()
