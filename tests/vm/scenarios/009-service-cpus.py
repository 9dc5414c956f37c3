# SPDX-License-Identifier: GPL-2.0-or-later
"""(g) every daemon thread stays on the service CPUs while it migrates.

service_cpus = 0-1: from the moment the daemon says it is pinned until the workload
is local, each daemon thread is allowed only there and seen running only there."""
import os

from scenario import check, sysctl_numa_balancing, wait_local, wait_log


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-g", "balance")
    p, start, _ = env.start_workload(cg, 256, 0, 1)
    env.start_daemon(service_cpus="0-1")
    # From exec to its sched_setaffinity() the daemon reads its config and runs on any
    # CPU (it cannot know its service CPUs before): an ASan build under TCG was still
    # there after start_daemon's 0.5 s in one CI run. Its threads are checked from the
    # moment it says it is pinned, before it starts any thread or does any work.
    wait_log(env, "Running on service CPUs 0-1")
    seen_cpus = set()
    n_threads = 0

    def look(_):
        nonlocal n_threads
        tids = os.listdir(f"/proc/{env.daemon.pid}/task")
        n_threads = max(n_threads, len(tids))
        for tid in tids:
            try:
                status = open(f"/proc/{env.daemon.pid}/task/{tid}/status").read()
                stat = open(f"/proc/{env.daemon.pid}/task/{tid}/stat").read()
            except FileNotFoundError:
                continue
            allowed = [l.split(":")[1].strip() for l in status.splitlines() if l.startswith("Cpus_allowed_list")][0]
            check(allowed in ("0-1", "0", "1"), f"daemon thread {tid} allowed on {allowed}")
            seen_cpus.add(int(stat.rsplit(")", 1)[1].split()[36]))

    t = wait_local(env, p.pid, 0.95, 120, on_poll=look)
    check(t is not None, "not fixed within 120 s")
    res["daemon_threads"] = n_threads
    res["cpus_seen"] = sorted(seen_cpus)
    check(seen_cpus <= {0, 1}, f"daemon threads ran on {seen_cpus}")
    check(n_threads >= 3, f"expected a worker per service CPU, saw {n_threads} threads")
    env.stop_daemon()
