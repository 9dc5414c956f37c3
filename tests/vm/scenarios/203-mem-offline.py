# SPDX-License-Identifier: GPL-2.0-or-later
"""Faults: memory of the target node goes offline while the daemon moves there.

Faults (issue 7): memory of the target node taken offline while the daemon moves
pages there. Blocks of node 1 are offlined (as many as the kernel lets go, at most
half) just as the daemon starts moving a 256 MiB process to node 1: the daemon keeps
running, still gets the process local (what fits), and answers status; the blocks
come back at the end."""
import json
import os

from scenario import check, sh, sysctl_numa_balancing, wait_local, wait_log


def node_memory_blocks(node):
    d = f"/sys/devices/system/node/node{node}"
    return sorted(int(x[6:]) for x in os.listdir(d) if x.startswith("memory") and x[6:].isdigit())


def block_state(b, state=None):
    path = f"/sys/devices/system/memory/memory{b}/state"
    if state is None:
        return open(path).read().strip()
    try:
        with open(path, "w") as f:
            f.write(state)
        return True
    except OSError:
        return False


def run(env, res):
    sysctl_numa_balancing(0)
    blocks = [b for b in node_memory_blocks(1) if block_state(b) == "online"]
    offlined = []
    try:
        cg = env.cgroup("nb-memoff", "balance")
        p, start, _ = env.start_workload(cg, 256, 0, 1)
        env.start_daemon()
        wait_log(env, "moving ")
        for b in blocks[len(blocks) // 2:]:
            if block_state(b, "offline"):
                offlined.append(b)
        res["blocks_offlined"] = f"{len(offlined)} of node 1's {len(blocks)}"
        check(offlined, f"the kernel let no memory block of node 1 go offline ({len(blocks)} tried): "
                        "the test cannot show anything")
        t = wait_local(env, p.pid, 0.95, 180)
        res["seconds_to_95pct_local"] = t
        check(t is not None, f"not 95% local within 180 s with {len(offlined)} block(s) of node 1 offline")
        check(env.daemon.poll() is None, f"the daemon died: {env.log()[-2000:]}")
        st = json.loads(sh(env.ctl, "status", "--json").stdout)
        check(st.get("ticks", 0) > 0, "no status from the daemon")
        env.stop_daemon()
    finally:
        for b in offlined:
            block_state(b, "online")
