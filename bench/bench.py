#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The benchmark scenarios, run inside a test-bed guest by scripts/bench (which boots
the guest and turns the results into docs/BENCHMARKS.md):

    bench.py --build BUILD --out DIR [--runs N] SCENARIO

Each scenario runs every mode in the same guest boot, modes alternating run by run
(run 1: A B C..., run 2: ... C B A) so that a drift of the host is shared, and writes
DIR/SCENARIO.json. Modes:
  numabalanced  the daemon (shipped config, service CPU 0), the workload's cgroup opted in
  kernel        kernel.numa_balancing=1, no daemon
  numad         numad as Debian ships it (numad -i 5:15), kernel balancing off
  bind          numactl --cpunodebind --membind to the node the threads run on: the
                memory is local from the start (the ideal, the limit)
  none          nothing at all
Scenarios:
  misplaced  (2n1c) 512 MiB first-touched on node 0, its reader thread on node 1
  bound      (2n2c) the same under MPOL_BIND to nodes 0-1
  stalls     (2n1c) one thread's random reads over 512 MiB misplaced on node 0 from
             node 1, every batch of 256 reads timed (bench/stalls.c)
  moverate   (2n2c) MiB/s moving 512 MiB from node 0 to node 1: numabalanced's executor
             (one worker), migratepages(8), and the guest's memcpy bandwidth
