# SPDX-License-Identifier: GPL-2.0-or-later
"""(place) perf bench numa mem -0 -p 2 -t 2 -P 128: each process gathers on one node with its memory.

The kernel's own benchmark of NUMA placement (perf bench numa; not -m, which ends the
run at the first convergence): two processes of two
threads, every allocation first made on CPU 0 (node 0). Under mode place, from 10 s
into a 30 s run to its end, once a second: each process's busy threads share one node
and at least 90% of its memory is there. Records perf's convergence latency, the
pages migrated (/proc/vmstat) and the threads placed (status)."""
import os
import re
import subprocess
import time

from scenario import (check, explain, wait_log, process_node_pages, sysctl_numa_balancing, thread_node,
                      thread_runtime_ns, vmstat)

RUN_S = 30
FROM_S = 10


def workers(cg, perf_pid):
    with open(os.path.join(cg, "cgroup.procs")) as f:
        return sorted(int(x) for x in f.read().split() if int(x) != perf_pid)


def busy_threads(pid, before, window_s):
    """Threads of pid that ran at least 30% of window_s since before ({tid: ns})."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            ns = thread_runtime_ns(pid, tid)
        except OSError:
            continue
        if int(tid) in before and ns - before[int(tid)] >= 0.3 * window_s * 1e9:
            out.append(int(tid))
    return out


def runtimes(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = thread_runtime_ns(pid, tid)
        except OSError:
            pass
    return out


def look(pids, before):
    """{pid: (nodes of its busy threads, share of its memory on the first)} now."""
    out = {}
    for pid in pids:
        try:
            tids = busy_threads(pid, before.get(pid, {}), 1.0)
            nodes = sorted({thread_node(pid, t) for t in tids})
            pages = process_node_pages(pid)
        except OSError:
            continue
        total = sum(pages.values())
        share = pages.get(nodes[0], 0) / total if nodes and total else 0.0
        out[pid] = (nodes, share)
    return out


def placements(env, pids):
    """What explain says of each worker's placement (for a failure's evidence)."""
    out = {}
    for pid in pids:
        try:
            pl = explain(env, pid).get("placement") or {}
        except Exception as e:  # noqa: BLE001 (evidence only)
            pl = {"error": str(e)}
        out[pid] = {k: pl.get(k) for k in ("explanation", "reason", "decision", "decision_node", "busy_threads",
                                           "threads_to_move", "bytes_to_follow")}
    return out


def perf_bench(env, res, cg, mode_check=True):
    """Runs the benchmark in cg; returns its samples [(t, {pid: (nodes, share)})]."""
    procs_file = os.path.join(cg, "cgroup.procs")

    def enter():
        with open(procs_file, "w") as f:
            f.write(str(os.getpid()))

    moved0 = vmstat("pgmigrate_success")
    perf = subprocess.Popen(["perf", "bench", "numa", "mem", "-0", "-p", "2", "-t", "2", "-P", "128",
                             "-s", str(RUN_S), "-c"], preexec_fn=enter, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    env.procs.append(perf)
    t0 = time.time()
    samples = []
    before = {}
    while perf.poll() is None and time.time() - t0 < RUN_S + 60:
        pids = workers(cg, perf.pid)
        now = {pid: look([pid], before).get(pid) for pid in pids} if before else {}
        if time.time() - t0 >= FROM_S and now:
            samples.append((round(time.time() - t0, 1), {p: v for p, v in now.items() if v}))
            if "placement_at_10s" not in res:
                res["placement_at_10s"] = placements(env, pids)
        before = {}
        for pid in pids:
            try:
                before[pid] = runtimes(pid)
            except OSError:
                pass
        time.sleep(1)
    out = perf.communicate(timeout=60)[0].decode(errors="replace")
    res["pages_migrated"] = vmstat("pgmigrate_success") - moved0
    m = re.search(r"([0-9.]+),\s*secs,\s*NUMA-convergence-latency", out)
    res["convergence_latency_s"] = float(m.group(1)) if m else None
    res["perf_tail"] = out.strip().splitlines()[-8:]
    return samples


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-place-gather", "place")
    env.start_daemon()
    wait_log(env, "Listening on", 120)
    samples = perf_bench(env, res, cg)
    st = env.status()
    res["threads_placed"] = st["placement"]["threads_placed"]
    res["placements"] = st["placement"]["placements"]
    bad = [(t, s) for t, s in samples if len(s) < 2 or any(len(n) != 1 or share < 0.9 for n, share in s.values())]
    res["samples"] = len(samples)
    res["bad_samples"] = bad[:5]
    check(len(samples) >= 5, f"only {len(samples)} samples from {FROM_S} s on: {res['perf_tail']}")
    check(not bad, f"{len(bad)} of {len(samples)} samples had a process split or < 90% local: {bad[:3]}")
    check(res["placements"] >= 1, "no placement counted")
    env.stop_daemon()
