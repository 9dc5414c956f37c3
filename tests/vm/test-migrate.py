#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The migration executor on a real kernel with two memory nodes (run in the guest by
vmrun, topology 2n1m: nodes 0 and 1 with one CPU each, node 2 memory only).

    test-migrate.py MIGRATE_RUN

Scenarios, each asserted on the kernel's own view (move_pages query mode, numa_maps,
smaps) and on the job's counts:
  base     256 MiB first-touched on node 0 moved to node 1 by one worker pinned to CPU 0:
           every page on node 1 afterwards, and "moved" equals what the kernel shows moved;
           one log line per batch
  thp      64 MiB of THP (MADV_HUGEPAGE, 2 MiB aligned) in one job: the executor passes
           one address per 2 MiB chunk (huge page first, daemon/migrate.c), each moves
           its THP whole; counts come out in base pages (16384), AnonHugePages stays
           65536 kB (not split). (Passing all 16384 base addresses, as the executor did
           before, gave on 6.1.0 one -EBUSY per THP for its second address, whose head
           was already isolated, and the target node for the other 510.)
  exit     the target SIGKILLed while a 384 MiB job runs: no crash, error -ESRCH, counts
           within what was passed
  reuse    a job whose start time does not match the live process: nothing done
  measure  MiB/s of one worker against migratepages(8) on the same guest and memory
Results (numbers and observations) go to $NUMABALANCED_RESULTS/migrate.json.
"""
import glob
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

MIB = 1 << 20
PAGE = 4096
ESRCH = 3

results = {}


def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout


class Target:
    """A process holding SIZE MiB first-touched on NODE (migrate-run target)."""

    def __init__(self, tool, size_mb, node, thp=False, name="t"):
        out = os.path.join(RESULTS, f"target-{name}.txt")
        if os.path.exists(out):
            os.unlink(out)
        args = [tool, "target", "--size-mb", str(size_mb), "--node", str(node), "--out", out]
        if thp:
            args.append("--thp")
        self.proc = subprocess.Popen(args)
        deadline = time.monotonic() + 120
        while not os.path.exists(out):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"target {name} did not start (exit {self.proc.poll()})")
            time.sleep(0.1)
        pid, start, end = open(out).read().split()
        self.pid, self.start, self.end = int(pid), int(start, 16), int(end, 16)
        self.pages = (self.end - self.start) // PAGE

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def numa_maps_line(self):
        for line in open(f"/proc/{self.pid}/numa_maps"):
            if int(line.split()[0], 16) == self.start:
                return line
        return ""

    def anon_huge_kb(self):
        """AnonHugePages of the VMA holding start (smaps)."""
        in_vma = False
        for line in open(f"/proc/{self.pid}/smaps"):
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
            if m:
                in_vma = int(m.group(1), 16) <= self.start < int(m.group(2), 16)
            elif in_vma and line.startswith("AnonHugePages:"):
                return int(line.split()[1])
        return -1


def query(tool, t):
    r = subprocess.run([tool, "query", str(t.pid), f"{t.start:x}", f"{t.end:x}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"query failed: {r.stderr}")
    q = json.loads(r.stdout)
    return {int(k): v for k, v in q["nodes"].items()}, q["absent"]


def move(tool, t, target, *opts):
    args = [tool, "move", *opts, str(t.pid), f"{t.start:x}", f"{t.end:x}", str(target)]
    r = subprocess.run(args, capture_output=True, text=True)
    print(f"$ {' '.join(args[1:])}\n{r.stderr}{r.stdout}", end="", flush=True)
    check(r.returncode == 0, f"migrate-run move exited {r.returncode}")
    return json.loads(r.stdout) if r.returncode == 0 else None, r.stderr


def numa_maps_nodes(line):
    return {int(k): int(v) for k, v in re.findall(r" N(\d+)=(\d+)", line)}


def scenario_base(tool):
    t = Target(tool, 256, 0, name="base")
    try:
        before, _ = query(tool, t)
        check(before.get(0, 0) == t.pages, f"base: {t.pages} pages first-touched on node 0 ({before})")
        # -v: the batch lines are at debug level (a minute's summary at info).
        res, log = move(tool, t, 1, "-v", "--cpu", "0", "--batch", "16384")
        if not res:
            return
        after, absent = query(tool, t)
        moved_by_kernel = after.get(1, 0) - before.get(1, 0)
        check(res["error"] == 0, "base: no job error")
        check(after.get(1, 0) == t.pages and absent == 0, f"base: all pages on node 1 afterwards ({after})")
        check(res["moved"] == moved_by_kernel, f"base: moved {res['moved']} == {moved_by_kernel} the kernel shows moved")
        check(res["already"] == 0 and res["busy"] + res["gone"] + res["refused"] == 0,
              "base: nothing already there, busy, gone or refused")
        nm = numa_maps_nodes(t.numa_maps_line())
        check(nm == {1: t.pages}, f"base: numa_maps says N1={t.pages} only ({nm})")
        lines = [l for l in log.splitlines() if re.match(r"cgroup=/vm-test pid=\d+ pages=\d+ from=", l)]
        pat = re.compile(rf"cgroup=/vm-test pid={t.pid} pages=(\d+) from=0:(\d+) to=1 "
                         r"moved=(\d+) busy=0 gone=0 refused=0 call_ms=(\d+)$")
        parsed = [pat.match(l) for l in lines]
        sizes = [int(m.group(1)) for m in parsed if m and m.group(1) == m.group(2) == m.group(3)]
        # Rounds of as many 2 MiB chunks as a batch has base pages for (16384 / 512 =
        # 32): each round's huge-page-first probe (one page per chunk: 32) is a batch,
        # then the rest of its chunks page by page (16352): two lines a round.
        rounds = -(-t.pages // 16384)
        check(len(sizes) == len(lines) and sum(sizes) == t.pages and max(sizes, default=0) <= 16384
              and len(lines) <= 2 * rounds + 1,
              f"base: one log line per batch, the lines add up to every page ({sizes})")
        check(bool(lines) and all(parsed),
              "base: the batch log line names cgroup, pid, pages, from, to, the counts and the call's time")
        results["base"] = res
    finally:
        t.kill()



# The kernel's counters that say where a slow move's time went: reclaim for the target
# pages, compaction, migration retries and failures.
VMSTAT_KEYS = ("allocstall_normal", "allocstall_movable", "pgscan_direct", "pgsteal_direct", "pgscan_kswapd",
               "compact_stall", "pgmigrate_success", "pgmigrate_fail", "thp_migration_split")


def vmstat():
    with open("/proc/vmstat") as f:
        return {k: int(v) for k, v in (line.split() for line in f) if k in VMSTAT_KEYS}


def node_free_mib():
    out = {}
    for path in sorted(glob.glob("/sys/devices/system/node/node[0-9]*/meminfo")):
        with open(path) as f:
            m = re.search(r"Node (\d+) MemFree:\s+(\d+) kB", f.read())
        if m:
            out[int(m.group(1))] = int(m.group(2)) // 1024
    return out


def timed_with_counters(what, fn):
    """Runs fn, and prints the nodes' free memory before and the counters it moved."""
    free, before = node_free_mib(), vmstat()
    t0 = time.monotonic()
    ret = fn()
    el = time.monotonic() - t0
    delta = {k: v - before.get(k, 0) for k, v in vmstat().items() if v != before.get(k, 0)}
    print(f"VMSTAT {what}: {el:.2f} s, free before {free} MiB, counters {delta}", flush=True)
    return ret, el


