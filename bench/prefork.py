#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A pre-fork server's table on the other node, inside a 2n2c test-bed guest (as root):

    prefork.py --build BUILD --out DIR [--runs N] [--seconds S] [--mode MODE]... [--nohuge]

bench/prefork.c: a parent builds a TABLE_MB table in its anonymous memory and forks two
workers that look up random entries of it: the table is shared copy-on-write, mapped by
all three. Each run of a mode, modes alternating run by run (bench.py's Balancer:
numabalanced with its shipped config and the cgroup in balance mode, kernel with
kernel.numa_balancing = 1, none):
  1. the server starts in a cgroup whose CPUs are node 0's (memory nodes 0-1): the
     table is first touched there, on node 0;
  2. after 3 s the cgroup is given node 1's CPUs (its memory nodes unchanged);
  3. every 2 s for S seconds, the table's share on node 1 (the parent's numa_maps of
     it: the pages the workers still share with it) and the workers' lookups a second
     over the interval.
Writes DIR/prefork.json: per mode, per run, the timeline, the seconds until 90% on node
1 (null: never), the final share, the lookups a second over the last half, and the
pages the kernel migrated."""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vm"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import scenario  # noqa: E402

TABLE_MB = 128
WORKERS = 2
MODES = ["numabalanced", "kernel", "none"]


def lookups(path):
    try:
        return int(open(path).read())
    except (OSError, ValueError):
        return None


def one_run(env, mode, seconds, nohuge):
    b = bench.Balancer(env, mode)
    cg_name = "bench-prefork"
    env.cgroup(cg_name, None, mems="0-1", cpus=scenario.node_cpus(0))
    cg = b.start(cg_name)
    try:
        ready, status = env.tmp_path("prefork.ready"), env.tmp_path("prefork.status")
        for f in (ready, status):
            if os.path.exists(f):
                os.unlink(f)
        p = subprocess.Popen([os.path.join(env.build, "bench", "prefork"), str(TABLE_MB), str(WORKERS), ready, status]
                             + (["nohuge"] if nohuge else []),
                             preexec_fn=env.enter(os.path.join(cg, "cgroup.procs")))
        env.procs.append(p)
        scenario.wait_ready(p, ready, "prefork")
        fields = open(ready).read().split()
        parent, table = int(fields[0]), int(fields[1], 16)
        time.sleep(3)
        before = env.region_nodes(parent, table)
        mig0 = bench.vmstat("pgmigrate_success")
        with open(os.path.join(cg, "cpuset.cpus"), "w") as f:
            f.write(scenario.node_cpus(1))
        t0 = time.time()
        last = (t0, lookups(status))
        timeline, t90 = [], None
        while time.time() - t0 < seconds:
            time.sleep(2)
            now, n = time.time(), lookups(status)
            nodes = env.region_nodes(parent, table)
            total = sum(nodes.values())
            share = round(nodes.get(1, 0) / total, 4) if total else None
            rate = round((n - last[1]) / (now - last[0])) if n is not None and last[1] is not None else None
            timeline.append((round(now - t0, 1), share, rate))
            last = (now, n)
            if t90 is None and share is not None and share >= 0.9:
                t90 = timeline[-1][0]
        late = [x[2] for x in timeline if x[0] >= seconds / 2 and x[2] is not None]
        return {
            "before_node0": round(before.get(0, 0) / max(1, sum(before.values())), 4),
            "seconds_to_90pct": t90,
            "final_node1": timeline[-1][1] if timeline else None,
            "lookups_per_s_late": round(sum(late) / len(late)) if late else None,
            "migrated_pages": bench.vmstat("pgmigrate_success") - mig0,
            "timeline": timeline,
        }
    finally:
        b.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", default=os.environ.get("NUMABALANCED_RESULTS", "/tmp"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=40)
    ap.add_argument("--mode", action="append", default=None)
    ap.add_argument("--nohuge", action="store_true", help="the table without transparent huge pages")
    a = ap.parse_args()
    modes = a.mode or MODES
    env = scenario.Env(a.build, a.out)
    doc = {"scenario": "prefork", "kernel": platform.release(), "accel": os.environ.get("NUMABALANCED_ACCEL", ""),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seconds": a.seconds,
           "table_mb": TABLE_MB, "workers": WORKERS, "nohuge": a.nohuge,
           "thp": open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip(), "runs": {}}
    scenario.warm_memory(env)
    for r in range(a.runs):
        for mode in (modes if r % 2 == 0 else list(reversed(modes))):
            res = one_run(env, mode, a.seconds, a.nohuge)
            print(json.dumps({"mode": mode, "run": r, **res}), flush=True)
            doc["runs"].setdefault(mode, []).append(res)
            with open(os.path.join(a.out, "prefork.json"), "w") as f:
                json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
