#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Overhead of the BPF placement program on sched_switch, in a test-bed guest:

    tests/vm/vmrun --timeout 900 2n1c bench/sched-overhead.py --build BUILD_DIR [--round-trips N]

A context-switch storm (bench/ctxswitch: two threads on one CPU ping-ponging a byte
over pipes, 2 switches per round trip) runs
  off        without the program;
  unwatched  with the program attached, watching another (idle) process: the cost
             every process on the machine pays;
  watched    with the program attached and the storm's own tgid watched: the cost of
             counting.
The direct measure is the kernel's BPF statistics (kernel.bpf_stats_enabled=1):
run_time_ns / run_cnt of the program over the storm, reported per million context
switches. The storm's wall time per switch is reported beside it (TCG: absolute numbers
are ~45x the host's; compare ratios). Each case runs REPS times; medians are reported.
Results: one JSON document on stdout and in $NUMABALANCED_RESULTS/sched-overhead.json."""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

BPFTOOL = "/usr/sbin/bpftool"
REPS = 3


def prog_stats():
    r = subprocess.run([BPFTOOL, "prog", "show", "--json"], capture_output=True, text=True, check=True)
    for p in json.loads(r.stdout):
        if p.get("name") in ("sched_switch_bt", "sched_switch_btf", "sched_switch_ra", "sched_switch_raw"):
            return p.get("run_time_ns", 0), p.get("run_cnt", 0), p["id"]
    return None


def wait_attached(probe):
    deadline = time.time() + 60
    while time.time() < deadline:
        if probe.poll() is not None:
            raise SystemExit(f"placement-probe exited: {probe.stderr.read()}")
        if prog_stats():
            time.sleep(0.5)   # the probe's baseline sample (which watches) follows the attach
            return
        time.sleep(0.1)
    raise SystemExit("the program did not attach within 60 s")


def storm(ctx, cpu, n, ready=None):
    args = [ctx, str(cpu), str(n)] + ([ready] if ready else [])
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--round-trips", type=int, default=100000)
    a = ap.parse_args()
    ctx = os.path.join(a.build, "bench", "ctxswitch")
    probe_bin = os.path.join(a.build, "tests", "vm", "placement-probe")
    cpu = max(os.sched_getaffinity(0))
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    res = {"round_trips": a.round_trips, "cpu": cpu, "kernel": os.uname().release, "runs": {}}

    idle = subprocess.Popen(["sleep", "100000"])
    try:
        for case in ("off", "unwatched", "watched"):
            runs = []
            for _ in range(REPS):
                probe, ready = None, f"/tmp/ctx.{time.time_ns()}"
                if case == "watched":
                    s = storm(ctx, cpu, a.round_trips, ready)
                    while not os.path.exists(ready) or not open(ready).read().strip():
                        time.sleep(0.05)
                    target = int(open(ready).read())
                else:
                    s, target = None, idle.pid
                if case != "off":
                    probe = subprocess.Popen([probe_bin, "3600", str(target)],
                                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    wait_attached(probe)
                before = prog_stats() if probe else None
                if case == "watched":
                    s.send_signal(signal.SIGUSR1)
                else:
                    s = storm(ctx, cpu, a.round_trips)
                out, _ = s.communicate()
                after = prog_stats() if probe else None
                if probe:
                    probe.send_signal(signal.SIGTERM)
                    probe.wait()
                run = json.loads(out)
                if before and after:
                    dt, dc = after[0] - before[0], after[1] - before[1]
                    run.update(prog_run_cnt=dc, prog_run_time_ns=dt,
                               prog_ns_per_run=round(dt / dc, 1) if dc else None,
                               prog_ms_per_million_switches=round(dt / dc * 1e6 / 1e6, 2) if dc else None)
                runs.append(run)
                print(case, json.dumps(run), flush=True)
            res["runs"][case] = runs
    finally:
        idle.kill()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("0")

    summary = {}
    for case, runs in res["runs"].items():
        summary[case] = {"ns_per_switch": statistics.median(r["ns_per_switch"] for r in runs)}
        if case != "off":
            summary[case]["prog_ns_per_run"] = statistics.median(r["prog_ns_per_run"] for r in runs)
            summary[case]["prog_ms_per_million_switches"] = statistics.median(
                r["prog_ms_per_million_switches"] for r in runs)
    res["summary"] = summary
    print(json.dumps(res, indent=1), flush=True)
    out = os.environ.get("NUMABALANCED_RESULTS")
    if out:
        with open(os.path.join(out, "sched-overhead.json"), "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