Per run: the local share every 0.1 s (the share of the process's resident memory on the
nodes its threads last ran on, from /proc/PID/numa_maps, as numabalancectl show
computes it), time to 95% local, locality at the end, pages migrated (pgmigrate_success
in /proc/vmstat: the whole guest, which is quiet otherwise), and the balancer's CPU
time: the daemon's (or numad's) own utime+stime, on its service CPU; for the kernel,
the workload's system time beyond the none mode's (the hinting faults and
task_numa_work run in the workload's own threads, on its CPU)."""
import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vm"))
import engine  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
DONE_AFTER_S = 3      # keep polling this long after 95%, for the locality at the end


def cpu_s(pid):
    """utime, stime of pid in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def vmstat(key):
    with open("/proc/vmstat") as f:
        for line in f:
            k, v = line.split()
            if k == key:
                return int(v)
    return 0


def pidof(name):
    r = subprocess.run(["pidof", name], capture_output=True, text=True)
    return int(r.stdout.split()[0]) if r.returncode == 0 and r.stdout.strip() else None


class Balancer:
    """Starts and stops one mode's balancer; says whose CPU time is the balancer's."""

    def __init__(self, env, mode):
        self.env, self.mode, self.pid = env, mode, None

    def start(self, cgroup_name):
        engine.sysctl_numa_balancing(1 if self.mode == "kernel" else 0)
        cg = self.env.cgroup(cgroup_name, "balance" if self.mode == "numabalanced" else None)
        if self.mode == "numabalanced":
            self.env.start_daemon(shipped_timing=True)
            self.pid = self.env.daemon.pid
            # Its start-up (loading the BPF programs) is not balancing: let it pass.
            time.sleep(2)
        elif self.mode == "numad":
            subprocess.run(["numad", "-i", "5:15"], check=True)
            for _ in range(50):
                self.pid = pidof("numad")
                if self.pid:
                    break
                time.sleep(0.1)
        return cg

    def cpu(self):
        return sum(cpu_s(self.pid)) if self.pid else 0.0

    def stop(self):
        if self.mode == "numabalanced":
            self.env.stop_daemon()
        elif self.mode == "numad":
            subprocess.run(["numad", "-i", "0"], capture_output=True)
            for _ in range(100):
                if not pidof("numad"):
                    break
                time.sleep(0.1)
        engine.sysctl_numa_balancing(0)


def start_workload(env, mode, cg, size_mb, touch, run, policy):
    if mode == "bind":
        # The ideal: memory and threads on the run node from the first touch.
        wl = [env.workload, str(size_mb), str(run), str(run), policy, "1", "", "system"]
        ready = f"/tmp/bench.ready.{time.time_ns()}"
        wl[6] = ready
        p = subprocess.Popen(["numactl", f"--cpunodebind={run}", f"--membind={run}"] + wl,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        env.procs.append(p)
        deadline = time.time() + 120
        while not os.path.exists(ready):
            if p.poll() is not None:
                raise engine.Fail(f"workload exited: {p.stderr.read().decode()}")
            if time.time() > deadline:
                raise engine.Fail("workload did not get ready")
            time.sleep(0.1)
        return p
    p, _, _ = env.start_workload(cg, size_mb, touch, run, policy=policy)
    return p


def follow(pid, limit_s, t0=None):
    """Polls the local share every 0.1 s; returns (timeline, seconds to 95% or None)."""
    t0 = t0 or time.time()
    timeline, t95 = [], None
    while True:
        t = time.time() - t0
        try:
            share = engine.local_share_direct(pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        timeline.append((round(t, 2), round(share, 4)))
        if t95 is None and share >= 0.95:
            t95 = t
        if t > limit_s or (t95 is not None and t > t95 + DONE_AFTER_S):
            break
        time.sleep(0.1)
    return timeline, t95


def run_locality(env, mode, size_mb, policy, limit_s, name):
    """misplaced / bound: one run of one mode."""
    b = Balancer(env, mode)
    cg = b.start(f"bench-{name}")
    try:
        mig0 = vmstat("pgmigrate_success")
        c0 = b.cpu()
        p = start_workload(env, mode, cg, size_mb, 0, 1, policy)
        u0, s0 = cpu_s(p.pid)
        t0 = time.time()
        timeline, t95 = follow(p.pid, limit_s if mode != "none" else min(limit_s, 20), t0)
        u1, s1 = cpu_s(p.pid)
        res = {
            "t95_s": None if mode == "bind" and t95 is None else t95,
            "final_local": timeline[-1][1] if timeline else None,
            "migrated_pages": vmstat("pgmigrate_success") - mig0,
            "misplaced_pages": size_mb * 256 if mode != "bind" else 0,
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "workload_sys_s": round(s1 - s0, 3),
            "workload_user_s": round(u1 - u0, 3),
            "seconds": round(time.time() - t0, 2),
            "timeline": timeline,
        }
        if mode == "numabalanced":
            res["cpu_where"] = "daemon, service CPU 0 (node 0)"
        elif mode == "numad":
            res["cpu_where"] = "numad, any CPU"
        elif mode == "kernel":
            res["cpu_where"] = "the workload's own thread (node 1)"
        return res
    finally:
        env.cleanup()
        b.stop()
        env.daemon_log = None


def run_stalls(env, mode, size_mb, limit_s):
    b = Balancer(env, mode)
    cg = b.start("bench-stalls")
    stats = f"/tmp/bench.stalls.{time.time_ns()}.json"
    ready = f"/tmp/bench.stalls.ready.{time.time_ns()}"
    try:
        mig0 = vmstat("pgmigrate_success")
        c0 = b.cpu()

        def enter():
            if mode != "none" and mode != "kernel":
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
        p = subprocess.Popen([os.path.join(env.build, "bench", "stalls"), str(size_mb), "0", "1", ready, stats],
                             preexec_fn=enter, stderr=subprocess.PIPE)
        env.procs.append(p)
        deadline = time.time() + 120
        while not os.path.exists(ready):
            if p.poll() is not None:
                raise engine.Fail(f"stalls exited: {p.stderr.read().decode()}")
            if time.time() > deadline:
                raise engine.Fail("stalls did not get ready")
            time.sleep(0.1)
        u0, s0 = cpu_s(p.pid)
        t0 = time.time()
        timeline, t95 = follow(p.pid, limit_s, t0)
        # The stalls counted over a fixed window, the same for every mode.
        while time.time() - t0 < limit_s:
            time.sleep(0.2)
        u1, s1 = cpu_s(p.pid)
        p.send_signal(signal.SIGTERM)
        p.wait(10)
        with open(stats) as f:
            st = json.load(f)
        return {
            "t95_s": t95,
            "final_local": timeline[-1][1] if timeline else None,
            "migrated_pages": vmstat("pgmigrate_success") - mig0,
            "misplaced_pages": size_mb * 256,
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "workload_sys_s": round(s1 - s0, 3),
            "workload_user_s": round(u1 - u0, 3),
            "window_s": limit_s,
            "stalls": st,
            "timeline": timeline,
        }
    finally:
        env.cleanup()
        b.stop()
        env.daemon_log = None


def run_moverate(env, size_mb):
    """One round: the executor, migratepages(8), and memcpy, 0 -> 1."""
    tool = os.path.join(env.build, "tests", "vm", "migrate-run")
    out = {}
    # numabalanced's executor: one job, one worker on CPU 0.
    f = f"/tmp/bench.mr.{time.time_ns()}"
    t = subprocess.Popen([tool, "target", "--size-mb", str(size_mb), "--node", "0", "--out", f],
                         stdout=subprocess.DEVNULL)
    try:
        while not os.path.exists(f) or not open(f).read().strip():
            time.sleep(0.1)
        pid, start, end = open(f).read().split()
        r = subprocess.run([tool, "move", pid, start, end, "1"], capture_output=True, text=True, check=True)
        out["numabalanced_mb_s"] = json.loads(r.stdout)["mb_s"]
    finally:
        t.kill()
        t.wait()
    # migratepages(8): the same memory, timed from outside.
    f = f"/tmp/bench.mr.{time.time_ns()}"
    t = subprocess.Popen([tool, "target", "--size-mb", str(size_mb), "--node", "0", "--out", f],
                         stdout=subprocess.DEVNULL)
    try:
        while not os.path.exists(f) or not open(f).read().strip():
            time.sleep(0.1)
        pid = open(f).read().split()[0]
        t0 = time.time()
        subprocess.run(["taskset", "-c", "0", "migratepages", pid, "0", "1"], check=True)
        out["migratepages_mb_s"] = round(size_mb / (time.time() - t0), 1)
    finally:
        t.kill()
        t.wait()
    r = subprocess.run([os.path.join(env.build, "bench", "memcpy-bw"), str(size_mb), "0", "1", "0", "3"],
                       capture_output=True, text=True, check=True)
    out["memcpy_mb_s"] = float(r.stdout)
    return out


MODES = {
    "misplaced": ["numabalanced", "kernel", "numad", "bind", "none"],
    "bound": ["numabalanced", "kernel", "numad", "none"],
    "stalls": ["numabalanced", "kernel", "none"],
}
TOPOLOGY = {"misplaced": "2n1c", "bound": "2n2c", "stalls": "2n1c", "moverate": "2n2c"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", default=os.environ.get("NUMABALANCED_RESULTS", "/tmp"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=float, default=60, help="seconds a mode gets to reach 95%% local")
    ap.add_argument("scenario", choices=["misplaced", "bound", "stalls", "moverate"])
    a = ap.parse_args()
    env = engine.Env(a.build, a.out)
    doc = {"scenario": a.scenario, "topology": os.environ.get("NUMABALANCED_TOPOLOGY", TOPOLOGY[a.scenario]),
           "kernel": platform.release(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "runs": {}, "errors": []}
    t_start = time.time()
    if a.scenario == "moverate":
        doc["runs"]["rounds"] = []
        for i in range(a.runs):
            try:
                doc["runs"]["rounds"].append(run_moverate(env, 512))
            except (engine.Fail, subprocess.CalledProcessError) as e:
                doc["errors"].append(f"round {i + 1}: {e}")
            print(json.dumps(doc["runs"]["rounds"][-1:]), flush=True)
    else:
        modes = MODES[a.scenario]
        for i in range(a.runs):
            for mode in (modes if i % 2 == 0 else list(reversed(modes))):
                try:
                    if a.scenario == "stalls":
                        r = run_stalls(env, mode, 512, 30)
                    else:
                        r = run_locality(env, mode, 512, "default" if a.scenario == "misplaced" else "bind:0-1",
                                         a.limit, a.scenario)
                except (engine.Fail, subprocess.CalledProcessError, OSError) as e:
                    doc["errors"].append(f"{mode} run {i + 1}: {e}")
                    print(f"{mode} run {i + 1}: FAILED: {e}", flush=True)
                    continue
                doc["runs"].setdefault(mode, []).append(r)
                print(f"{a.scenario} {mode} run {i + 1}: t95 {r['t95_s']} final {r['final_local']} "
                      f"migrated {r['migrated_pages']} cpu {r['balancer_cpu_s']} s"
                      + (f" stalls {r['stalls']}" if "stalls" in r else ""), flush=True)
    doc["seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(a.out, f"{a.scenario}.json"), "w") as f:
        json.dump(doc, f)
    print(f"wrote {a.scenario}.json in {doc['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
