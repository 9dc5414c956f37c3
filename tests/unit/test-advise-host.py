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
those parts' pages are planned by the time each CPU-1 thread has run CPU_S seconds
(samples are per second of the threads' run time: a busy host gives fewer a second,
so how much is planned is judged against the CPU time the threads had, not against
the clock; if RUN_MAX_S pass before they had it, how much is not asserted, and said).
Ranges outside the buffer may be planned too (a thread's own data elsewhere: its stack
is filtered, its slot of the workload's state is not), to node 1 only.

The daemon's start-up check of the software source samples two threads for 200 ms: on
a loaded host they may run too little for it (fewer than its 400 samples each), and
the source is rightly refused; the daemon is started again then, for START_MAX_S at
most, and the test skipped if it is refused each time. Needs root (perf on another
process and reading its memory), Capstone, and CPUs 0 and 1: else a skip."""
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
CPU_S = 10       # each CPU-1 thread's CPU time by which WANT is planned (about 5 s measured)
START_MAX_S = 10
CHECK_ENOUGH = 400   # samples a thread of the start-up check stops at (daemon/sw-sampler.c)


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


def cpu1_seconds(pid):
    """The least CPU time, in seconds, of pid's threads pinned to CPU 1."""
    tick, least = os.sysconf("SC_CLK_TCK"), None
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            if os.sched_getaffinity(int(t)) != {1}:
                continue
            f = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        s = (int(f[11]) + int(f[12])) / tick   # utime, stime
        least = s if least is None else min(least, s)
    return least or 0.0


def start_target(threads, mb):
    """split-target running: (its process, pid, buffer start, buffer length)."""
    ready = os.path.join(tmp, f"ready-{threads}")
    p = subprocess.Popen([target, str(threads), str(mb), ready])
    deadline = time.time() + 30
    while not os.path.exists(ready) or not open(ready).read().endswith("\n"):
        if p.poll() is not None or time.time() > deadline:
            p.kill()
            nbtest.fail("split-target did not start")
            nbtest.finish()
        time.sleep(0.05)
    pid, start, length = open(ready).read().split()
    return p, int(pid), int(start, 16), int(length)


def starved(line):
    """Whether a refusal of the software source says its start-up check had fewer than
    CHECK_ENOUGH samples of a thread: the host gave it too little CPU in 200 ms."""
    m = re.search(r"of (\d+) and (\d+) samples decoded", line)
    return bool(m) and min(int(m.group(1)), int(m.group(2))) < CHECK_ENOUGH


def start_daemon(conf, proc):
    """The daemon, once it said its sampling chain: (its process, its output's lines, that
    line). Started again while its start-up check is starved, START_MAX_S at most."""
    t0 = time.time()
    while True:
        d = subprocess.Popen([daemon, "--foreground", "--config", conf, "--control-socket", "",
                              "--proc-root", proc, "--sys-root", os.path.join(data, "sys", "2n1m")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        threading.Thread(target=lambda: lines.extend(iter(d.stdout.readline, "")), daemon=True).start()
        chain = None
        while chain is None and d.poll() is None and time.time() < t0 + START_MAX_S + 30:
            time.sleep(0.1)
            chain = next((x for x in list(lines) if "Sampling chain" in x or "pmu = software refused" in x), None)
        if chain is None or "refused" not in chain or not starved(chain) or time.time() > t0 + START_MAX_S:
            return d, lines, chain
        print(f"the start-up check was starved, starting again: {chain.strip()}")
        d.terminate()
        d.wait(timeout=30)


def run(threads, mb):
    """Returns (pages planned per part, pages per part, seconds, the CPU-1 threads' CPU
    seconds, the daemon's output, its sampling chain line)."""
    p, pid, start, length = start_target(threads, mb)
    try:
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
        d, lines, chain = start_daemon(conf, proc)
        t0, cpu = time.time(), cpu1_seconds(pid)
        sampling = chain is not None and "refused" not in chain
        # Until WANT is planned, or the threads had CPU_S each, or RUN_MAX_S passed.
        while sampling and time.time() < t0 + RUN_MAX_S and d.poll() is None and cpu < CPU_S:
            time.sleep(0.5)
            planned = plan_of("".join(lines), pid, start, length, threads)
            if all(planned[k] >= WANT * per_part for k in range(1, threads, 2)):
                break
            cpu = cpu1_seconds(pid)
        seconds = time.time() - t0
        d.terminate()
        d.wait(timeout=30)
        time.sleep(0.2)
        out = "".join(lines)
    finally:
        p.kill()
        p.wait()
    return plan_of(out, pid, start, length, threads, checked=True), per_part, seconds, cpu, out, chain


starved_runs = 0
for threads, mb in ((2, 8), (4, 16)):
    planned, per_part, seconds, cpu, out, chain = run(threads, mb)
    print(f"{threads} threads: pages planned per part {planned} of {per_part} each, in {seconds:.1f} s "
          f"({cpu:.1f} s of CPU each thread on CPU 1)")
    if chain and "refused" in chain and starved(chain):
        print(f"{threads} threads: not run: the start-up check was starved for {START_MAX_S} s: {chain.strip()}")
        starved_runs += 1
        continue
    check(chain and "Sampling chain: software (" in chain, f"{threads} threads: the software source was not "
          f"chosen: {chain or out[-3000:]}")
    judged = all(planned[k] >= WANT * per_part for k in range(1, threads, 2)) or cpu >= CPU_S
    if not judged and not any(planned[1::2]):
        print(f"{threads} threads: not run: nothing planned while its threads ran {cpu:.1f} s of CPU in "
              f"{RUN_MAX_S} s (a loaded host)")
        starved_runs += 1
        continue
    for k in range(threads):
        if k % 2 == 0:
            check(planned[k] == 0, f"{threads} threads: {planned[k]} page(s) of part {k} (a thread on CPU 0, "
                  "node 0) planned")
        elif judged:
            check(planned[k] >= WANT * per_part, f"{threads} threads: {planned[k]} of part {k}'s {per_part} "
                  f"pages planned by {cpu:.1f} s of its thread's CPU (at least {WANT:.0%} wanted):\n{out[-3000:]}")
        else:
            print(f"{threads} threads: not asserted: {WANT:.0%} of part {k} planned, since its thread ran only "
                  f"{cpu:.1f} s of CPU in {RUN_MAX_S} s (a loaded host)")
if starved_runs == 2:
    nbtest.skip("the host is too busy: neither run could be judged")

nbtest.finish()
