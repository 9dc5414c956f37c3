#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The software page-level source through the whole daemon, on this machine's real CPU.

    test-advise-host.py NUMABALANCED SPLIT_TARGET TEST_DATA_DIR HAVE_CAPSTONE(0|1)

The daemon runs in advise mode ([sample] pmu = software, 1,000 samples per second)
against a split workload of its own process (split-target: thread k on CPU k % 2,
reading its own part of a buffer), given the stored 2n1m topology (--sys-root: CPU 0
on node 0, CPU 1 on node 1) and a /proc (--proc-root) that is the real one for that
process except its cpuset, which allows both nodes: this host has one node, and the
daemon never plans outside Mems_allowed. Nothing can move here (one node), so the
plan is read from the debug lines advise mode writes per range. Asserted, with 2 and
with 4 threads: every range the daemon would move goes to node 1 and lies in the parts
of the threads on CPU 1 (B; B and D), nothing in the others, and at least 90% of
those parts' pages are planned within 40 s (samples are per second of the threads'
run time: a busy host gives fewer a second). Ranges outside the buffer may be planned
too (a thread's own data elsewhere: its stack is filtered, its slot of the workload's
state is not), to node 1 only. Needs root (perf on another process and
reading its memory), Capstone, and CPUs 0 and 1: else a skip."""
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

daemon, target, data, have_capstone = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
if not have_capstone:
    nbtest.skip("built without Capstone: no software source")
if os.geteuid() != 0:
    nbtest.skip("not root: sampling and reading another process need CAP_PERFMON and CAP_SYS_PTRACE")
if not {0, 1} <= os.sched_getaffinity(0):
    nbtest.skip("CPUs 0 and 1 are not both ours")
tmp = nbtest.tmpdir("nb-advise-")
PAGE = os.sysconf("SC_PAGESIZE")
RUN_MAX_S = 40
WANT = 0.9


def fake_proc(pid, root):
    """root/PID: the real /proc/PID but for status (Mems_allowed 0-1) and cgroup (/t)."""
    d = os.path.join(root, str(pid))
    os.makedirs(d)
    for name in ("numa_maps", "maps", "smaps", "statm", "stat", "task"):
        os.symlink(f"/proc/{pid}/{name}", os.path.join(d, name))
    status = open(f"/proc/{pid}/status").read()
    status = re.sub(r"^Mems_allowed:.*$", "Mems_allowed:\t00000000,00000003", status, flags=re.M)
    status = re.sub(r"^Mems_allowed_list:.*$", "Mems_allowed_list:\t0-1", status, flags=re.M)
    with open(os.path.join(d, "status"), "w") as f:
        f.write(status)
    with open(os.path.join(d, "cgroup"), "w") as f:
        f.write("0::/t\n")
    os.makedirs(os.path.join(root, "sys", "kernel"))
    with open(os.path.join(root, "sys", "kernel", "numa_balancing"), "w") as f:
        f.write("0\n")


def plan_of(out, pid, start, length, threads, checked=False):
    """The pages of each part of the buffer in the ranges the daemon said it would move;
    checked: each range goes to node 1 (asserted)."""
    part = length // threads
    planned = [set() for _ in range(threads)]
    for a, b, node in re.findall(rf"pid={pid}: page-level: would move 0x([0-9a-f]+)-0x([0-9a-f]+) to node (\d+)",
                                 out):
        a, b = int(a, 16), int(b, 16)
        if checked:
            check(node == "1", f"{threads} threads: a range planned to node {node}: {a:#x}-{b:#x}")
        for page in range(max(a, start), min(b, start + length), PAGE):
            planned[(page - start) // part].add(page)
    return [len(x) for x in planned]


def run(threads, mb):
    """Returns (pages planned per part, pages per part, seconds, the daemon's output)."""
    ready = os.path.join(tmp, f"ready-{threads}")
    p = subprocess.Popen([target, str(threads), str(mb), ready])
    try:
        deadline = time.time() + 30
        while not os.path.exists(ready) or not open(ready).read().endswith("\n"):
            if p.poll() is not None or time.time() > deadline:
                nbtest.fail("split-target did not start")
            time.sleep(0.05)
        pid, start, length = open(ready).read().split()
        pid, start, length = int(pid), int(start, 16), int(length)
        per_part = length // threads // PAGE
        proc, cg = os.path.join(tmp, f"proc-{threads}"), os.path.join(tmp, f"cg-{threads}")
        fake_proc(pid, proc)
        os.makedirs(os.path.join(cg, "t"))
        with open(os.path.join(cg, "t", "cgroup.procs"), "w") as f:
            f.write(f"{pid}\n")
        conf = os.path.join(tmp, f"advise-{threads}.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\nservice_cpus = 0\ntick_ms = 200\nscan_min_ms = 200\nscan_max_ms = 1000\n"
                    f"log_level = debug\n[select]\ncgroup_root = {cg}\ncgroups = /t=advise\nmin_rss = 0\n"
                    "[sample]\nsource = proc\npmu = software\nsoftware_sample_rate = 1000\n")
        d = subprocess.Popen([daemon, "--foreground", "--config", conf, "--control-socket", "",
                              "--proc-root", proc, "--sys-root", os.path.join(data, "sys", "2n1m")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        threading.Thread(target=lambda: lines.extend(iter(d.stdout.readline, "")), daemon=True).start()
        t0 = time.time()
        while time.time() < t0 + RUN_MAX_S and d.poll() is None:
            time.sleep(0.5)
            planned = plan_of("".join(lines), pid, start, length, threads)
            if all(planned[k] >= WANT * per_part for k in range(1, threads, 2)):
                break
        seconds = time.time() - t0
        d.terminate()
        d.wait(timeout=30)
        time.sleep(0.2)
        out = "".join(lines)
    finally:
        p.kill()
        p.wait()
    return plan_of(out, pid, start, length, threads, checked=True), per_part, seconds, out


for threads, mb in ((2, 8), (4, 16)):
    planned, per_part, seconds, out = run(threads, mb)
    print(f"{threads} threads: pages planned per part {planned} of {per_part} each, in {seconds:.1f} s")
    chain = [line for line in out.splitlines() if "Sampling chain" in line]
    check("Sampling chain: software (" in out, f"{threads} threads: the software source was not chosen: "
          f"{chain or out[-3000:]}")
    for k in range(threads):
        if k % 2 == 0:
            check(planned[k] == 0, f"{threads} threads: {planned[k]} page(s) of part {k} (a thread on CPU 0, "
                  "node 0) planned")
        else:
            check(planned[k] >= WANT * per_part, f"{threads} threads: {planned[k]} of part {k}'s {per_part} "
                  f"pages planned (at least {WANT:.0%} wanted):\n{out[-3000:]}")

nbtest.finish()
