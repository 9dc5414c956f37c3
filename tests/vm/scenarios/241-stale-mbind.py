# SPDX-License-Identifier: GPL-2.0-or-later
"""mbind() to node 0 while the daemon moves the region to node 1: the moves stop.

The check before moving (daemon/move-check): a plan is read at the scan and carried
out later, under a low rate limit for many seconds. A misplaced process (256 MiB of
base pages on node 0, its threads on node 1) is being moved at 8 MB/s in batches of
32 MiB; after the first batch, something changes (here: the process binds the region
to node 0). From a moment after the change (a move call under way may finish), no
page of the region may arrive on node 1, and the log says why the job stopped. The
other stale-* scenarios run this one with another change: the process leaves the
opted-in cgroup, the cgroup is switched to off, the process execs."""
import json
import os
import signal
import subprocess
import time

from scenario import check, fail, sh, sysctl_numa_balancing, wait_log

SIZE_MB = 256
RATE_MB_S = 8
BATCH_PAGES = 8192          # 32 MiB of 4 KiB pages: one move call every 4 s
# The stop reason each change must give (move-check.c).
REASONS = {"mbind": "policy-changed", "leave": "cgroup-changed", "off": "cgroup-changed", "exec": "exec"}


def start_rebind(env, cgroup, ready):
    """tests/vm/rebind in cgroup: SIZE_MB on node 0, its threads on node 1."""
    def enter():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    p = subprocess.Popen([os.path.join(env.build, "tests", "vm", "rebind"), str(SIZE_MB), "0", "1", ready],
                         preexec_fn=enter, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    env.procs.append(p)
    start = wait_file(p, ready).split()[1]
    return p, int(start, 16)


def wait_file(p, path, timeout=120):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if p.poll() is not None:
            fail(f"rebind exited: {p.stderr.read().decode()}")
        if time.time() >= deadline:
            fail(f"rebind did not write {path}")
        time.sleep(0.1)
    return open(path).read()


def node1_pages(pid, start=None):
    """Pages on node 1: of the VMA at start, or of the whole process."""
    n = 0
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            fields = line.split()
            if start is not None and int(fields[0], 16) != start:
                continue
            for tok in fields:
                if tok.startswith("N1="):
                    n += int(tok[3:])
    return n


def change(env, how, p, cg, ready):
    if how == "mbind":
        os.kill(p.pid, signal.SIGUSR1)
        wait_file(p, ready + ".bound", 10)
    elif how == "leave":
        out = env.cgroup("nb-stale-out")
        with open(os.path.join(out, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
    elif how == "off":
        os.setxattr(cg, "trusted.numabalanced", b"off")
    elif how == "exec":
        os.kill(p.pid, signal.SIGUSR2)
        # The new program maps its region where the old one had it, on node 0.
        start = int(wait_file(p, ready + ".exec", 60).split()[1], 16)
        check(start == int(open(ready).read().split()[1], 16), "the new program's region is elsewhere")
    else:
        fail(f"no such change {how!r}")


def run(env, res, how="mbind"):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-stale", "balance")
    ready = env.tmp_path("rebind")
    p, start = start_rebind(env, cg, ready)
    env.start_daemon(extra_conf=f"[migrate]\nrate_limit_mb_s = {RATE_MB_S}\nbatch_pages = {BATCH_PAGES}\n")
    # The first batch is on node 1: the job is under way, and sleeps off its debt.
    deadline = time.time() + 90
    while node1_pages(p.pid, start) < BATCH_PAGES // 2:
        if time.time() >= deadline:
            fail(f"the daemon never started moving: {env.log()[-1500:]}")
        time.sleep(0.2)
    res["node1_pages_at_change"] = node1_pages(p.pid, start)
    change(env, how, p, cg, ready)
    # A move call that was under way when it changed may still finish.
    time.sleep(1.5)
    # For exec, the region at the same address is the new program's, local on node 0:
    # a stale plan would move it to node 1.
    base = node1_pages(p.pid, start)
    most = base
    # Three batches' time: without the check, each would bring 32 MiB more.
    t_end = time.time() + 3 * BATCH_PAGES * 4096 / (RATE_MB_S << 20)
    while time.time() < t_end:
        most = max(most, node1_pages(p.pid, start))
        time.sleep(0.2)
    res["node1_pages_after"] = most
    check(most <= base, f"{how}: {most - base} more pages arrived on node 1 after the change "
          f"({base} then): the job went on")
    reason = REASONS[how]
    wait_log(env, f"({reason})", 30)
    check("migration stopped: " in env.log(), f"no 'migration stopped' line: {env.log()[-1500:]}")
    if how == "mbind":
        # explain says why (the process is still watched).
        ex = json.loads(sh(env.ctl, "--json", "explain", str(p.pid), check_rc=False).stdout)
        check((ex.get("move_stopped") or {}).get("reason") == reason, f"explain: {ex}")
    check(env.daemon.poll() is None, f"the daemon died: {env.log()[-2000:]}")
    env.stop_daemon()
