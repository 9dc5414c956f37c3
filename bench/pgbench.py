#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""PostgreSQL's shared buffers on the other node, inside a 2n2c test-bed guest (as root;
the guest sees the host's /usr: PostgreSQL 15 from Debian must be installed there):

    pgbench.py --build BUILD --out DIR [--runs N] [--seconds S] [--mode MODE]...

Once: a cluster in /tmp/nb-pg (initdb as the postgres user), pgbench's tables at scale
10 (about 160 MiB with their indexes). Each run of a mode, modes alternating run by run
(bench.py's Balancer starts and stops each: numabalanced with its shipped config and the
cgroup in balance mode, kernel with kernel.numa_balancing = 1, none):
  1. the server starts in a cgroup whose CPUs are node 0's (memory nodes 0-1), with
     shared_buffers = 192MB (mmap'd shared memory, as Debian's PostgreSQL 15 has it),
     and pg_prewarm reads the tables and indexes into the shared buffers: first touched
     there, on node 0;
  2. the cgroup is given node 1's CPUs (its memory nodes unchanged), and
     `pgbench -S -c 4 -j 2 -T S` (select-only) runs from outside the cgroup;
  3. every 2 s while pgbench runs, the shared buffers' locality: the share on node 1 of
     the shared-buffer mapping's pages the backends serving pgbench map (numa_maps,
     summed over them); pgbench's TPS (excluding connection time).
Writes DIR/pgbench.json: per mode, per run, the locality over time, the seconds until
90% on node 1 (null: never), the final locality and TPS.

With --free the cgroup is given every CPU instead (step 2), and the modes are
numabalanced-place (the cgroup in place mode: threads go to their memory), kernel and
none: every 2 s, the shared buffers' share on node 0 and the share of the backends' CPU
time spent on node 0's CPUs (their threads' run time over the interval, by the node of
the CPU each last ran on), and TPS. Writes DIR/pgbench-free.json."""
import argparse
import json
import os
import platform
import pwd
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vm"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import scenario  # noqa: E402

PGBIN = "/usr/lib/postgresql/15/bin"
BASE = "/tmp/nb-pg"
DATA = os.path.join(BASE, "data")
SCALE = 10
SHARED_BUFFERS_MB = 192
MODES = ["numabalanced", "kernel", "none"]
FREE_MODES = ["numabalanced-place", "kernel", "none"]


def as_postgres(cg=None):
    pw = pwd.getpwnam("postgres")

    def fn():
        if cg:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return fn


def pg(cmd, cg=None, check=True, timeout=900):
    return subprocess.run(cmd, preexec_fn=as_postgres(cg), capture_output=True, text=True, check=check,
                          timeout=timeout, env=dict(os.environ, PGHOST=BASE, HOME=BASE))


def server_start(cg):
    opts = (f"-c shared_buffers={SHARED_BUFFERS_MB}MB -c huge_pages=off -c listen_addresses='' "
            f"-c unix_socket_directories={BASE} -c max_connections=20")
    pg([f"{PGBIN}/pg_ctl", "-D", DATA, "-o", opts, "-l", os.path.join(BASE, "log"), "-w", "start"], cg)


def server_stop():
    pg([f"{PGBIN}/pg_ctl", "-D", DATA, "-m", "immediate", "-w", "stop"], check=False)


def setup():
    if os.path.exists(os.path.join(DATA, "PG_VERSION")):
        return
    os.makedirs(BASE, exist_ok=True)
    pw = pwd.getpwnam("postgres")
    os.chown(BASE, pw.pw_uid, pw.pw_gid)
    pg([f"{PGBIN}/initdb", "-D", DATA, "-A", "trust", "-U", "postgres"])
    server_start(None)
    pg([f"{PGBIN}/pgbench", "-i", "-s", str(SCALE), "-q", "postgres"])
    pg([f"{PGBIN}/psql", "-q", "-c", "create extension if not exists pg_prewarm", "postgres"])
    server_stop()


def pg_pids():
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if open(f"/proc/{pid}/comm").read().startswith("postgres"):
                    out.append(int(pid))
            except OSError:
                pass
    return out


def backend_pids():
    """The backends serving pgbench (connected over the socket: "[local]")."""
    out = []
    for pid in pg_pids():
        try:
            if b"[local]" in open(f"/proc/{pid}/cmdline", "rb").read():
                out.append(pid)
        except OSError:
            pass
    return out


def buffers_nodes():
    """Pages per node of the shared-buffer mapping, summed over the backends serving
    pgbench (each counts the pages it maps: what is remote or local for them)."""
    return sum_nodes(backend_pids())


def sum_nodes(pids):
    total = {}
    for pid in pids:
        for k, v in vma_nodes_any(pid).items():
            total[k] = total.get(k, 0) + v
    return total


def vma_nodes_any(pid):
    """Pages per node of pid's shared-buffer mapping, {} if none."""
    try:
        starts = set()
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                fields = line.split()
                a, b = (int(x, 16) for x in fields[0].split("-"))
                if fields[1][3] == "s" and b - a >= SHARED_BUFFERS_MB << 20:
                    starts.add(a)
        with open(f"/proc/{pid}/numa_maps") as f:
            for line in f:
                fields = line.split()
                if int(fields[0], 16) in starts:
                    return {int(t[1:].split("=")[0]): int(t.split("=")[1]) for t in fields if re.match(r"N\d+=", t)}
    except (OSError, ValueError):
        pass
    return {}


