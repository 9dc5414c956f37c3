# SPDX-License-Identifier: GPL-2.0-or-later
"""Page-level placement: each thread's half of a file's pages goes to its node.

Page-level placement for real ([sample] pmu = page-faults: the page-fault software
event drives the same BPF aggregation, drain and plan_pages() as a PMU would). A
process whose two threads run on node 0 and node 1 reads, each, its own half of 8 MiB
of page cache that sits on node 0 (tests/vm/pagesplit.c). No node has most of its
CPU time, and min_misplaced = 1T rules out whole-VMA moves besides: only page-level
evidence can put thread B's half on node 1, and it must leave thread A's half where
it is."""
import json
import os
import re
import subprocess
import time

from scenario import check, fail, sh, sysctl_numa_balancing


def start_pagesplit(env, cg, pages, mapped=False):
    """pagesplit in cg, once both threads have counted their halves and all of it is on
    node 0. Returns (the process, counts(): its last "A_ON0 A_ON1 B_ON0 B_ON1", its
    ready file). 106-replay starts its workload the same way, with mapped (pagesplit
    --mapped: its pages stay mapped, since its samples are not page faults)."""
    ready, status = env.tmp_path("pagesplit.ready"), env.tmp_path("pagesplit.status")

    def enter():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    p = subprocess.Popen([os.path.join(env.build, "tests", "vm", "pagesplit"), str(pages), ready, status]
                         + (["--mapped"] if mapped else []),
                         preexec_fn=enter, stderr=subprocess.PIPE)
    env.procs.append(p)

    def counts():
        try:
            return [int(x) for x in open(status).read().split()]
        except (OSError, ValueError):
            return None
    # Until both threads have counted their halves once: the first status file is
    # written 300 ms after start, when a thread that has not finished a round (a slow
    # guest) still shows zeros.
    deadline = time.time() + 60
    while True:
        c = counts()
        if c and c[0] + c[1] == pages // 2 and c[2] + c[3] == pages // 2:
            break
        if p.poll() is not None:   # (not in check()'s message: reading stderr blocks while it runs)
            fail(f"pagesplit exited: {p.stderr.read().decode()}")
        if time.time() >= deadline:
            fail(f"pagesplit did not report both halves: {c}")
        time.sleep(0.2)
    check(c[0] == pages // 2 and c[2] == pages // 2, f"the page cache is not all on node 0 to begin with: {c}")
    return p, counts, ready


def b_moved_a_kept(counts, pages, res, since):
    """Waits (120 s at most) for 95% of thread B's half on node 1, then checks that all
    of thread A's half is still on node 0. since: what the 120 s count from, said in
    the failure."""
    t0 = time.time()
    t = c = None
    while time.time() - t0 < 120:
        c = counts()
        if c and c[3] >= 0.95 * pages // 2:
            t = time.time() - t0
            break
        time.sleep(0.3)
    res["seconds_to_95pct_local"] = t
    res["final_counts"] = c
    check(t is not None, f"thread B's pages not on node 1 within 120 s{since}: {c}")
    time.sleep(2)
    c = counts()
    check(c[0] == pages // 2, f"thread A's pages moved off node 0: {c}")


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-pages", "balance")
    pages = 2048
    _, counts, _ = start_pagesplit(env, cg, pages)
    env.start_daemon(extra_conf="[select]\nmin_rss = 0\n[sample]\npmu = page-faults\n"
                                "[decide]\nmin_misplaced = 1T\n")
    b_moved_a_kept(counts, pages, res, "")
    st = json.loads(sh(env.ctl, "status", "--json").stdout)
    check(st.get("sampling_chain") == "pmu+bpf" and st.get("page_sampling") == "page-faults",
          f"status does not show the page-level chain: {st.get('sampling_chain')} {st.get('page_sampling')}")
    check(st.get("page_samples", 0) >= pages // 2, f"status page_samples {st.get('page_samples')}")
    env.stop_daemon()
    log = env.last_log
    check("Sampling chain: page faults (every fault" in log, "the chain line is missing")
    check(re.search(r"page-level: \d+ page\(s\) sampled, \d+ shared, moving \d+ KiB", log),
          "no page-level move logged")
    check(not re.search(r"pid=\d+: moving \d+ KiB in \d+ VMA", log), "a whole-VMA move was made")
