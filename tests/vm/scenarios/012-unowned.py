# SPDX-License-Identifier: GPL-2.0-or-later
"""(j) a user.* opt-in inside another user's subtree: ignored.

user.numabalanced set by an unprivileged user on a cgroup inside another
user's delegated subtree is ignored: its process is not moved, while a control
process in an opted-in cgroup is fixed."""
import os
import subprocess

from scenario import check, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    parent = env.cgroup("nb-j")
    os.chown(parent, 1000, 1000)
    child = env.cgroup("nb-j/sub")
    os.chown(child, 65534, 65534)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "setfattr", "-n",
                        "user.numabalanced", "-v", "balance", child], capture_output=True, text=True)
    check(r.returncode == 0, f"nobody could not set user.numabalanced on its own directory: {r.stderr}")
    # And on a root-owned cgroup the kernel refuses it outright.
    other = env.cgroup("nb-j-root")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "setfattr", "-n",
                        "user.numabalanced", "-v", "balance", other], capture_output=True, text=True)
    check(r.returncode != 0, "an unprivileged user set an xattr on a root-owned cgroup")
    p, start, _ = env.start_workload(child, 64, 0, 1)
    cg_ctl = env.cgroup("nb-j-control", "balance")
    pc, sc, _ = env.start_workload(cg_ctl, 64, 0, 1)
    before = env.region_nodes(p.pid, start)
    env.start_daemon()
    check(wait_local(env, pc.pid, 0.95, 120) is not None, "the control process was not fixed")
    check(env.region_nodes(p.pid, start) == before, "the process in the unowned cgroup was moved")
    env.stop_daemon()