def share_on(nodes, node):
    total = sum(nodes.values())
    return round(nodes.get(node, 0) / total, 4) if total else None


def backend_runtime():
    """{(pid, tid): (run time ns, node of the CPU it last ran on)} of PostgreSQL's threads."""
    nodes = scenario.cpu_nodes()
    out = {}
    for pid in pg_pids():
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                stat = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
                out[(pid, int(tid))] = (ns, nodes.get(int(stat[36]), -1))
        except (OSError, ValueError, IndexError):
            continue
    return out


def node0_cpu_share(before, after):
    on0 = total = 0
    for key, (ns, node) in after.items():
        d = ns - before.get(key, (ns, node))[0]
        total += d
        on0 += d if node == 0 else 0
    return round(on0 / total, 4) if total else None


def one_run(env, mode, seconds, free=False):
    b = bench.Balancer(env, mode)
    cg_name = "bench-pgbench"
    env.cgroup(cg_name, None, mems="0-1", cpus=scenario.node_cpus(0))
    cg = b.start(cg_name)
    try:
        server_start(cg)
        pg([f"{PGBIN}/psql", "-q", "-c", "select pg_prewarm(c.oid) from pg_class c where c.relname like 'pgbench_%' "
            "and c.relkind in ('r', 'i')", "postgres"], cg)
        before = sum_nodes(pg_pids())   # before pgbench connects: every process's view
        mig0 = bench.vmstat("pgmigrate_success")
        with open(os.path.join(cg, "cpuset.cpus"), "w") as f:
            f.write(f"{scenario.node_cpus(0)},{scenario.node_cpus(1)}" if free else scenario.node_cpus(1))
        t0 = time.time()
        rt = backend_runtime()
        client = subprocess.Popen([f"{PGBIN}/pgbench", "-S", "-c", "4", "-j", "2", "-T", str(seconds), "postgres"],
                                  preexec_fn=as_postgres(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=dict(os.environ, PGHOST=BASE, HOME=BASE))
        timeline, t90 = [], None
        while client.poll() is None:
            time.sleep(2)
            if client.poll() is not None:
                break   # the backends are leaving: the last sample is the one before
            if free:
                rt2 = backend_runtime()
                timeline.append((round(time.time() - t0, 1), share_on(buffers_nodes(), 0), node0_cpu_share(rt, rt2)))
                rt = rt2
                continue
            share = share_on(buffers_nodes(), 1)
            timeline.append((round(time.time() - t0, 1), share))
            if t90 is None and share is not None and share >= 0.9:
                t90 = timeline[-1][0]
        text = client.stdout.read()
        tps = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", text)
        if free:
            late = [x for x in timeline if x[0] >= 10]
            cpu = [x[2] for x in late if x[2] is not None]
            return {
                "buffers_node0_end": timeline[-1][1] if timeline else None,
                "buffers_node0_min": min((x[1] for x in timeline if x[1] is not None), default=None),
                "backends_cpu_on_node0_from_10s": round(sum(cpu) / len(cpu), 4) if cpu else None,
                "tps": float(tps.group(1)) if tps else None,
                "migrated_pages": bench.vmstat("pgmigrate_success") - mig0,
                "timeline": timeline,
                "pgbench_tail": text[-600:] if not tps else None,
            }
        return {
            "before_node0": share_on(before, 0),
            "seconds_to_90pct": t90,
            "final_node1": timeline[-1][1] if timeline else None,
            "tps": float(tps.group(1)) if tps else None,
            "migrated_pages": bench.vmstat("pgmigrate_success") - mig0,
            "timeline": timeline,
            "pgbench_tail": text[-600:] if not tps else None,
        }
    finally:
        server_stop()
        b.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", default=os.environ.get("NUMABALANCED_RESULTS", "/tmp"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=40)
    ap.add_argument("--mode", action="append", default=None)
    ap.add_argument("--free", action="store_true", help="the cgroup given every CPU, not node 1's")
    a = ap.parse_args()
    modes = a.mode or (FREE_MODES if a.free else MODES)
    env = scenario.Env(a.build, a.out)
    doc = {"scenario": "pgbench-free" if a.free else "pgbench", "kernel": platform.release(), "accel": os.environ.get("NUMABALANCED_ACCEL", ""),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seconds": a.seconds, "runs": {}}
    t_setup = time.time()
    setup()
    doc["setup_s"] = round(time.time() - t_setup, 1)
    scenario.warm_memory(env)
    for r in range(a.runs):
        for mode in (modes if r % 2 == 0 else list(reversed(modes))):
            res = one_run(env, mode, a.seconds, a.free)
            print(json.dumps({"mode": mode, "run": r, **res}), flush=True)
            doc["runs"].setdefault(mode, []).append(res)
            with open(os.path.join(a.out, f"{doc['scenario']}.json"), "w") as f:
                json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
