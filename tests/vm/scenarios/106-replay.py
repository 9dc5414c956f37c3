# SPDX-License-Identifier: GPL-2.0-or-later
"""Software page-level samples recorded on a real CPU, replayed: each thread's half goes to its node.

The software source ([sample] pmu = software) cannot run in these TCG guests (its
self-check refuses it: software-refused), so its samples were recorded on the host's
real CPU (tests/unit/sw-record.c: two threads, each reading its own half of 8 MiB,
on CPU 0 and CPU 1 of the stored 2n1m topology; tests/data/sw/split2.samples, one
"NODE OFFSET" line per sample) and are replayed here ([sample] pmu = replay): each line
becomes "TGID CPU ADDR" for pagesplit's own process and buffer (CPU: the first of
that node's), appended to the daemon's replay_path after it started. pagesplit's
threads run on node 0 and node 1, its 8 MiB on node 0 and mapped throughout (--mapped); min_misplaced = 1T rules out
whole-VMA moves. Asserted: 95% of thread B's half on node 1 within 120 s, all of
thread A's half still on node 0, status showing the replay chain, and page-level
moves logged, none of a whole VMA."""
import json
import os
import re
import time

from scenario import check, fail, load, node_cpus, sh, sysctl_numa_balancing

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "sw", "split2.samples")


def replay_lines(pid, start, length):
    """The recording's samples as "TGID CPU ADDR" lines for pid's buffer at start."""
    cpu_of = {}
    out = []
    for line in open(SAMPLES):
        if line.startswith("#") or not line.strip():
            continue
        node, off = line.split()
        node, off = int(node), int(off, 16)
        if off >= length:
            fail(f"a recorded offset {off:#x} is beyond the buffer ({length} bytes)")
        if node not in cpu_of:
            cpu_of[node] = int(node_cpus(node).split(",")[0].split("-")[0])
        out.append(f"{pid} {cpu_of[node]} {start + off:#x}\n")
    return out


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-replay", "balance")
    replay = env.tmp_path("replay")
    pages = 2048
    open(replay, "w").close()
    # --mapped: pagesplit's threads otherwise drop their page table entries every
    # 300 ms to fault them in again (what the page-faults source samples); a query
    # then finds part of a half absent and skips it, and these samples are replayed
    # once (moved 685 of 1,024 pages in 1 run of 3 before).
    _, counts, ready = load("pages").start_pagesplit(env, cg, pages, mapped=True)
    pid, start, length = open(ready).read().split()[:3]
    lines = replay_lines(int(pid), int(start, 16), int(length))
    res["replayed_samples"] = len(lines)
    env.start_daemon(extra_conf=f"[select]\nmin_rss = 0\n[sample]\npmu = replay\nreplay_path = {replay}\n"
                                "[decide]\nmin_misplaced = 1T\n")
    # After the daemon has scanned pagesplit once (its record exists, so the samples
    # are kept for its next scan).
    wait_seen = time.time() + 60
    while f"pid={pid}" not in env.log():
        if time.time() >= wait_seen:
            fail(f"the daemon never scanned pagesplit:\n{env.log()[-2000:]}")
        time.sleep(0.2)
    with open(replay, "a") as f:
        f.writelines(lines)
    load("pages").b_moved_a_kept(counts, pages, res, " of the replay")
    st = json.loads(sh(env.ctl, "--json", "status").stdout)
    check(st.get("page_sampling") == "replay" and st.get("sampling_chain", "").startswith("replay+"),
          f"status does not show the replay chain: {st.get('sampling_chain')} {st.get('page_sampling')}")
    table = sh(env.ctl, "status").stdout
    check(re.search(r"Sampling chain: +replayed samples \(\d+ samples\) \+ (BPF scheduler|/proc)\n", table),
          f"numabalancectl status does not show the replay chain: {table}")
    env.stop_daemon()
    log = env.last_log
    check("Sampling chain: replayed page samples" in log, "the chain line is missing")
    check(re.search(r"page-level: \d+ page\(s\) sampled, \d+ shared, moving \d+ KiB", log),
          "no page-level move logged")
    check(not re.search(r"pid=\d+: moving \d+ KiB in \d+ VMA", log), "a whole-VMA move was made")
