# SPDX-License-Identifier: GPL-2.0-or-later
"""(place) perf bench numa mem -0 -p 2 -t 2 -P 128: each process gathers on one node with its memory.

The kernel's own benchmark of NUMA placement (perf bench numa; not -m, which ends the
run at the first convergence): two processes of two
threads, every allocation first made on CPU 0 (node 0). Under mode place, sampled
once a second from 5 s into a 30 s run: from some sample at most 20 s in to the end,
every sample has each process's busy threads on one node with at least 90% of its
memory there (converged_at_s: the first of them). Records perf's convergence latency,
the pages migrated (/proc/vmstat), the threads placed (status) and when each process
was placed and its memory moved (timeline).

A process the daemon has not placed, its threads together beside its memory
(already-together), may have a thread moved off its node by the scheduler at any
moment; the daemon gathers it when it sees the split, or the scheduler joins it again.
Both are right, and when the scheduler does it is chance: such an episode, at any time
(its memory still local, the process not placed, as explain says at the sample), passes
when a good sample follows within SPLIT_S; a longer one fails, as does any other bad
sample (seen in one run of nine: split for two samples 22.7-23.9 s, together again at
25.2 s by the scheduler; in a CI run, one at 18.5 s with the next sample at 20.1 s).

Why 20 s and not 10 (the benchmark's bar, scripts/bench perfnuma): under TCG, with
a second guest or valgrind on the other host core, the kernel's copy of 128 MiB took
8 s (one move_pages call of 410 pages took 7.3 s), so a process placed 2.8 s in was
89% local at 10.7 s. A placement that never lets the memory follow (a cooldown), or
a process moved back and forth, still fails."""
import os
import re
import subprocess
import time

from scenario import (check, explain, wait_log, process_node_pages, sysctl_numa_balancing, thread_node,
                      thread_runtime_ns, vmstat)

RUN_S = 30
FROM_S = 5
BY_S = 20
SPLIT_S = 4


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


def unplaced_split(env, sample):
    """The pids of sample split across nodes with their memory still local (at least
    90% on the node of most of its busy threads' first), that the daemon has not placed."""
    out = set()
    for pid, (nodes, share) in sample.items():
        if len(nodes) < 2 or share < 0.9:
            continue
        try:
            pl = explain(env, pid).get("placement") or {}
        except Exception:  # noqa: BLE001 (gone: not excused)
            continue
        if pl.get("placed_node") is None:
            out.add(pid)
    return out


def perf_bench(env, res, cg, excused):
    """Runs the benchmark in cg; returns its samples [(t, {pid: (nodes, share)})]. Adds to
    excused {t: pids split but unplaced at sample t} (unplaced_split())."""
    moved0 = vmstat("pgmigrate_success")
    perf = subprocess.Popen(["perf", "bench", "numa", "mem", "-0", "-p", "2", "-t", "2", "-P", "128",
                             "-s", str(RUN_S), "-c"], preexec_fn=env.enter(os.path.join(cg, "cgroup.procs")), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    env.procs.append(perf)
    t0 = time.time()
    res["perf_started_s"] = round(t0 - env.daemon_t0, 2)
    samples = []
    before = {}
    while perf.poll() is None and time.time() - t0 < RUN_S + 60:
        pids = workers(cg, perf.pid)
        now = {pid: look([pid], before).get(pid) for pid in pids} if before else {}
        # Up to RUN_S only: perf's threads stop after RUN_S of their own clock, and a
        # process whose threads are done has no busy thread to be together.
        if FROM_S <= time.time() - t0 < RUN_S and now:
            t = round(time.time() - t0, 1)
            samples.append((t, {p: v for p, v in now.items() if v}))
            if any(v and (len(v[0]) != 1 or v[1] < 0.9) for v in now.values()):
                excused[t] = unplaced_split(env, samples[-1][1])
            if "placement_at_first_sample" not in res:
                res["placement_at_first_sample"] = placements(env, pids)
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


def excused_episodes(samples, bad, excused):
    """The times of bad samples that are one of unplaced_split()'s episodes: every
    process that is bad in them split but unplaced, a good sample following within
    SPLIT_S of the episode's first. At any time: one just before BY_S, a good sample
    1.6 s after it (samples come slower than once a second under a loaded TCG), made
    the convergence look as if it came after BY_S (a CI run)."""
    bad_t = {t: s for t, s in bad}
    out, episode = [], []
    for t, s in samples:
        if t not in bad_t:
            if episode and t - episode[0] <= SPLIT_S:
                out += episode
            episode = []
            continue
        split = excused.get(t, set())
        if len(s) == 2 and all(p in split for p, (n, share) in s.items() if len(n) != 1 or share < 0.9):
            episode.append(t)
        else:
            episode = []
    return out


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-place-gather", "place")
    env.start_daemon()
    wait_log(env, "Listening on", 120)
    excused = {}
    samples = perf_bench(env, res, cg, excused)
    st = env.status()
    # The evidence of a slow convergence: when each process was placed and its memory
    # moved, in the daemon's seconds (perf_started_s: perf's start on that clock).
    res["timeline"] = [ln.strip()[:200] for ln in env.log().splitlines()
                       if " placed " in ln or " pages=" in ln or "placement round: " in ln][:60]
    res["threads_placed"] = st["placement"]["threads_placed"]
    res["placements"] = st["placement"]["placements"]
    bad = [(t, s) for t, s in samples if len(s) < 2 or any(len(n) != 1 or share < 0.9 for n, share in s.values())]
    res["split_excused"] = excused_episodes(samples, bad, excused)
    bad = [(t, s) for t, s in bad if t not in res["split_excused"]]
    after = [t for t, _ in samples if not bad or t > bad[-1][0]]
    res["samples"] = len(samples)
    res["bad_samples"] = bad[-5:]
    res["converged_at_s"] = after[0] if after else None
    check(len(samples) >= 10, f"only {len(samples)} samples from {FROM_S} s on: {res['perf_tail']}")
    # Every sample from BY_S on is good: the last bad one came before it. (Not "a good
    # one by BY_S": samples come slower than once a second under a loaded TCG, and one
    # bad at 19.5 s with the next at 21 s failed CI run 13 though every sample from
    # 20 s on was good.)
    check(len(after) >= 5 and (not bad or bad[-1][0] < BY_S),
          f"not together and >= 90% local in every sample from {BY_S} s on ({len(bad)} of {len(samples)} "
          f"samples split or remote, the last ones: {bad[-3:]})")
    check(res["placements"] >= 1, "no placement counted")
    env.stop_daemon()
