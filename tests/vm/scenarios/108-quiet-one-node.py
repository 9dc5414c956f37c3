# SPDX-License-Identifier: GPL-2.0-or-later
"""One memory node: said at start, nothing attached; a second node brings the samplers.

The daemon is given a copy of the guest's node tree (--sys-root) in which only node 0
has memory, as on a one-node host: it says so at start and, with an opted-in process
it does see (its scans are logged), holds no BPF link and no perf event (counted as
in quiet). When the copy's has_memory then names both nodes (as memory hotplug
would), the daemon says so at its next tick and attaches for that process; when the
process exits, it detaches again."""
import os
import re
import shutil
import time

from scenario import check, load, sysctl_numa_balancing, wait_log


def copy_nodes(dest):
    """What topology_read() reads of the guest's /sys, copied under dest; returns the
    copy's has_memory."""
    src = "/sys/devices/system"
    os.makedirs(f"{dest}/devices/system/cpu")
    os.makedirs(f"{dest}/devices/system/node")
    shutil.copyfile(f"{src}/cpu/online", f"{dest}/devices/system/cpu/online")
    for name in os.listdir(f"{src}/node"):
        path = f"{src}/node/{name}"
        if name.startswith("node") and name[4:].isdigit():
            os.makedirs(f"{dest}/devices/system/node/{name}")
            for f in ("cpulist", "distance", "meminfo"):
                shutil.copyfile(f"{path}/{f}", f"{dest}/devices/system/node/{name}/{f}")
        elif os.path.isfile(path):
            shutil.copyfile(path, f"{dest}/devices/system/node/{name}")
    return f"{dest}/devices/system/node/has_memory"


def run(env, res):
    quiet = load("quiet")
    sysctl_numa_balancing(0)
    sys_root = env.tmp_path("sys")
    has_memory = copy_nodes(sys_root)
    both = open(has_memory).read().strip()
    check(both == "0-1", f"the guest's nodes with memory are {both!r}, expected 0-1")
    with open(has_memory, "w") as f:
        f.write("0\n")

    cg = env.cgroup("nb-quiet1", "balance")
    p, _, _ = env.start_workload(cg, 64, 0, 0)   # all on node 0: local, nothing to move either way
    env.start_daemon(extra_conf="[select]\nmin_rss = 0\n[sample]\nsource = bpf\npmu = page-faults\n",
                     args=("--sys-root", sys_root))
    wait_log(env, "One node has memory: nothing to balance")
    # Its scans show that it sees the process: and still nothing attached, at any tick.
    seen = set()
    deadline = time.time() + 30
    while time.time() < deadline and not re.search(rf"pid={p.pid}\b.*reason=", env.log()):
        seen.add(quiet.held(env.daemon.pid))
        time.sleep(0.25)
    check(re.search(rf"pid={p.pid}\b.*reason=", env.log()), "the daemon never scanned the opted-in process")
    t0 = time.time()
    while time.time() - t0 < 3:
        seen.add(quiet.held(env.daemon.pid))
        time.sleep(0.25)
    res["one_node"] = sorted(seen)
    check(seen == {(0, 0)}, f"one memory node, yet the daemon held (links, perf events) {sorted(seen)}")

    with open(has_memory, "w") as f:
        f.write("0-1\n")
    wait_log(env, "2 nodes have memory now")
    links, events = quiet.settle(env, lambda l, e: l >= 1 and e >= 1)
    res["two_nodes"] = [links, events]
    said = "\n".join(l for l in env.log().splitlines() if re.search(r"ampl|ttach|nodes have", l))
    check(links >= 1 and events >= 1, f"a second node with memory, but (links, perf events) {(links, events)}:\n{said}")

    p.kill()
    p.wait()
    after = quiet.settle(env, lambda l, e: l == 0 and e == 0)
    res["after_exit"] = list(after)
    check(after == (0, 0), f"after the process exited the daemon still held {after}")
    env.stop_daemon()
