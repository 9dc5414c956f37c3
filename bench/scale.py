#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's own cost with many opted-in processes, settled, in a test-bed guest:

    tests/vm/vmrun --timeout 900 2n2c bench/scale.py --build BUILD_DIR [--counts 10,100,1000]
        [--settle S] [--measure S]

For each count N: N idle processes (bench/idle-procs: forked children that pause, a
few tens of KiB each, so that 10,000 fit in the guest) in one cgroup opted in with
trusted.numabalanced=balance, min_rss = 0 so that every one of them is scanned (read
status, numa_maps and maps, decided on) rather than skipped as too small; the daemon
with the shipped timings (tick 1 s, scans backing off from 1 s to 30 s). After SETTLE
seconds (at least N/100: every process's first scans must be over) the daemon's CPU time (utime + stime from /proc/PID/stat) is measured over
MEASURE seconds: reported as ms per tick and as a share of one CPU, with its VmRSS and
VmHWM, and the number of processes `numabalancectl list --json` says it watches.
TCG runs the guest's code several times slower than the host would: the CPU figures
are upper bounds for real hardware. Results: JSON on stdout and in
$NUMABALANCED_RESULTS/scale.json."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

CG = "/sys/fs/cgroup/nb-scale"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK   # utime, stime (fields 14, 15)


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def run(build, n, settle, measure):
    os.makedirs(CG, exist_ok=True)
    os.setxattr(CG, "trusted.numabalanced", b"balance")
    ready = f"/tmp/numabalanced-scale.ready.{time.time_ns()}"

    def enter():
        with open(os.path.join(CG, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    idle = subprocess.Popen([os.path.join(build, "bench", "idle-procs"), str(n), ready], preexec_fn=enter)
    deadline = time.time() + 600
    while not os.path.exists(ready):
        if idle.poll() is not None or time.time() > deadline:
            idle.kill()
            raise SystemExit(f"idle-procs did not start {n} processes")
        time.sleep(0.2)
    conf = "/tmp/numabalanced-scale.conf"
    with open(conf, "w") as f:
        f.write("[daemon]\nservice_cpus = 0\n[select]\nmin_rss = 0\n")
    sock = "/run/numabalanced-scale.sock"
    daemon = subprocess.Popen([os.path.join(build, "daemon", "numabalanced"), "--foreground", "--config", conf,
                               "--control-socket", sock], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(max(settle, n / 100))
        c0, t0 = cpu_seconds(daemon.pid), time.monotonic()
        time.sleep(measure)
        c1, t1 = cpu_seconds(daemon.pid), time.monotonic()
        st = subprocess.run([os.path.join(build, "ctl", "numabalancectl"), "--socket", sock, "--json", "list"],
                            capture_output=True, text=True)
        try:
            watched = len(json.loads(st.stdout)["processes"])
        except (ValueError, KeyError):
            watched = f"numabalancectl list failed: {st.stderr.strip()}"
        wall = t1 - t0
        res = {
            "processes": n,
            "settle_s": max(settle, n / 100),
            "watched": watched,
            "cpu_s": round(c1 - c0, 3),
            "wall_s": round(wall, 1),
            "cpu_pct_of_one_cpu": round(100 * (c1 - c0) / wall, 2),
            "cpu_ms_per_tick": round(1000 * (c1 - c0) / wall, 2),   # tick_ms = 1000
            "rss_kb": status_kb(daemon.pid, "VmRSS"),
            "hwm_kb": status_kb(daemon.pid, "VmHWM"),
        }
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        idle.terminate()
        idle.wait(60)
        # The children go with their parent (SIGTERM to its group, PDEATHSIG): the
        # cgroup is empty once they are reaped.
        deadline = time.time() + 120
        while True:
            try:
                os.rmdir(CG)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--counts", default="10,100,1000")
    ap.add_argument("--settle", type=float, default=40)
    ap.add_argument("--measure", type=float, default=30)
    a = ap.parse_args()
    with open("/proc/sys/kernel/numa_balancing", "w") as f:
        f.write("0")
    out = []
    for n in (int(x) for x in a.counts.split(",")):
        r = run(a.build, n, a.settle, a.measure)
        print(json.dumps(r), flush=True)
        out.append(r)
    with open(os.path.join(os.environ.get("NUMABALANCED_RESULTS", "/tmp"), "scale.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