def scenario_measure(tool):
    """MB/s of one worker with the default batch against migratepages(8) (numactl) on
    the same 256 MiB of the same process, alternating directions and tools, three
    rounds each: the TCG guest shares two host cores with everything else, so single
    timings are noisy; medians and their ratio are reported."""
    t = Target(tool, 256, 0, name="measure")
    ours, theirs = [], []
    try:
        for i in range(3):
            (res, _), _ = timed_with_counters(f"numabalanced {i + 1} to node 1", lambda: move(tool, t, 1, "--cpu", "0"))
            after, _ = query(tool, t)
            check(res is not None and res["moved"] == t.pages and after.get(1, 0) == t.pages,
                  f"measure: numabalanced moved everything to node 1 ({after})")
            if res:
                ours.append(res["mb_s"])
            r, el = timed_with_counters(f"migratepages {i + 1} to node 0", lambda: subprocess.run(
                ["migratepages", str(t.pid), "1", "0"], capture_output=True, text=True))
            after, _ = query(tool, t)
            check(r.returncode == 0 and after.get(0, 0) == t.pages,
                  f"measure: migratepages moved everything back to node 0 ({after})")
            theirs.append(256 / el)
    finally:
        t.kill()
    if ours and theirs:
        mo, mt = sorted(ours)[len(ours) // 2], sorted(theirs)[len(theirs) // 2]
        results["measure"] = {"numabalanced_mb_s": ours, "migratepages_mb_s": theirs,
                              "median_numabalanced": mo, "median_migratepages": mt, "ratio": mo / mt}
        print(f"MEASURE 256 MiB, 1 worker, default batch: numabalanced {[round(x, 1) for x in ours]} MiB/s, "
              f"migratepages {[round(x, 1) for x in theirs]} MiB/s; medians {mo:.1f} / {mt:.1f}, ratio {mo / mt:.2f}",
              flush=True)


def scenario_thp(tool):
    t = Target(tool, 64, 0, thp=True, name="thp")
    try:
        huge_before = t.anon_huge_kb()
        check(huge_before == 64 * 1024, f"thp: the region is backed by THP ({huge_before} kB AnonHugePages)")
        before, _ = query(tool, t)
        res, log = move(tool, t, 1, "-v", "--cpu", "0", "--batch", "16384")
        if not res:
            return
        after, _ = query(tool, t)
        huge_after = t.anon_huge_kb()
        check(res["error"] == 0, "thp: no job error")
        check(after.get(1, 0) == t.pages, f"thp: all on node 1 ({after})")
        check(res["moved"] == t.pages and res["busy"] == 0,
              f"thp: moved {res['moved']} == {t.pages} base pages, nothing left busy after the re-query")
        m = re.search(r"move_pages\((\d+)\)(?: in kernel batches of \d+ base pages)? returned (-?\d+): (\d+) on target, (\d+) -EBUSY, (\d+) unwritten", log)
        raw = dict(zip(["passed", "returned", "on_target", "ebusy", "unwritten"], map(int, m.groups()))) if m else None
        check(raw is not None, "thp: the raw status counts before the re-query were logged")
        check(raw is not None and raw["passed"] == 32 and raw["on_target"] == 32 and raw["ebusy"] == 0,
              "thp: one address per THP passed, each moved its THP whole")
        check(huge_after == 64 * 1024, f"thp: still THP on node 1 ({huge_after} kB AnonHugePages)")
        results["thp"] = {"job": res, "raw_first_call": raw, "anon_huge_kb_before": huge_before,
                          "anon_huge_kb_after": huge_after, "before": before, "after": after}
        print(f"OBSERVED thp: 32 THPs, 16384 base addresses in one call: {raw}; "
              f"AnonHugePages {huge_before} kB -> {huge_after} kB", flush=True)
    finally:
        t.kill()


def scenario_exit(tool):
    t = Target(tool, 384, 0, name="exit")
    try:
        res, log = move(tool, t, 1, "-v", "--cpu", "0", "--batch", "2048", "--kill-after-ms", "400")
    finally:
        t.kill()
    if not res:
        return
    passed = res["moved"] + res["busy"] + res["gone"] + res["refused"]
    check(res["error"] == -ESRCH, f"exit: job error -ESRCH ({res['error']})")
    # Whole batches: rounds of 2048 / 512 = 4 chunks of 2 MiB, each its huge-page-first
    # probe (one page per chunk: 4) and then the rest of its 2048 pages in one batch;
    # the death may come between the two.
    probe = 2048 // 512
    check(passed <= t.pages and res["already"] == 0 and passed % 2048 in (0, probe),
          f"exit: counts within what was passed, whole batches ({passed} of {t.pages})")
    check(res["moved"] < t.pages, "exit: the job stopped before the end")
    batches = [l for l in log.splitlines() if re.match(r"cgroup=\S+ pid=\d+ pages=\d+ from=", l)]
    check(sum(int(re.search(r" pages=(\d+)", l).group(1)) for l in batches) == passed,
          "exit: the batch log lines add up to the counts")
    results["exit"] = res
    print(f"OBSERVED exit: {res['moved']} moved, {res['gone']} gone in {len(batches)} batches before the target died",
          flush=True)


def scenario_reuse(tool):
    t = Target(tool, 16, 0, name="reuse")
    try:
        res, _ = move(tool, t, 1, "--cpu", "0", "--starttime-delta", "1")
        after, _ = query(tool, t)
        if res:
            check(res["error"] == -ESRCH, "reuse: a start time mismatch is -ESRCH")
            check(sum(res[c] for c in ("moved", "already", "busy", "gone", "refused")) == 0, "reuse: nothing counted")
        check(after.get(0, 0) == t.pages, f"reuse: nothing moved ({after})")
    finally:
        t.kill()


def main():
    global RESULTS
    tool = os.path.abspath(sys.argv[1])
    RESULTS = os.environ.get("NUMABALANCED_RESULTS", "/tmp")
    nodes = sh("numactl -H")
    print(nodes.splitlines()[0] if nodes else "no numactl", flush=True)
    if "available: 1 nodes" in nodes or not nodes:
        check(False, "the guest has at least two nodes")
        nbtest.finish()
    # Our placement is the only one: the kernel's balancing would otherwise be a second
    # mover (it does not touch an idle process, but be explicit).
    open("/proc/sys/kernel/numa_balancing", "w").write("0")
    open("/sys/kernel/mm/transparent_hugepage/enabled", "w").write("always")
    print(f"kernel {os.uname().release}", flush=True)

    for scenario in (scenario_base, scenario_thp, scenario_exit, scenario_reuse, scenario_measure):
        try:
            scenario(tool)
        except Exception as e:  # a scenario that cannot run is a failure, not a skip
            check(False, f"{scenario.__name__}: {e!r}")

    results["failed_checks"] = nbtest.failures()
    with open(os.path.join(RESULTS, "migrate.json"), "w") as f:
        json.dump(results, f, indent=1)
    nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
