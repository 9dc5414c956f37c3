# SPDX-License-Identifier: GPL-2.0-or-later
"""Races: a fork storm in an opted-in cgroup; a canary outside must not move.

Races (issue 7): a fork storm of short-lived processes in an opted-in cgroup
(min_rss = 0, so that the daemon reads and decides on them as they come and go)
while a misplaced process there is being fixed, and a canary outside the cgroup
(misplaced too, so that a stray move would show) whose pages must not move: checked
page by page at the end. The daemon must survive and keep working."""
import ctypes
import json
import os
import subprocess

from scenario import check, fail, sh, sysctl_numa_balancing, wait_local


def page_nodes(pid, start, length):
    """The node of every base page of [start, start+length) of pid, page by page
    (move_pages(2) in query mode, through ctypes): a list of node ids or -errno."""
    libc = ctypes.CDLL(None, use_errno=True)
    n = length // 4096
    pages = (ctypes.c_void_p * n)(*[start + i * 4096 for i in range(n)])
    status = (ctypes.c_int * n)()
    SYS_move_pages = 279   # x86_64
    r = libc.syscall(SYS_move_pages, ctypes.c_int(pid), ctypes.c_ulong(n), pages, None, status, ctypes.c_int(0))
    if r != 0:
        fail(f"move_pages query of pid {pid}: {os.strerror(ctypes.get_errno())}")
    return list(status)


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-storm", "balance")
    canary, cstart, clen = env.start_workload(None, 64, 0, 1)
    before = page_nodes(canary.pid, cstart, clen)
    check(before.count(0) == len(before), f"the canary is not all on node 0 to begin with: {set(before)}")
    env.start_daemon(extra_conf="[select]\nmin_rss = 0\n")
    storm = subprocess.Popen(["sh", "-c", f"echo $$ > {cg}/cgroup.procs; i=0; end=$(($(date +%s) + 25)); "
                              "while [ $(date +%s) -lt $end ]; do /bin/true & /bin/true & "
                              "sleep 0.01 & i=$((i + 3)); [ $((i % 60)) = 0 ] && wait; done; wait; echo $i"],
                             stdout=subprocess.PIPE, text=True)
    p, start, _ = env.start_workload(cg, 128, 0, 1)
    t = wait_local(env, p.pid, 0.95, 120)
    out, _ = storm.communicate(timeout=120)
    res["storm_processes"] = int(out.strip() or 0)
    res["seconds_to_95pct_local"] = t
    check(t is not None, "the misplaced process in the storm's cgroup was not fixed")
    check(env.daemon.poll() is None, f"the daemon died in the storm: {env.log()[-2000:]}")
    st = json.loads(sh(env.ctl, "status", "--json").stdout)
    check(st.get("ticks", 0) > 0, "the daemon does not answer status after the storm")
    after = page_nodes(canary.pid, cstart, clen)
    moved = sum(1 for a, b in zip(before, after) if a != b)
    res["canary_pages"] = len(after)
    check(moved == 0, f"{moved} of the canary's {len(after)} pages moved")
    env.stop_daemon()
    check("moved=" in env.last_log, "no migration batch logged")
