# SPDX-License-Identifier: GPL-2.0-or-later
"""(h) the target dies mid-migration and an outsider reuses its pid: untouched.

The target is killed while the daemon moves it; its pid is reused by a process
outside any opted-in cgroup: the daemon does not crash, the new process is untouched."""
import time

from scenario import check, fail, sysctl_numa_balancing


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-h", "balance")
    p, start, _ = env.start_workload(cg, 768, 0, 1)
    env.start_daemon()
    deadline = time.time() + 60
    while "moving" not in env.log():
        if time.time() >= deadline:
            fail("the daemon never started moving")
        time.sleep(0.1)
    time.sleep(0.3)
    pid = p.pid
    p.kill()
    p.wait()
    # Reuse the pid for a process outside any opted-in cgroup.
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    q, qs, _ = env.start_workload(None, 64, 0, 1)
    res["pid_reused"] = q.pid == pid
    before = env.region_nodes(q.pid, qs)
    time.sleep(4)
    check(env.daemon.poll() is None, f"the daemon died: {env.log()[-2000:]}")
    check(env.region_nodes(q.pid, qs) == before, "the process that reused the pid was touched")
    env.stop_daemon()
