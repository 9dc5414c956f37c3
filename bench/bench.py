#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The benchmark scenarios, run inside a test-bed guest by scripts/bench (which boots
the guest and turns the results into docs/BENCHMARKS.md):

    bench.py --build BUILD --out DIR [--runs N] [--mode MODE]... [--service-cpus LIST] SCENARIO

Each scenario runs every mode (or those --mode names) in the same guest boot, modes
alternating run by run (run 1: A B C..., run 2: ... C B A) so that a drift of the host
is shared, and writes DIR/SCENARIO.json. Before the first run every node's free memory
is touched once (scenario.warm_memory: the host allocates a TCG guest's RAM on first
touch, a cost only the first run would pay). --service-cpus: the daemon's
service_cpus (default 0, what the shipped config picks on these guests). Modes:
  numabalanced  the daemon (shipped config, service CPU 0), the workload's cgroup opted in
  numabalanced-place, numabalanced-balance  the same with the cgroup in that mode (the
                perfnuma scenarios); a mode this build's daemon does not take is left out
  kernel        kernel.numa_balancing=1, no daemon
  numad         numad as Debian ships it (numad -i 5:15), kernel balancing off
  bind          numactl --cpunodebind --membind to the node the threads run on: the
                memory is local from the start (the ideal, the limit)
  none          nothing at all
  kernel-tiering  kernel.numa_balancing=2 (memory tiering: hot pages on a lower tier
                promoted on hint faults, numa_balancing_promote_rate_limit_MBps as
                the kernel ships it), no daemon
  damon         (6.12 guests, --kernel 6.12) the kernel's DAMON through its sysfs
                interface as a peer: one kdamond monitoring the physical memory of
                node 0 (paddr) with a migrate_hot scheme to node 1 (the 6.11+ action
                with a target node), kernel balancing off. It must be told the source
                and target: the direction every two-node scenario here needs
Scenarios:
  steady     (2n1c) memory local from the start: one reader per CPU of every node, random
             reads over its own part of one mapping, every batch of 256 timed
             (bench/steady.c); per mode a window (--window, default 600 s) after 20 s of
             warm-up: outliers per hour, percentiles, the kernel's NUMA hint faults and
             PTE updates (/proc/vmstat). What balancing costs a workload that needs none.
  steady-churn (2n1c-big) the same over one 3 GiB mapping, each reader also mapping,
             touching and unmapping 1 MiB every 64 batches (an allocator handing memory
             back), those operations timed too: a long numa_maps walk holds the mmap
             lock they need
  maplock    (2n1c-big) steady-churn's workload, its 3 GiB mapping in base pages (THP off
             for it, as many databases run: a walk visits every PTE), under the daemon as shipped (huge_vma:
             the settled process's 3 GiB mapping sampled) and with huge_vma = 0
             (numa_maps read at every scan: the walk holds the mmap lock), every
             scan_max_ms 1000 so that two minutes hold a hundred scans; the churn's
             latencies, and the time one read of the process's numa_maps takes
  misplaced  (2n1c) 512 MiB first-touched on node 0, its reader thread on node 1
  bound      (2n2c) the same under MPOL_BIND to nodes 0-1
  stalls     (2n1c) one thread's random reads over 512 MiB misplaced on node 0 from
             node 1, every batch of 256 reads timed (bench/stalls.c)
  moverate   (2n2c) MiB/s moving 512 MiB from node 0 to node 1: numabalanced's executor
             with one worker (service CPU 0) and with two (service CPUs 0-1, the job
             split between them as the daemon splits it), migratepages(8), and the
             guest's memcpy bandwidth
  misplaced-1g  (2n1c-big) misplaced with 1 GiB (2n1c has only 1 GiB per node)
  spread     (4n1c) four processes at once, one per node, 2 threads each on node n and
             96 MiB first-touched on node (n+1)%4: time until all four are 95% local,
             each one's share at the end
  refill     (4n1c) react to what changed: a process bound to {1,3}, settled on node 3
             (64 MiB), maps 128 MiB more while another process fills node 3, so
             they land on node 1; then the filler exits: time from its exit to 95%
             on node 3 (tests/vm/scenarios/032-refill.py tells the same story). The
             kernel mode's process sets MPOL_F_NUMA_BALANCING (the kernel balances a
             bind only then); the others' a plain bind
  numa02     (2n1c) numa02-like: one process, thread A on node 0 and thread B on node 1,
             each reading random words of its own half of 32 MiB first-touched on
             node 0 (bench/split.c): time until each half is 95% on its thread's node,
             pages migrated against B's misplaced half (ping-pong shows as more). No
             node has most of the process's CPU time, so only page-level evidence
             helps: the guests cannot sample live (TCG), so numabalanced gets the
             host's recording of this workload (--samples, tests/unit/sw-record.c, made
             by scripts/bench) replayed at the software source's default rate, 100
             samples per second of each thread's run time (mode numabalanced), and at
             1,000 (numabalanced-1k); scripts/bench measures that rate's cost to the
             workload on the host (bench/sw-cost.c)
  numa01     (2n1c) numa01-like: two processes, process k on node k, each reading random
             words of its own private 32 MiB and of 32 MiB the two share, all
             first-touched on node 0 (bench/shared.c; bind: each private part bound
             to its node, the shared part interleaved): time until both private
             parts are 95% on their process's node, pages migrated against process
             1's private part (the shared part moving back and forth shows as more),
             where the shared part ends up
  churn      (2n2c) a long-lived 256 MiB process misplaced (touched on node 0, read from
             node 1) in an opted-in cgroup where short-lived processes keep arriving:
             every 0.5 s a 16 MiB misplaced workload that lives 2-3 s and a burst of
             /bin/true; a fixed window for every mode, so that the work (pages
             migrated, CPU) compares
  perfnuma   (2n2c) the kernel's own benchmark, `perf bench numa mem -0 -p 2 -t 2 -P 128
             -s 30 -c` (Debian's linux-perf, /usr/bin/perf): two processes of two threads,
             each process's 128 MiB first-touched on node 0, in the scenario's cgroup.
             perf's own convergence report (its -c marks; without -m, which would end
             the run at the first convergence), and every second each process's busy
             threads' nodes and its anonymous memory per node: whether from 10 s on
             every process stays on one node with 90% of its memory there; locality at
             the end, pages migrated, the daemon's placement counters (run_perfnuma)
  perfnuma-shared (2n2c) numa01-like: -P 64 -G 64, each process's own 64 MiB and 64 MiB
             the two share (perf maps it MAP_SHARED before forking them)
  perfnuma-bound (2n2c) -P 128 under numactl --membind=0, the threads started on node 1
             (perf's -C) and released at once: placed on node 0, no page moved
  tiering    (2n1m-hmat, --kernel 6.12: node 2 is a lower tier there) 320 MiB of base
             pages first-touched on node 0, all moved to the memory-only node 2
             (migratepages), one thread on node 0 reading random words of its first
             64 MiB (bench/hot.c); the rest is never read. Time until 90% of the hot
             part is on a fast node, the cold MiB moved (none wanted), pages migrated
             against the hot part, the kernel's hint faults, the balancer's CPU time.
             numabalanced gets page samples of the hot part replayed (two per page a
             second from node 0's CPU: a sampler that sees every hot page, which the
             guests cannot have live); damon is migrate_hot over node 2's physical
             memory to node 0
  tiering-big (2n1m-hmat, --kernel 6.12) 960 MiB of base pages first-touched in a
             cgroup whose cpuset is node 0's CPU and nodes 0 and 2: more than node 0
             holds, the rest on node 2 (fallback or demotion; demotion_enabled on in
             every mode). Three phases of --limit seconds (20), each reading random
             words of one 64 MiB window picked on node 2 (bench/hotmove.c, moved by
             SIGUSR1). Per phase: time until 90% of the window is on node 0, pages
             promoted and migrated, demoted, hint faults, the daemon's promoted bytes
             and explain's promote-floor skips, node 0's free memory, reads/s; per run
             the cold pages promoted and the balancer's CPU. numabalanced-floor0 is the
             daemon with promote_free_floor_pct and free_floor_pct 0
  tiering-shares (2n1m-hmat, --kernel 6.12) two cgroups with a 50% share of the fast
             tier each: A (480 MiB touched first, reads its first 64 MiB) over its
             share with cold memory, B (480 MiB touched next, reads its last 400 MiB,
             mostly on node 2). Every second for --limit seconds (60): each cgroup's
             MiB on node 0 (memory.numa_stat) and B's hot part on node 0; A's lowest
             and last MiB there against its share, A's hot part on node 0 at the end
  tiering-redis (2n1m-hmat, --kernel 6.12, Debian's redis-server on the host) Redis's
             dataset 1.5 times the 200 MiB idle bystanders (not opted in) leave free on
             node 0, cpuset node 0's CPU and nodes 0 and 2; bench/kvload's Zipf (0.99)
             GETs of 1000-byte values from node 1's CPUs, the hot keys spread over the
             dataset: --limit seconds (60) of warm-up, 60 measured; GETs/s, p50/p99,
             Redis's MiB per node before and after. all-fast: no bystander, the cpuset
             node 0 only: the ratio's denominator
Per run: the local share every 0.1 s (the share of the process's resident memory on the
nodes its threads last ran on, from /proc/PID/numa_maps, as numabalancectl show
computes it), time to 95% local, locality at the end, pages migrated (pgmigrate_success
in /proc/vmstat: the whole guest, which is quiet otherwise), and the balancer's CPU
time: the daemon's (or numad's) own utime+stime, on its service CPU; for the kernel,
the workload's system time beyond the none mode's (the hinting faults and
task_numa_work run in the workload's own threads, on its CPU)."""
import argparse
import contextlib
import json
import os
import platform
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vm"))
import scenario  # noqa: E402

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


DAMON = "/sys/kernel/mm/damon/admin/kdamonds"


def damon_write(rel, value):
    with open(os.path.join(DAMON, rel), "w") as f:
        f.write(str(value))


def node_phys_range(node):
    """[start, end) of node's memory blocks in physical address space."""
    with open("/sys/devices/system/memory/block_size_bytes") as f:
        block = int(f.read(), 16)
    ids = [int(e[len("memory"):]) for e in os.listdir(f"/sys/devices/system/node/node{node}")
           if e.startswith("memory") and e[len("memory"):].isdigit()]
    return min(ids) * block, (max(ids) + 1) * block


def damon_start(src, dst):
    """One kdamond, paddr over node src's memory, migrate_hot to dst: anything accessed
    in an aggregation interval (100 ms: 20 samples of 5 ms) moves, no quota."""
    if not os.path.isdir(DAMON):
        raise scenario.Fail("no DAMON sysfs interface (CONFIG_DAMON_SYSFS, 5.18+)")
    start, end = node_phys_range(src)
    damon_write("nr_kdamonds", 1)
    c = "0/contexts/"
    damon_write(c + "nr_contexts", 1)
    c += "0/"
    damon_write(c + "operations", "paddr")
    for k, v in (("sample_us", 5000), ("aggr_us", 100000), ("update_us", 1000000)):
        damon_write(c + "monitoring_attrs/intervals/" + k, v)
    damon_write(c + "targets/nr_targets", 1)
    damon_write(c + "targets/0/regions/nr_regions", 1)
    damon_write(c + "targets/0/regions/0/start", start)
    damon_write(c + "targets/0/regions/0/end", end)
    damon_write(c + "schemes/nr_schemes", 1)
    sc = c + "schemes/0/"
    if not os.path.exists(os.path.join(DAMON, sc, "target_nid")):
        raise scenario.Fail("DAMON without target_nid (migrate_hot needs 6.11+)")
    damon_write(sc + "action", "migrate_hot")
    damon_write(sc + "target_nid", dst)
    for k, lo, hi in (("sz", 4096, 2 ** 63), ("nr_accesses", 1, 2 ** 32 - 1), ("age", 0, 2 ** 32 - 1)):
        damon_write(sc + f"access_pattern/{k}/min", lo)
        damon_write(sc + f"access_pattern/{k}/max", hi)
    damon_write("0/state", "on")


def damon_available():
    """Whether this kernel has DAMON's sysfs interface with migrate_hot (6.11+): the
    action is listed in its documentation only, so a scheme is made and looked at."""
    if not os.path.isdir(DAMON):
        return False
    try:
        damon_write("nr_kdamonds", 1)
        damon_write("0/contexts/nr_contexts", 1)
        damon_write("0/contexts/0/schemes/nr_schemes", 1)
        ok = os.path.exists(os.path.join(DAMON, "0/contexts/0/schemes/0/target_nid"))
        damon_write("nr_kdamonds", 0)
        return ok
    except OSError:
        return False


def damon_stop():
    """Turns the kdamond off; returns its scheme's stats (bytes tried and applied)."""
    stats = {}
    try:
        damon_write("0/state", "update_schemes_stats")
        d = os.path.join(DAMON, "0/contexts/0/schemes/0/stats")
        stats = {k: int(open(os.path.join(d, k)).read()) for k in os.listdir(d)}
    except OSError:
        pass
    damon_write("0/state", "off")
    # Gone, not just off: a kdamond left behind is another tool's to the daemon, which
    # then leaves DAMON alone (nr_kdamonds not 0), and the daemon's runs after a damon
    # run in the same boot ran without DAMON's evidence.
    damon_write("nr_kdamonds", 0)
    return stats


def kdamond_cpu_s():
    """The kdamond threads' utime + stime (its CPU time: any CPU, the workload's too)."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if open(f"/proc/{pid}/comm").read().startswith("kdamond"):
                    total += sum(cpu_s(int(pid)))
            except OSError:
                pass
    return total


class Balancer:
    """Starts and stops one mode's balancer; says whose CPU time is the balancer's."""

    def __init__(self, env, mode, conf="", damon_nodes=(0, 1)):
        self.env, self.mode, self.pid, self.conf = env, mode, None, conf
        self.cgroup_name = None   # until start(): a run that failed before has no log to keep
        self.damon_nodes = damon_nodes
        self.daemon = mode.startswith("numabalanced")
        # The cgroup's mode (its trusted.numabalanced): named by the bench mode for
        # the perfnuma scenarios (numabalanced-place, numabalanced-balance), balance
        # for every other daemon mode.
        self.cgroup_mode = DAEMON_CGROUP_MODES.get(mode, "balance") if self.daemon else None
        if mode == "numabalanced-walk":
            # The daemon reading numa_maps at every scan, as it did before huge_vma.
            self.conf += "[sample]\nhuge_vma = 0\n"

    def start(self, cgroup_name):
        self.cgroup_name = cgroup_name
        scenario.sysctl_numa_balancing({"kernel": 1, "kernel-tiering": 2}.get(self.mode, 0))
        cg = self.env.cgroup(cgroup_name, self.cgroup_mode)
        if self.daemon:
            # As shipped: its timing and log level (its moves and decisions are logged at info).
            self.env.start_daemon(shipped_timing=True, service_cpus=SERVICE_CPUS, extra_conf=self.conf,
                                  log_level=os.environ.get("NUMABALANCED_BENCH_LOG", "info"))
            self.pid = self.env.daemon.pid
            # Its start-up (loading the BPF programs) is not balancing: let it pass.
            time.sleep(2)
        elif self.mode == "damon":
            damon_start(*self.damon_nodes)
        elif self.mode == "numad":
            subprocess.run(["numad", "-i", "5:15"], check=True)
            for _ in range(50):
                self.pid = pidof("numad")
                if self.pid:
                    break
                time.sleep(0.1)
        return cg

    def cpu(self):
        if self.mode == "damon":
            return kdamond_cpu_s()
        return sum(cpu_s(self.pid)) if self.pid else 0.0

    def stop(self):
        """Ends the run: its processes (env.cleanup), then the balancer."""
        self.env.cleanup()
        if self.daemon:
            self.env.stop_daemon()
        elif self.mode == "damon":
            self.damon_stats = damon_stop()
        elif self.mode == "numad":
            subprocess.run(["numad", "-i", "0"], capture_output=True)
            for _ in range(100):
                if not pidof("numad"):
                    break
                time.sleep(0.1)
        scenario.sysctl_numa_balancing(0)
        self.env.daemon_log = None
        if self.daemon and self.cgroup_name and getattr(self.env, "last_log", None):
            # The daemon's log of this run, into the results directory (scripts/bench
            # moves it to build-bench/logs/): its moves are what explains a result.
            name = f"{self.cgroup_name}.{self.mode}.{time.strftime('%H%M%S')}.daemon.log"
            with open(os.path.join(self.env.out, name), "w") as f:
                f.write(self.env.last_log)


def wait_ready(p, ready, what, timeout=120, poll=0.1):
    """Waits for process p's ready file; a scenario.Fail if p exits or the time runs out."""
    deadline = time.time() + timeout
    while not os.path.exists(ready):
        if p.poll() is not None:
            raise scenario.Fail(f"{what} exited: {p.stderr.read().decode()}")
        if time.time() > deadline:
            raise scenario.Fail(f"{what} did not get ready")
        time.sleep(poll)


def start_workload(env, mode, cg, size_mb, touch, run, policy):
    if mode == "bind":
        # The ideal: memory and threads on the run node from the first touch.
        wl = [env.workload, str(size_mb), str(run), str(run), policy, "1", "", "system"]
        ready = f"/tmp/bench.ready.{time.time_ns()}"
        wl[6] = ready
        p = subprocess.Popen(["numactl", f"--cpunodebind={run}", f"--membind={run}"] + wl,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        env.procs.append(p)
        wait_ready(p, ready, "workload")
        return p
    p, _, _ = env.start_workload(cg, size_mb, touch, run, policy=policy)
    return p


def follow(env, pid, limit_s, t0=None):
    """The local share every 0.1 s until limit_s, or DONE_AFTER_S after 95%; returns
    (timeline, seconds to 95% or None). Polled by bench/locality-poll (C): the same
    poll in Python cost 9.8% of a guest CPU, taken from whichever balancer shared a
    CPU with it (see that file)."""
    t0 = t0 or time.time()
    r = subprocess.run([os.path.join(env.build, "bench", "locality-poll"), str(pid), repr(t0), "100",
                        str(limit_s), str(DONE_AFTER_S)], capture_output=True, text=True, check=True)
    timeline = [(round(float(t), 2), float(share)) for t, share in (line.split() for line in r.stdout.splitlines())]
    t95 = next((t for t, share in timeline if share >= 0.95), None)
    return timeline, t95


def follow_all(pids, limit_s, t0, interval=0.1):
    """follow() for several processes at once: returns (timeline of the lowest share,
    seconds until every one is 95% local or None, each one's last share)."""
    timeline, t95, last = [], None, {}
    while True:
        t = time.time() - t0
        try:
            for pid in pids:
                last[pid] = scenario.local_share_direct(pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        low = min(last.values())
        timeline.append((round(t, 2), round(low, 4)))
        if t95 is None and low >= 0.95:
            t95 = t
        if t > limit_s or (t95 is not None and t > t95 + DONE_AFTER_S):
            break
        time.sleep(interval)
    return timeline, t95, [round(last.get(pid, 0.0), 4) for pid in pids]


def cgroup_cpu_s(cg):
    """user, system seconds of everything that ran in cg (cpu.stat is there without
    the cpu controller): the short-lived processes' as well, which are gone by the end."""
    out = {}
    with open(os.path.join(cg, "cpu.stat")) as f:
        for line in f:
            k, v = line.split()
            out[k] = int(v)
    return out["user_usec"] / 1e6, out["system_usec"] / 1e6


def with_where(res, mode, kernel_where):
    """res with whose CPU time the balancer's is, for the tables."""
    if mode == "numabalanced":
        res["cpu_where"] = ("daemon, service CPU 0 (node 0)" if SERVICE_CPUS == "0"
                            else f"daemon, service CPUs {SERVICE_CPUS}")
    elif mode == "numad":
        res["cpu_where"] = "numad, any CPU"
    elif mode == "damon":
        res["cpu_where"] = "kdamond, any CPU"
    elif mode in ("kernel", "kernel-tiering"):
        res["cpu_where"] = kernel_where
    return res


SYS_move_pages = 279  # x86-64


def range_nodes(pid, start, length):
    """Pages per node of [start, start + length) in pid, by move_pages(2) queries."""
    import ctypes
    page = os.sysconf("SC_PAGESIZE")
    n = length // page
    pages = (ctypes.c_void_p * n)(*[start + i * page for i in range(n)])
    status = (ctypes.c_int * n)()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_move_pages, ctypes.c_int(pid), ctypes.c_ulong(n), pages, None, status, ctypes.c_int(0)) < 0:
        raise scenario.Fail(f"move_pages query failed: errno {ctypes.get_errno()}")
    out = {}
    for s in status:
        out[s] = out.get(s, 0) + 1
    return out


class HotSamples(threading.Thread):
    """numabalanced's page samples in the tiering scenario: two samples of every page of
    the hot part from node 0's CPU 0, a round a second, appended to the replay file (a
    sampler that sees every hot page: the guests have no PMU, and the software source
    refuses TCG)."""

    def __init__(self, path, pid, start, hot_bytes):
        super().__init__(daemon=True)
        page = os.sysconf("SC_PAGESIZE")
        self.path, self.stop_event = path, threading.Event()
        self.pages = [f"{pid} 0 {start + i * page + 64:#x}\n" for i in range(hot_bytes // page)]
        self.rounds, self.next = 0, 0

    def add(self, other):
        self.pages += other.pages

    def run(self):
        # At most HOTSAMPLES_PAGES pages a round, two samples each, the next ones the
        # round after: about the 1 MiB a drain of the daemon's takes (sample-replay.h),
        # where all 118k pages of tiering-shares' two hot parts wrote 7 MiB a second
        # into the guest's tmpfs, 1 GiB a run (memory pressure, and one run OOM-killed).
        while not self.stop_event.is_set():
            part = self.pages[self.next:self.next + HOTSAMPLES_PAGES]
            self.next = (self.next + len(part)) % max(1, len(self.pages))
            with open(self.path, "a") as f:
                f.write("".join(part) * 2)
            self.rounds += 1
            self.stop_event.wait(1)


class PageWatch(threading.Thread):
    """Where each page of [start, start + length) in pid is, every PAGEWATCH_S seconds:
    pages whose node changed twice within PAGEWATCH_COOLDOWN_S of each other (moved
    and moved back, or on again: by anyone, the kernel's reclaim included) and pages
    that changed at all. A sampled view: a page moved and back between two looks is
    not seen."""

    def __init__(self, pid, start, length):
        super().__init__(daemon=True)
        import ctypes
        self.ctypes, self.pid, self.stop_event = ctypes, pid, threading.Event()
        page = os.sysconf("SC_PAGESIZE")
        self.n = length // page
        self.pages = (ctypes.c_void_p * self.n)(*range(start, start + self.n * page, page))
        self.status = (ctypes.c_int * self.n)()
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.last, self.changed_at = None, {}
        self.twice, self.moved, self.looks = set(), set(), 0

    def look(self):
        c = self.ctypes
        if self.libc.syscall(SYS_move_pages, c.c_int(self.pid), c.c_ulong(self.n), self.pages, None, self.status,
                             c.c_int(0)) < 0:
            return
        now, cur = time.time(), bytes(x if 0 <= x < 255 else 255 for x in self.status)
        if self.last is not None:
            for i in (i for i in range(self.n) if cur[i] != self.last[i] and cur[i] != 255 and self.last[i] != 255):
                t = self.changed_at.get(i)
                if t is not None and now - t <= PAGEWATCH_COOLDOWN_S:
                    self.twice.add(i)
                self.changed_at[i] = now
                self.moved.add(i)
        self.last, self.looks = cur, self.looks + 1

    def run(self):
        while not self.stop_event.is_set():
            self.look()
            self.stop_event.wait(PAGEWATCH_S)

    def result(self):
        page = os.sysconf("SC_PAGESIZE")
        return {"pages_moved_twice_within_cooldown": len(self.twice),
                "mib_moved": round(len(self.moved) * page / 2**20, 1), "looks": self.looks,
                "look_every_s": PAGEWATCH_S, "cooldown_s": PAGEWATCH_COOLDOWN_S}


def run_tiering(env, mode, size_mb, hot_mb, limit_s):
    """tiering: one run of one mode. The workload (bench/hot) is moved whole to the slow
    node 2, then the balancer starts (the kernel's and DAMON's would pull pages back
    while migratepages runs); the clock starts when it has."""
    replay = env.tmp_path("tiering.replay")
    open(replay, "w").close()
    conf = f"[sample]\npmu = replay\nreplay_path = {replay}\n" if mode == "numabalanced" else ""
    b = Balancer(env, mode, conf=conf, damon_nodes=(2, 0))
    scenario.sysctl_numa_balancing(0)
    cg = env.cgroup("bench-tiering")
    feeder = None
    try:
        ready = env.tmp_path(f"hot.ready.{time.time_ns()}")

        def enter():
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        p = subprocess.Popen([os.path.join(env.build, "bench", "hot"), str(size_mb), str(hot_mb), ready],
                             preexec_fn=enter, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        env.procs.append(p)
        wait_ready(p, ready, "hot")
        pid, start, length = open(ready).read().split()
        pid, start, length = int(pid), int(start, 16), int(length)
        subprocess.run(["migratepages", str(pid), "0", "2"], check=True)
        hot_b, page = hot_mb << 20, os.sysconf("SC_PAGESIZE")
        on2 = range_nodes(pid, start, length).get(2, 0) * page
        if on2 < length * 0.99:
            raise scenario.Fail(f"migratepages left {on2 >> 20} MiB of {size_mb} on node 2")
        b.start("bench-tiering")   # the same cgroup, opted in for the daemon
        env.cgroups = list(dict.fromkeys(env.cgroups))
        keys = ("pgmigrate_success", "numa_hint_faults", "pgpromote_success", "pgdemote_kswapd")
        v0, c0, (u0, s0) = {k: vmstat(k) for k in keys}, b.cpu(), cpu_s(pid)
        t0 = time.time()
        if mode == "numabalanced":
            feeder = HotSamples(replay, pid, start, hot_b)
            feeder.start()
        timeline, t90, done_at = [], None, None
        while time.time() - t0 < limit_s:
            hot = range_nodes(pid, start, hot_b)
            fast = (hot.get(0, 0) + hot.get(1, 0)) * page / hot_b
            timeline.append((round(time.time() - t0, 2), round(fast, 4)))
            if t90 is None and fast >= 0.9:
                t90, done_at = time.time() - t0, time.time() + DONE_AFTER_S
            if done_at and time.time() >= done_at:
                break
            time.sleep(0.5)
        cold = range_nodes(pid, start + hot_b, length - hot_b)
        u1, s1 = cpu_s(pid)
        v1 = {k: vmstat(k) for k in keys}
        res = {
            "t90_s": round(t90, 2) if t90 is not None else None,
            "hot_fast_end": timeline[-1][1] if timeline else None,
            "cold_moved_mib": round((length - hot_b) / 2**20 - cold.get(2, 0) * page / 2**20, 2),
            "migrated_pages": v1["pgmigrate_success"] - v0["pgmigrate_success"],
            "hot_pages": hot_b // page,
            "hint_faults": v1["numa_hint_faults"] - v0["numa_hint_faults"],
            "kernel_promoted_pages": v1["pgpromote_success"] - v0["pgpromote_success"],
            "demoted_pages": v1["pgdemote_kswapd"] - v0["pgdemote_kswapd"],
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "workload_sys_s": round(s1 - s0, 3),
            "workload_user_s": round(u1 - u0, 3),
            "seconds": round(time.time() - t0, 2),
            "timeline": timeline,
        }
        if feeder:
            res["sample_rounds"] = feeder.rounds
        p.terminate()
        try:
            out, _ = p.communicate(timeout=10)
            res["reads_per_s"] = json.loads(out.decode().strip().splitlines()[-1])["reads_per_s"]
        except (subprocess.TimeoutExpired, ValueError, IndexError, KeyError):
            pass
        return with_where(res, mode, "the workload's own thread (node 0)")
    finally:
        if feeder:
            feeder.stop_event.set()
        b.stop()


def range_status(pid, start, length):
    """The node of each page of [start, start + length) in pid (move_pages(2) queries),
    as a bytes object (negative errnos, pages not present, as 255)."""
    import ctypes
    page = os.sysconf("SC_PAGESIZE")
    n = length // page
    pages = (ctypes.c_void_p * n)(*range(start, start + n * page, page))
    status = (ctypes.c_int * n)()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_move_pages, ctypes.c_int(pid), ctypes.c_ulong(n), pages, None, status, ctypes.c_int(0)) < 0:
        raise scenario.Fail(f"move_pages query failed: errno {ctypes.get_errno()}")
    return bytes(s if 0 <= s < 255 else 255 for s in status)


def node_meminfo_mb(node, key):
    with open(f"/sys/devices/system/node/node{node}/meminfo") as f:
        for line in f:
            if f" {key}:" in line:
                return int(line.split()[-2]) // 1024
    return 0


def prom_metric(path, name):
    try:
        for line in open(path):
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
    except OSError:
        pass
    return None


def pick_windows(status, hot_pages, count):
    """count window indexes (of hot_pages each) whose pages are most on node 2, spread
    over the candidates at least 90% there (or the best ones if fewer are)."""
    shares = []
    for w in range(len(status) // hot_pages):
        part = status[w * hot_pages:(w + 1) * hot_pages]
        shares.append((part.count(2) / hot_pages, w))
    good = sorted(w for s, w in shares if s >= 0.9)
    if len(good) >= count:
        step = len(good) / count
        return [good[int(i * step)] for i in range(count)], dict((w, round(s, 4)) for s, w in shares)
    best = sorted(shares, reverse=True)[:count]
    return sorted(w for _, w in best), dict((w, round(s, 4)) for s, w in shares)


TIERBIG_KEYS = ("pgpromote_success", "pgmigrate_success", "pgdemote_kswapd", "pgdemote_direct",
                "numa_hint_faults", "numa_pages_migrated")


def run_tiering_big(env, mode, size_mb, hot_mb, phase_s, phases=3):
    """tiering-big: one run of one mode. bench/hotmove's size_mb in a cgroup whose cpuset
    holds node 0's CPU and nodes 0 and 2: more than node 0 has, so the rest lands on
    node 2 (fallback, or kswapd's demotion). Then phases windows of hot_mb, each mostly
    on node 2 once touched, read one after the other for phase_s each."""
    replay, metrics = env.tmp_path("tierbig.replay"), env.tmp_path("tierbig.prom")
    open(replay, "w").close()
    conf = ""
    if mode.startswith("numabalanced"):
        conf = f"[sample]\npmu = replay\nreplay_path = {replay}\n[report]\nmetrics_path = {metrics}\n"
        conf += TIERBIG_CONF.get(mode, "")
    b = Balancer(env, mode, conf=conf, damon_nodes=(2, 0))
    scenario.sysctl_numa_balancing(0)
    demotion = "/sys/kernel/mm/numa/demotion_enabled"
    with open(demotion, "w") as f:
        f.write("true")
    cpu0 = scenario.node_cpus(0).split(",")[0].split("-")[0]
    cg = env.cgroup("bench-tierbig", mems="0,2", cpus=cpu0)
    feeder = None
    try:
        ready, window = env.tmp_path(f"hotmove.ready.{time.time_ns()}"), env.tmp_path("hotmove.window")

        def enter():
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        t_touch = time.time()
        p = subprocess.Popen([os.path.join(env.build, "bench", "hotmove"), str(size_mb), str(hot_mb), ready, window],
                             preexec_fn=enter, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        env.procs.append(p)
        wait_ready(p, ready, "hotmove", timeout=600)
        touch_s = time.time() - t_touch
        pid, start, length = open(ready).read().split()
        pid, start, length = int(pid), int(start, 16), int(length)
        page = os.sysconf("SC_PAGESIZE")
        hot_b = hot_mb << 20
        hot_pages = hot_b // page
        time.sleep(2)   # kswapd's demotion after the touch settles
        before = range_status(pid, start, length)
        wins, shares = pick_windows(before, hot_pages, phases)
        res = {"touch_s": round(touch_s, 1), "demotion_enabled": open(demotion).read().strip(),
               "mib_by_node_start": {n: round(before.count(n) * page / 2**20, 1) for n in (0, 1, 2)},
               "windows_mib": [w * hot_mb for w in wins],
               "window_share_on_2_start": [shares[w] for w in wins],
               "node0_total_mb": node_meminfo_mb(0, "MemTotal"), "phases": []}
        b.start("bench-tierbig")   # the same cgroup, opted in for the daemon
        env.cgroups = list(dict.fromkeys(env.cgroups))
        # Every balancer has run a while before the first window moves, as on a host
        # where it runs all along: the daemon's exchange needs memory DAMON has seen
        # idle for cold_age_ms (10 s) before it can call it cold.
        time.sleep(TIERBIG_WARMUP_S)
        c0, (u0, s0) = b.cpu(), cpu_s(pid)
        t_all = time.time()
        watch = PageWatch(pid, start, length)
        watch.start()
        for w in wins:
            wstart = start + w * hot_b
            with open(window, "w") as f:
                f.write(f"{w * hot_mb}\n")
            v0, m0 = {k: vmstat(k) for k in TIERBIG_KEYS}, prom_metric(metrics, "numabalanced_promoted_bytes_total")
            pc0 = b.cpu()
            os.kill(pid, signal.SIGUSR1)
            t0 = time.time()
            if mode.startswith("numabalanced"):
                feeder = HotSamples(replay, pid, wstart, hot_b)
                feeder.start()
            timeline, free0, t90, floor_skip, last_explain = [], [], None, 0, 0.0
            while time.time() - t0 < phase_s:
                hot = range_nodes(pid, wstart, hot_b)
                fast = (hot.get(0, 0) + hot.get(1, 0)) / hot_pages
                t = round(time.time() - t0, 2)
                timeline.append((t, round(fast, 4)))
                free0.append((t, node_meminfo_mb(0, "MemFree")))
                if t90 is None and fast >= 0.9:
                    t90 = t
                if b.daemon and time.time() - last_explain >= 3:
                    last_explain = time.time()
                    r = subprocess.run([env.ctl, "explain", "--json", str(pid)], capture_output=True, text=True,
                                       timeout=30)
                    with contextlib.suppress(ValueError):
                        why = json.loads(r.stdout)
                        floor_skip = max(floor_skip, (why.get("skipped_bytes") or {}).get("promote-floor", 0))
                time.sleep(0.5)
            if feeder:
                feeder.stop_event.set()
                feeder.join()
                feeder = None
            v1, m1 = {k: vmstat(k) for k in TIERBIG_KEYS}, prom_metric(metrics, "numabalanced_promoted_bytes_total")
            ph = {"window_mib": w * hot_mb, "t90_s": t90, "fast_start": timeline[0][1] if timeline else None,
                  "fast_end": timeline[-1][1] if timeline else None,
                  "vmstat": {k: v1[k] - v0[k] for k in TIERBIG_KEYS},
                  "balancer_cpu_s": round(b.cpu() - pc0, 3),
                  "node0_free_mb_min": min(f for _, f in free0) if free0 else None,
                  "node0_free_mb_max": max(f for _, f in free0) if free0 else None,
                  "node0_free_mb": free0[::4], "timeline": timeline[::2]}
            if b.daemon:
                ph["daemon_promoted_bytes"] = (m1 or 0) - (m0 or 0) if m1 is not None else None
                ph["explain_promote_floor_skipped_mb"] = round(floor_skip / 2**20, 1)
            res["phases"].append(ph)
        watch.stop_event.set()
        watch.join()
        res["page_watch"] = watch.result()
        after = range_status(pid, start, length)
        inwin = set()
        for w in wins:
            inwin.update(range(w * hot_pages, (w + 1) * hot_pages))
        cold_up = cold_down = cold_up_near = 0
        cold_up_where = {}   # 16 MiB chunk (offset >> 24) -> cold pages promoted there
        near = (4 << 20) // page   # pages within 4 MiB of a window: DAMON's region edges
        for i in range(len(before)):
            if i in inwin:
                continue
            if before[i] == 2 and after[i] in (0, 1):
                cold_up += 1
                cold_up_near += any(w * hot_pages - near <= i < (w + 1) * hot_pages + near for w in wins)
                chunk = i * page >> 24
                cold_up_where[chunk] = cold_up_where.get(chunk, 0) + 1
            elif before[i] in (0, 1) and after[i] == 2:
                cold_down += 1
        u1, s1 = cpu_s(pid)
        res.update({"cold_promoted_mib": round(cold_up * page / 2**20, 2),
                    "cold_promoted_near_window_mib": round(cold_up_near * page / 2**20, 2),
                    "cold_promoted_pages_by_16mib": {str(k * 16): v for k, v in sorted(cold_up_where.items())},
                    "cold_demoted_mib": round(cold_down * page / 2**20, 2),
                    "mib_by_node_end": {n: round(after.count(n) * page / 2**20, 1) for n in (0, 1, 2)},
                    "balancer_cpu_s": round(b.cpu() - c0, 3), "workload_sys_s": round(s1 - s0, 3),
                    "workload_user_s": round(u1 - u0, 3), "seconds": round(time.time() - t_all, 1)})
        if b.daemon:
            st = subprocess.run([env.ctl, "status", "--json"], capture_output=True, text=True, timeout=30)
            res["status_tail"] = st.stdout[-1500:]
        p.terminate()
        try:
            out, _ = p.communicate(timeout=10)
            rates = [json.loads(x) for x in out.decode().splitlines() if x.startswith("{")]
            rates = [r["reads_per_s"] for r in rates if "reads_per_s" in r]
            for ph, r in zip(res["phases"], rates):
                ph["reads_per_s"] = r
        except (subprocess.TimeoutExpired, ValueError, KeyError):
            pass
        return with_where(res, "numabalanced" if b.daemon else mode, "the workload's own thread (node 0)")
    finally:
        if feeder:
            feeder.stop_event.set()
        b.stop()


def cgroup_node_mb(cg, node):
    """A cgroup's anon and file MiB on node (memory.numa_stat)."""
    total = 0
    with open(os.path.join(cg, "memory.numa_stat")) as f:
        for line in f:
            key, *toks = line.split()
            if key in ("anon", "file"):
                for t in toks:
                    if t.startswith(f"N{node}="):
                        total += int(t.split("=")[1])
    return round(total / 2**20, 1)


def run_tiering_shares(env, mode, limit_s):
    """tiering-shares: two cgroups, each with a share of 50% of the fast tier
    (trusted.numabalanced.fast_share, set by root; only the daemon reads it), compete
    for node 0. A (TIERSHARE_A_MB, touched first: nearly all on node 0) reads only its
    first 64 MiB, so it is over its share with cold memory; B (TIERSHARE_B_MB, touched
    next: its first part on node 0, the rest on node 2) reads its last
    TIERSHARE_B_HOT_MB, most of it on node 2, more than A holds above its share. Every
    second for limit_s: each cgroup's MiB on node 0 (memory.numa_stat) and B's hot
    part's share on node 0."""
    replay, metrics = env.tmp_path("tiershare.replay"), env.tmp_path("tiershare.prom")
    open(replay, "w").close()
    conf = ""
    if mode.startswith("numabalanced"):
        conf = f"[sample]\npmu = replay\nreplay_path = {replay}\n[report]\nmetrics_path = {metrics}\n"
    b = Balancer(env, mode, conf=conf, damon_nodes=(2, 0))
    scenario.sysctl_numa_balancing(0)
    with open("/sys/kernel/mm/numa/demotion_enabled", "w") as f:
        f.write("true")
    cpu0 = scenario.node_cpus(0).split(",")[0].split("-")[0]
    with open(os.path.join(scenario.CG, "cgroup.subtree_control"), "w") as f:
        f.write("+memory")   # memory.numa_stat: what each holds, for the daemon and here
    cgs = {n: env.cgroup(f"bench-share-{n}", mems="0,2", cpus=cpu0) for n in ("a", "b")}
    for cg in cgs.values():
        os.setxattr(cg, "trusted.numabalanced.fast_share", f"{TIERSHARE_PCT}%".encode())
    feeder, procs = None, {}
    try:
        t_all = time.time()
        for n, size, hot, off in (("a", TIERSHARE_A_MB, 64, 0),
                                  ("b", TIERSHARE_B_MB, TIERSHARE_B_HOT_MB, TIERSHARE_B_MB - TIERSHARE_B_HOT_MB)):
            ready, window = env.tmp_path(f"share.{n}.ready.{time.time_ns()}"), env.tmp_path(f"share.{n}.window")
            with open(window, "w") as f:
                f.write(f"{off}\n")

            def enter(cg=cgs[n]):
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
            p = subprocess.Popen([os.path.join(env.build, "bench", "hotmove"), str(size), str(hot), ready, window],
                                 preexec_fn=enter, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            env.procs.append(p)
            wait_ready(p, ready, "hotmove", timeout=600)
            pid, start, _ = open(ready).read().split()
            procs[n] = (p, int(pid), int(start, 16) + (off << 20), hot << 20)
        time.sleep(2)   # kswapd's demotion after the touch settles
        node0_mb = node_meminfo_mb(0, "MemTotal")
        share_mb = round(node0_mb * TIERSHARE_PCT / 100, 1)
        res = {"node0_total_mb": node0_mb, "share_mb": share_mb, "touch_s": round(time.time() - t_all, 1),
               "fast_mb_start": {n: cgroup_node_mb(cg, 0) for n, cg in cgs.items()},
               "b_hot_on_0_start": None, "timeline": []}
        _, bpid, bstart, bhot = procs["b"]
        _, apid, astart, ahot = procs["a"]
        res["b_hot_on_0_start"] = round(range_nodes(bpid, bstart, bhot).get(0, 0) * 4096 / bhot, 3)
        res["a_hot_on_0_start"] = round(range_nodes(apid, astart, ahot).get(0, 0) * 4096 / ahot, 3)
        b.start("bench-share-a")
        if b.daemon:
            env.set_mode(cgs["b"], b.cgroup_mode)
        env.cgroups = list(dict.fromkeys(env.cgroups))
        for _, pid, _, _ in procs.values():
            os.kill(pid, signal.SIGUSR1)   # each reads its window from now on
        if mode.startswith("numabalanced"):
            feeder = HotSamples(replay, procs["a"][1], procs["a"][2], procs["a"][3])
            feeder.add(HotSamples(replay, bpid, bstart, bhot))
            feeder.start()
        c0, v0 = b.cpu(), {k: vmstat(k) for k in TIERBIG_KEYS}
        t0 = time.time()
        while time.time() - t0 < limit_s:
            t = round(time.time() - t0, 1)
            fast = {n: cgroup_node_mb(cg, 0) for n, cg in cgs.items()}
            hot0 = range_nodes(bpid, bstart, bhot).get(0, 0) * 4096 / bhot
            res["timeline"].append((t, fast["a"], fast["b"], round(hot0, 3)))
            time.sleep(1)
        end = res["timeline"][-1]
        res.update({"fast_mb_end": {"a": end[1], "b": end[2]}, "b_hot_on_0_end": end[3],
                    "a_hot_on_0_end": round(range_nodes(apid, astart, ahot).get(0, 0) * 4096 / ahot, 3),
                    "a_lowest_mb": min(x[1] for x in res["timeline"]),
                    "a_end_vs_share_pct": round(100 * end[1] / share_mb, 1),
                    "b_end_vs_share_pct": round(100 * end[2] / share_mb, 1),
                    "vmstat": {k: vmstat(k) - v0[k] for k in TIERBIG_KEYS},
                    "balancer_cpu_s": round(b.cpu() - c0, 3), "seconds": round(time.time() - t_all, 1)})
        if b.daemon:
            res["daemon_demoted_bytes"] = prom_metric(metrics, "numabalanced_demoted_bytes_total")
            res["daemon_promoted_bytes"] = prom_metric(metrics, "numabalanced_promoted_bytes_total")
        for p, _, _, _ in procs.values():
            p.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.communicate(timeout=10)
        return with_where(res, "numabalanced" if b.daemon else mode, "the workloads' own thread (node 0)")
    finally:
        if feeder:
            feeder.stop_event.set()
        b.stop()


def numa_maps_mb(pid):
    """pid's MiB per node, all its mappings (numa_maps' N<node>= counts)."""
    mb = {}
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            psize = 4
            for field in line.split():
                if field.startswith("kernelpagesize_kB="):
                    psize = int(field.split("=")[1])
            for field in line.split():
                if field.startswith("N") and "=" in field:
                    node, pages = field[1:].split("=")
                    mb[int(node)] = mb.get(int(node), 0) + int(pages) * psize / 1024
    return {n: round(v, 1) for n, v in sorted(mb.items())}


def redis_cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *map(str, args)], capture_output=True, text=True,
                          check=True, timeout=600).stdout.strip()


def redis_populate(port, target_mb):
    """Keys "key:0".. of REDIS_VALUE_B bytes until Redis uses target_mb (INFO's
    used_memory); returns how many keys."""
    keys = 0
    while True:
        used = int(re.search(r"used_memory:(\d+)", redis_cli(port, "INFO", "memory")).group(1))
        if used >= target_mb << 20:
            return keys
        keys += max(1000, int(((target_mb << 20) - used) / (REDIS_VALUE_B * 1.5)))
        redis_cli(port, "DEBUG", "POPULATE", keys, "key", REDIS_VALUE_B)


def redis_room(env, cpu0):
    """Fills node 0 until REDIS_ROOM_MB (within 8 MiB) is free: idle bystanders (bench/
    hotmove, never told a window: they touch their memory and sleep), not opted in, so
    that every mode starts with as much of Redis on node 0 (memory comes back after a
    fill; one fill left 183 to 226 MiB free in four runs). Returns each reading."""
    by_cg = env.cgroup("bench-redis-bystander", mems="0", cpus=cpu0)
    readings = []

    def enter():
        with open(os.path.join(by_cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    for _ in range(4):
        free = scenario.load("promote").settled_free_mb(0)
        readings.append(free)
        if free <= REDIS_ROOM_MB + 8:
            break
        ready = env.tmp_path(f"redis-bystander.ready.{time.time_ns()}")
        p = subprocess.Popen([os.path.join(env.build, "bench", "hotmove"), str(free - REDIS_ROOM_MB), "1", ready,
                              ready + ".no-window"], preexec_fn=enter, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        env.procs.append(p)
        wait_ready(p, ready, "bystander", timeout=600)
    return readings


def run_tiering_redis(env, mode, limit_s):
    """tiering-redis: Debian's redis-server, its dataset REDIS_RATIO times the room a
    bystander (not opted in) leaves on node 0, in a cgroup whose cpuset holds node 0's
    CPU and nodes 0 and 2: the rest lands on node 2. Then bench/kvload's Zipf-skewed
    GETs from node 1's CPUs, hot keys spread over the whole dataset, limit_s to warm up
    (the balancer at work), REDIS_MEASURE_S measured. all-fast: no bystander, the
    cpuset node 0 only, the dataset all on node 0 (the ratio's denominator)."""
    fast_only = mode == "all-fast"
    b = Balancer(env, mode, damon_nodes=(2, 0))
    scenario.sysctl_numa_balancing(0)
    with open("/sys/kernel/mm/numa/demotion_enabled", "w") as f:
        f.write("true")
    cpu0 = scenario.node_cpus(0).split(",")[0].split("-")[0]
    cg = env.cgroup("bench-redis", mems="0" if fast_only else "0,2", cpus=cpu0)
    port, data = 6391, env.tmp_path(f"redis.{time.time_ns()}")
    os.makedirs(data)
    try:
        t_all, res = time.time(), {"room_mb": REDIS_ROOM_MB, "dataset_mb": REDIS_ROOM_MB * REDIS_RATIO}
        if not fast_only:
            res["node0_free_mb_before_each_fill"] = redis_room(env, cpu0)
            res["node0_free_mb_before_redis"] = scenario.node_free_mb(0)

        def enter():
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--enable-debug-command", "yes", "--dir", data,
                              "--protected-mode", "no"], preexec_fn=enter, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        env.procs.append(p)
        for _ in range(300):
            if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True, text=True).stdout.strip() == "PONG":
                break
            if p.poll() is not None:
                raise scenario.Fail(f"redis-server exited: {p.stderr.read().decode()}")
            time.sleep(0.2)
        res["keys"] = redis_populate(port, int(REDIS_ROOM_MB * REDIS_RATIO))
        res["populate_s"] = round(time.time() - t_all, 1)
        time.sleep(2)   # kswapd's demotion after the fill settles
        res["redis_mb_by_node_start"] = numa_maps_mb(p.pid)
        b.start("bench-redis")
        env.cgroups = list(dict.fromkeys(env.cgroups))
        c0, v0 = b.cpu(), {k: vmstat(k) for k in TIERBIG_KEYS}
        node1_cpus = scenario.node_cpus(1)
        load = subprocess.run(["numactl", f"--physcpubind={node1_cpus}", "--membind=1",
                               os.path.join(env.build, "bench", "kvload"), str(port), str(res["keys"]),
                               str(REDIS_ZIPF_S), str(REDIS_CLIENTS), str(limit_s), str(REDIS_MEASURE_S)],
                              capture_output=True, text=True, timeout=limit_s + REDIS_MEASURE_S + 120)
        if load.returncode != 0:
            raise scenario.Fail(f"kvload: {load.stderr.strip()}")
        res.update(json.loads(load.stdout))
        res.update({"redis_mb_by_node_end": numa_maps_mb(p.pid),
                    "vmstat": {k: vmstat(k) - v0[k] for k in TIERBIG_KEYS},
                    "balancer_cpu_s": round(b.cpu() - c0, 3), "warm_s": limit_s, "measure_s": REDIS_MEASURE_S,
                    "seconds": round(time.time() - t_all, 1)})
        subprocess.run(["redis-cli", "-p", str(port), "SHUTDOWN", "NOSAVE"], capture_output=True, timeout=60)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.communicate(timeout=30)
        return with_where(res, "numabalanced" if b.daemon else mode, "Redis's own thread (node 0)")
    finally:
        b.stop()


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
        timeline, t95 = follow(env, p.pid, limit_s if mode != "none" else min(limit_s, 20), t0)
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
        return with_where(res, mode, "the workload's own thread (node 1)")
    finally:
        b.stop()


def run_spread(env, mode, size_mb, limit_s):
    """spread: one process per node, each with its memory on the next node: every node
    is at once a source and a target, and every CPU runs a workload (the daemon shares
    CPU 0 with process 0's threads)."""
    nodes = sorted(set(scenario.cpu_nodes().values()))
    b = Balancer(env, mode)
    cg = b.start("bench-spread")
    try:
        mig0 = vmstat("pgmigrate_success")
        c0 = b.cpu()
        procs = []
        for i, n in enumerate(nodes):
            p, _, _ = env.start_workload(cg, size_mb, nodes[(i + 1) % len(nodes)], n, threads=2)
            procs.append(p)
        # The clock starts when all four are in place (the first ones may have been
        # balanced a little while the later ones touched their memory: the pages
        # migrated count from before the first).
        sys0 = sum(cpu_s(p.pid)[1] for p in procs)
        t0 = time.time()
        # Every 0.2 s: four numa_maps reads per poll on a guest whose every CPU runs a
        # workload; the time to 95% is some seconds, the resolution is enough.
        timeline, t95, finals = follow_all([p.pid for p in procs], limit_s if mode != "none" else min(limit_s, 20),
                                           t0, 0.2)
        sys1 = sum(cpu_s(p.pid)[1] for p in procs)
        res = {
            "t95_s": t95,
            "final_local": min(finals) if finals else None,
            "final_each": finals,
            "migrated_pages": vmstat("pgmigrate_success") - mig0,
            "misplaced_pages": len(procs) * size_mb * 256,
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "workload_sys_s": round(sys1 - sys0, 3),
            "size_mb": size_mb,
            "seconds": round(time.time() - t0, 2),
            "timeline": timeline,
        }
        return with_where(res, mode, "the workloads' own threads (every node)")
    finally:
        b.stop()


CHURN_MB = 16          # each short-lived workload
CHURN_EVERY_S = 0.5    # one arrives this often...
CHURN_TRUE = 8         # ...with this many /bin/true
# The churn, in one shell inside the cgroup (its children inherit it): forking it from
# Python would need a preexec_fn per child from a second thread. Arrivals keep to a
# schedule (EPOCHREALTIME, microseconds) rather than sleeping after the work, the
# /bin/true burst runs beside the loop, and the shell kills each workload 2.0-3.0 s
# after its start itself: every fork the loop spares (a killer subshell each, seq,
# rm, sleep, the burst) is time the 0.5 s period does not have under TCG (a first
# version with them all in the loop managed one arrival in 2 s, then 1.4 s, then 1 s
# with the burst in the background; this one 31-38 of the 40 in 20 s).
# When a round takes longer than the period, the next one starts at once, without
# catching up: the count of what was started is part of the result. The ready files
# stay in the guest's /tmp. On SIGTERM the shell prints how many workloads and
# /bin/true it started (the last burst may be cut short).
CHURN_SH = textwrap.dedent("""\
    w=0 t=0 pids=() ends=()
    trap 'kill "${{pids[@]}}" 2>/dev/null; echo "$w $t"; exit 0' TERM
    # A FIFO nobody writes to: read -t on it waits without a fork (sleep is one).
    f=/tmp/bench.churn.$$.fifo
    mkfifo "$f" && exec 3<>"$f" && rm -f "$f" || exit 1
    next=${{EPOCHREALTIME//[!0-9]/}}
    while :; do
        now=${{EPOCHREALTIME//[!0-9]/}}
        keep_p=() keep_e=()
        for k in "${{!pids[@]}}"; do
            if [ "${{ends[k]}}" -le "$now" ]; then
                kill "${{pids[k]}}" 2>/dev/null; wait "${{pids[k]}}" 2>/dev/null
            else
                keep_p+=("${{pids[k]}}"); keep_e+=("${{ends[k]}}")
            fi
        done
        pids=("${{keep_p[@]}}")
        ends=("${{keep_e[@]}}")
        "$0" {mb} 0 1 default 1 /tmp/bench.churn.$$.$w system >/dev/null 2>&1 &
        pids+=($!)
        ends+=($((now + 2000000 + RANDOM % 1000000)))
        w=$((w + 1))
        (for i in {{1..{true}}}; do /bin/true; done) &
        t=$((t + {true}))
        next=$((next + {every_us}))
        now=${{EPOCHREALTIME//[!0-9]/}}
        if [ $((next - now)) -gt 0 ]; then
            printf -v d %06d $((next - now))
            read -r -t "0.$d" -u 3
        else
            next=$now
        fi
    done""").format(mb=CHURN_MB, true=CHURN_TRUE, every_us=int(CHURN_EVERY_S * 1e6))


def run_churn(env, mode, size_mb, window_s):
    b = Balancer(env, mode)
    cg = b.start("bench-churn")
    churner = None
    try:
        mig0 = vmstat("pgmigrate_success")
        c0 = b.cpu()
        p, _, _ = env.start_workload(cg, size_mb, 0, 1)
        u0, s0 = cpu_s(p.pid)
        cgu0, cgs0 = cgroup_cpu_s(cg)

        def enter():
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        churner = subprocess.Popen(["bash", "-c", CHURN_SH, env.workload], preexec_fn=enter,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        env.procs.append(churner)
        t0 = time.time()
        timeline, t95 = follow(env, p.pid, window_s, t0)
        # The same window for every mode: the churn's cost (pages migrated for
        # processes about to exit, CPU) is counted over equal times.
        while time.time() - t0 < window_s:
            time.sleep(0.2)
        share = scenario.local_share_direct(p.pid)
        u1, s1 = cpu_s(p.pid)
        churner.send_signal(signal.SIGTERM)
        out, _ = churner.communicate(timeout=30)
        counts = out.split()
        cgu1, cgs1 = cgroup_cpu_s(cg)
        res = {
            "t95_s": t95,
            "final_local": round(share, 4),
            "migrated_pages": vmstat("pgmigrate_success") - mig0,
            "misplaced_pages": size_mb * 256,
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "workload_sys_s": round(s1 - s0, 3),
            "workload_user_s": round(u1 - u0, 3),
            "cgroup_sys_s": round(cgs1 - cgs0, 3),
            "cgroup_user_s": round(cgu1 - cgu0, 3),
            "short_lived_workloads": int(counts[0]) if len(counts) == 2 else None,
            "short_lived_true": int(counts[1]) if len(counts) == 2 else None,
            "window_s": window_s,
            "timeline": timeline,
        }
        return with_where(res, mode, "the workload's own thread (node 1; the short-lived ones' not counted)")
    finally:
        if churner and churner.poll() is None:
            churner.kill()
        # The short-lived workloads of a churner that was killed: cgroup.kill ends
        # whatever is left, so that the cgroup can go.
        try:
            with open(os.path.join(cg, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            pass
        b.stop()


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
        wait_ready(p, ready, "stalls")
        u0, s0 = cpu_s(p.pid)
        t0 = time.time()
        timeline, t95 = follow(env, p.pid, limit_s, t0)
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
        b.stop()


def run_refill(env, mode, limit_s):
    refill = scenario.load("refill")
    b = Balancer(env, mode)
    cg = b.start("bench-refill")
    try:
        mig0 = vmstat("pgmigrate_success")
        c0 = b.cpu()
        nodes = f"{refill.NODE_FROM},{refill.NODE_TO}"
        limit = limit_s if mode != "none" else min(limit_s, 20)
        # Settled for 20 s first: the shipped scan back-off is then at 16 s.
        sys_s = []

        def timed(pid, t0):
            # From the filler's exit: the move, and the workload's system time meanwhile
            # (the kernel's hinting faults and migrations run in it).
            s0 = cpu_s(pid)[1]
            timeline, t95 = follow(env, pid, limit, t0)
            sys_s.append(cpu_s(pid)[1] - s0)
            return t95, timeline

        out = refill.story(env, cg, f"bind-balancing:{nodes}" if mode == "kernel" else f"bind:{nodes}", 20,
                           None, timed)
        res = {
            "t95_s": out["t95_s"],
            "final_local": out["timeline"][-1][1] if out["timeline"] else None,
            "grown_pages_per_node": out["grown_pages_per_node"],
            "migrated_pages": vmstat("pgmigrate_success") - mig0,
            "misplaced_pages": sum(v for k, v in out["grown_pages_per_node"].items() if k != refill.NODE_TO),
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "workload_sys_s": round(sys_s[0], 3),
            "timeline": out["timeline"],
        }
        return with_where(res, mode, "the workload's own thread (node 3)")
    finally:
        b.stop()


HINT_KEYS = ("numa_hint_faults", "numa_hint_faults_local", "numa_pte_updates", "numa_pages_migrated",
             "pgmigrate_success")


def vmstats(keys=HINT_KEYS):
    return {k: vmstat(k) for k in keys}


def hist_delta(a, b):
    """Bucket counts of snapshot b minus snapshot a ({lower bound ns: count})."""
    return {int(k): v - a.get(k, 0) for k, v in b.items() if v - a.get(k, 0) > 0}


def percentile_us(hist, q):
    """The lower bound of the bucket holding the q-quantile, in µs (within 6%)."""
    total = sum(hist.values())
    if not total:
        return None
    seen, want = 0, q * total
    for low in sorted(hist):
        seen += hist[low]
        if seen > want:
            return round(low / 1000, 1)
    return round(max(hist) / 1000, 1)


def over_us(hist, threshold_us):
    """Batches at or above threshold_us (bucket lower bounds: exact at the 1/4/16 ms
    bucket edges, which are powers of two times 16 ns... close enough for a count)."""
    return sum(v for low, v in hist.items() if low >= threshold_us * 1000)


def steady_window(s0, s1, seconds):
    """Per-hour counts and percentiles of one window, from two steady.c snapshots."""
    per_h = 3600.0 / seconds
    out = {}
    for prefix, hist_key, n_key in (("", "hist", "batches"), ("churn_", "churn_hist", "churn_ops")):
        h = hist_delta(s0[hist_key], s1[hist_key])
        n = s1[n_key] - s0[n_key]
        out[prefix + "count"] = n
        for ms in (1, 4, 16):
            k = f"{prefix}over_{ms}ms"
            out[k] = s1[k] - s0[k]
            out[k + "_per_h"] = round(out[k] * per_h)
        for name, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999), ("p9999", 0.9999)):
            out[f"{prefix}{name}_us"] = percentile_us(h, q)
        out[prefix + "hist"] = h
    out["per_thread_per_s"] = [round((b - a) / seconds) for a, b in zip(s0["per_thread"], s1["per_thread"])]
    return out


def numa_maps_read_ms(pid, times=5):
    """The median time to read pid's numa_maps whole, in ms: the kernel walks each VMA's
    page tables under the process's mmap lock."""
    took = []
    for _ in range(times):
        t0 = time.perf_counter()
        with open(f"/proc/{pid}/numa_maps", "rb", buffering=0) as f:
            while f.read(1 << 16):
                pass
        took.append((time.perf_counter() - t0) * 1000)
    return round(sorted(took)[len(took) // 2], 2)


def start_bench_tool(env, cg, mode, tool, args):
    """bench/TOOL ARGS... READY STATUS [bind] started in cgroup cg, waited for until ready;
    returns (the process, its ready file, its status file)."""
    ready, status = env.tmp_path(f"{tool}.ready"), env.tmp_path(f"{tool}.status")

    def enter():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    p = subprocess.Popen([os.path.join(env.build, "bench", tool), *args, ready, status]
                         + (["bind"] if mode == "bind" else []), preexec_fn=enter, stderr=subprocess.PIPE)
    env.procs.append(p)
    wait_ready(p, ready, tool)
    return p, ready, status


def read_samples(path):
    """A recording of bench's split workload on the host's real CPU (tests/unit/sw-record.c,
    run by scripts/bench): its header's RATE and MS, and [(node, offset)] in the order
    the samples were taken."""
    rate = run_ms = None
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("# sw-record "):
                rate = int(line.split(":")[0].split()[-1])
            elif line.startswith("# run_ms "):
                run_ms = sum(int(x) for x in line.split()[2:])
            elif line.strip() and not line.startswith("#"):
                node, off = line.split()
                out.append((int(node), int(off, 16)))
    if not rate or not run_ms or not out:
        raise scenario.Fail(f"{path}: not a sw-record recording")
    return rate, run_ms, out


class Replayer:
    """Feeds a recording to the daemon's replay_path as the software source would take
    it live at `rate` samples per second of each thread's run time, with both threads
    running all the time (as split's do, one per CPU): the recording's decoded samples
    per second of its threads' run time, times rate / its rate, times two; one batch
    every 100 ms, in the order taken, each as "TGID CPU ADDR" for the workload's buffer."""

    def __init__(self, path, recording, rate, pid, start, length):
        rec_rate, run_ms, samples = recording
        cpu_of = {n: int(scenario.node_cpus(n).split(",")[0].split("-")[0]) for n in {n for n, _ in samples}}
        self.lines = [f"{pid} {cpu_of[n]} {start + off:#x}\n" for n, off in samples if off < length]
        self.per_s = len(self.lines) / (run_ms / 1000) * rate / rec_rate * 2
        self.path, self.sent, self.stop = path, 0, False

    def run(self, t0):
        with open(self.path, "a") as f:
            while not self.stop and self.sent < len(self.lines):
                due = min(len(self.lines), int((time.time() - t0) * self.per_s))
                f.writelines(self.lines[self.sent:due])
                f.flush()
                self.sent = due
                time.sleep(0.1)


def split_share(status):
    """(A's half on node 0, B's half on node 1) as shares, from bench/split's status file;
    None for a reading that could not place some pages (the kernel's hinting scan hides
    them from the query for a moment: not a placement)."""
    try:
        a, b, half, batches, unknown = (int(x) for x in open(status).read().split())
    except (OSError, ValueError):
        return None
    return (a / half, b / half, batches) if unknown == 0 else None


def run_numa02(env, mode, size_mb, limit_s, recording):
    """numa02: one process, thread A on node 0 and thread B on node 1, each reading its
    own half of size_mb first-touched on node 0 (bench/split.c). numabalanced's page-level
    evidence is the host's recording replayed at the software source's rate (mode
    numabalanced: the default 100 samples/s; numabalanced-1k: 1,000/s), since TCG
    guests refuse the live source."""
    replay = env.tmp_path("replay")
    open(replay, "w").close()
    rate = {"numabalanced": 100, "numabalanced-1k": 1000}.get(mode)
    b = Balancer(env, mode, f"[select]\nmin_rss = 0\n[sample]\npmu = replay\nreplay_path = {replay}\n"
                 if rate else "")
    cg = b.start("bench-numa02")
    try:
        mig0 = vmstat("pgmigrate_success")
        c0 = b.cpu()
        p, ready, status = start_bench_tool(env, cg, mode, "split", [str(size_mb)])
        pid, start, length = open(ready).read().split()[:3]
        t0 = time.time()
        replayer = None
        if rate:
            # Samples count from the daemon's first scan of the process (before it the
            # process is not its yet); the clock has started already.
            deadline = t0 + 60
            while f"pid={pid}" not in env.log():
                if time.time() > deadline:
                    raise scenario.Fail("the daemon never scanned the split workload")
                time.sleep(0.1)
            replayer = Replayer(replay, recording, rate, int(pid), int(start, 16), int(length))
            threading.Thread(target=replayer.run, args=(time.time(),), daemon=True).start()
        timeline, t95, batches0 = [], None, None
        limit = limit_s if mode != "none" else min(limit_s, 20)
        while True:
            t = time.time() - t0
            st = split_share(status)
            if st:
                batches0 = st[2] if batches0 is None else batches0
                timeline.append((round(t, 2), round(st[0], 4), round(st[1], 4), st[2]))
                if t95 is None and min(st[0], st[1]) >= 0.95:
                    t95 = t
            if t > limit or (t95 is not None and t > t95 + DONE_AFTER_S):
                break
            time.sleep(0.1)
        if replayer:
            replayer.stop = True
        last = next(((a, bb, n) for _, a, bb, n in reversed(timeline)), (0, 0, batches0 or 0))
        res = {
            "t95_s": round(t95, 2) if t95 is not None else None,
            "final_local": round(min(last[0], last[1]), 4),
            "final_each": [round(last[0], 4), round(last[1], 4)],
            "migrated_pages": vmstat("pgmigrate_success") - mig0,
            "misplaced_pages": 0 if mode == "bind" else size_mb * 256 // 2,
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "batches_per_s": round((last[2] - (batches0 or 0)) / max(timeline[-1][0], 0.1), 1) if timeline else None,
            "samples_replayed": replayer.sent if replayer else None,
            "replay_rate": rate,
            "seconds": round(time.time() - t0, 2),
            "timeline": [(t, round(min(a, bb), 4)) for t, a, bb, _ in timeline],
        }
        return with_where(res, "numabalanced" if rate else mode, "the workload's own threads (nodes 0 and 1)")
    finally:
        b.stop()


def shared_status(status):
    """bench/shared's status: (each private part's share on its node, shared pages on
    node 0 and 1, reads in 2^20)."""
    try:
        p0, p1, pages, s0, s1, reads, unknown = (int(x) for x in open(status).read().split())
    except (OSError, ValueError):
        return None
    return ((p0 / pages, p1 / pages), (s0, s1), reads) if unknown == 0 else None


def run_numa01(env, mode, private_mb, shared_mb, limit_s):
    """numa01: two processes, one per node, each reading its own private memory and
    memory the two share, all first-touched on node 0 (bench/shared.c): time until each
    private part is 95% on its process's node, and what became of the shared part."""
    b = Balancer(env, mode)
    cg = b.start("bench-numa01")
    try:
        mig0 = vmstat("pgmigrate_success")
        c0 = b.cpu()
        p, ready, status = start_bench_tool(env, cg, mode, "shared", [str(private_mb), str(shared_mb)])
        t0 = time.time()
        timeline, t95, reads0, st = [], None, None, None
        limit = limit_s if mode != "none" else min(limit_s, 20)
        while True:
            t = time.time() - t0
            cur = shared_status(status)
            if cur:
                st = cur
                reads0 = st[2] if reads0 is None else reads0
                low = min(st[0])
                timeline.append((round(t, 2), round(low, 4)))
                if t95 is None and low >= 0.95:
                    t95 = t
            if t > limit or (t95 is not None and t > t95 + DONE_AFTER_S):
                break
            time.sleep(0.1)
        if not st:
            raise scenario.Fail("bench/shared never reported")
        res = {
            "t95_s": round(t95, 2) if t95 is not None else None,
            "final_local": round(min(st[0]), 4),
            "final_each": [round(x, 4) for x in st[0]],
            "shared_pages_on": list(st[1]),
            "migrated_pages": vmstat("pgmigrate_success") - mig0,
            "misplaced_pages": 0 if mode == "bind" else private_mb * 256,
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "mreads_per_s": round((st[2] - reads0) * 1.048576 / max(timeline[-1][0], 0.1), 2),
            "seconds": round(time.time() - t0, 2),
            "timeline": timeline,
        }
        return with_where(res, mode, "the workload's own threads (nodes 0 and 1)")
    finally:
        b.stop()


# --- perfnuma: the kernel's own benchmark, perf bench numa mem -----------------------

PERF = "/usr/bin/perf"
# Each scenario's perf bench numa mem options, all two processes of two threads in the
# 2n2c guest (4 CPUs, 2 nodes), run for PERFNUMA_SECS:
#   perfnuma         -0 -P 128: each process's 128 MiB (MAP_PRIVATE, shared by its two
#                    threads) first-touched on node 0 (-0 runs the allocations on CPU 0)
#   perfnuma-shared  numa01-like: -P 64 -G 64: each process 64 MiB of its own and 64 MiB
#                    that perf maps MAP_SHARED before forking its processes, so both
#                    read and write all of it (its random walk covers the whole region);
#                    -0 again
#   perfnuma-bound   -P 128 under numactl --membind=0, every thread started on node 1's
#                    CPUs with perf's -C (added in run_perfnuma) and released right after
#                    start. perf's workers set their own affinity at start (every CPU,
#                    unless -C says otherwise), so a taskset on the command would not hold
PERFNUMA_ARGS = {
    "perfnuma": ["-0", "-p", "2", "-t", "2", "-P", "128"],
    "perfnuma-shared": ["-0", "-p", "2", "-t", "2", "-P", "64", "-G", "64"],
    "perfnuma-bound": ["-p", "2", "-t", "2", "-P", "128"],
}
PERFNUMA_SECS = 30
# From this many seconds into the run to its end, each process is judged: its busy
# threads on one node with at least PERFNUMA_LOCAL of its memory there, every second.
PERFNUMA_FROM_S = 10
PERFNUMA_LOCAL = 0.9
# The daemon's cgroup mode for the bench modes that name one (Balancer).
DAEMON_CGROUP_MODES = {"numabalanced-place": "place", "numabalanced-balance": "balance"}


def perf_workers(perf_pid):
    """perf bench numa's worker processes (the children of perf_pid) and, for each, its
    busy threads: those perf names "thread P/T" (the main thread only waits for them)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != perf_pid:
                continue
            tids = []
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().startswith("thread "):
                        tids.append(int(tid))
            out[int(pid)] = sorted(tids)
        except (OSError, ValueError, IndexError):
            continue
    return out


def wait_perf_start(p, procs, threads, timeout=180):
    """Waits until every worker of perf (process p) runs its busy threads: perf starts
    them all at once when the last is there, so that moment is the run's start. Returns
    ({pid: [tids]}, the time)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if p.poll() is not None:
            raise scenario.Fail(f"perf bench numa exited before its threads ran (status {p.returncode})")
        w = perf_workers(p.pid)
        if len(w) == procs and all(len(t) == threads for t in w.values()):
            return w, time.time()
        time.sleep(0.05)
    raise scenario.Fail("perf bench numa's threads did not start")


def anon_kb_per_node(pid):
    """kB of pid's anonymous memory per node, private and shared (perf's -G region is
    shared anonymous memory: /dev/zero in numa_maps), from /proc/PID/numa_maps. Files
    mapped (perf's own text, libraries) are left out: they are not the process's data."""
    out = {}
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            toks = line.split()[1:]
            if not any(t.startswith("anon=") or t.startswith("file=/dev/zero") or t.startswith("file=/SYSV")
                       for t in toks):
                continue
            kb = 4
            for t in toks:
                if t.startswith("kernelpagesize_kB="):
                    kb = int(t.split("=")[1])
            for t in toks:
                if t.startswith("N") and "=" in t and t[1:].split("=")[0].isdigit():
                    k, v = t[1:].split("=")
                    out[int(k)] = out.get(int(k), 0) + int(v) * kb
    return out


def perf_sample(workers, node_of):
    """One look at every worker: each busy thread's last CPU's node (/proc/PID/task/TID/stat
    field 39) and the process's anonymous memory per node. None when a thread or process
    is gone (the run's end)."""
    out = []
    for pid, tids in workers.items():
        try:
            nodes = []
            for tid in tids:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    nodes.append(node_of.get(int(f.read().rsplit(")", 1)[1].split()[36]), -1))
            mem = anon_kb_per_node(pid)
        except (OSError, ValueError, IndexError):
            return None
        out.append((nodes, mem))
    return out


def sample_local(nodes, mem):
    """The share of a process's memory on the nodes its busy threads last ran on."""
    total = sum(mem.values())
    return sum(v for n, v in mem.items() if n in set(nodes)) / total if total else 0.0


def thread_local(nodes, mem):
    """A process's locality as its busy threads see it: the share of its memory on each
    thread's node, averaged over its threads (two threads on two nodes with all the
    memory on one: 50%)."""
    total = sum(mem.values())
    return sum(mem.get(n, 0) for n in nodes) / total / len(nodes) if total and nodes else 0.0


def parse_perf_numa(text):
    """perf bench numa mem -c's own convergence report: the "(N.Ns converged)" and
    "(N.Ns de-converged)" marks of its once-a-second summary line (when every process's
    threads last ran on one node, and when that stopped), and its total speed."""
    events = [(kind, float(t)) for t, kind in re.findall(r"\(\s*([0-9.]+)s (converged|de-converged)\)", text)]
    events.sort(key=lambda e: e[1])
    speed = re.search(r"^\s*main,\s+([0-9.]+), GB/sec,\s+total-speed", text, re.M)
    return {
        "perf_converged_s": next((t for k, t in events if k == "converged"), None),
        "perf_events": events,
        "perf_converged_at_end": bool(events) and events[-1][0] == "converged",
        "perf_total_gb_s": float(speed.group(1)) if speed else None,
    }


def find_counts(doc, word, prefix="", inside=False):
    """Every number in a JSON document whose key, or a key above it, names word
    ({dotted key: value})."""
    out = {}
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        key = f"{prefix}{k}"
        named = inside or word in str(k)
        if named and isinstance(v, (int, float)) and not isinstance(v, bool):
            out[key] = v
        elif isinstance(v, (dict, list)):
            out.update(find_counts(v, word, key + ".", named))
    return out


def daemon_placements(env):
    """The daemon's placement counters from numabalancectl status --json (the keys that
    name "placement"); None when it has none (a daemon without the place mode)."""
    r = subprocess.run([env.ctl, "--json", "status"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    try:
        counts = find_counts(json.loads(r.stdout), "placement")
    except ValueError:
        return None
    return counts or None


def check_cgroup_mode(env, name, want, timeout=10):
    """That the daemon took the cgroup's mode (numabalancectl explain CGROUP): a daemon
    that does not know the mode reads the cgroup as not opted in."""
    deadline = time.time() + timeout
    d = {}
    while time.time() < deadline:
        r = subprocess.run([env.ctl, "explain", "--json", "/" + name], capture_output=True, text=True)
        try:
            d = json.loads(r.stdout)
        except ValueError:
            d = {}
        if d.get("mode") == want:
            return
        time.sleep(0.5)
    raise scenario.Fail(f"the daemon does not take the cgroup mode {want}: explain says {d.get('why')!r}, "
                        f"mode {d.get('mode')!r}")


def daemon_takes_mode(env, want):
    """Whether this build's daemon takes the cgroup mode `want` (the place mode is newer
    than the scenarios): a cgroup set to it, the daemon started, its explain asked."""
    try:
        env.cgroup("bench-mode-check", want)
    except OSError:
        return False
    try:
        env.start_daemon(shipped_timing=True, service_cpus=SERVICE_CPUS, log_level="info")
        check_cgroup_mode(env, "bench-mode-check", want, timeout=5)
        return True
    except scenario.Fail:
        return False
    finally:
        with contextlib.suppress(scenario.Fail):
            env.stop_daemon()
        env.daemon_log = None
        env.cleanup()


def node1_first_cpus():
    """perf's -C argument that binds every task to node 1's CPUs: FIRST_COUNTxTASKS."""
    cpus = scenario.sys_list("/sys/devices/system/node/node1/cpulist")
    if cpus != list(range(cpus[0], cpus[0] + len(cpus))):
        raise scenario.Fail(f"node 1's CPUs are not contiguous: {cpus}")
    return cpus[0], len(cpus)


def judge_perfnuma(samples, from_s, local):
    """From the samples [(t, [(nodes, mem)...])]: whether every process, in every sample
    from from_s on, had its busy threads on one node and at least `local` of its memory
    there; the share of (process, sample) pairs that did; and the first time from which
    every later sample did (None if the last did not)."""
    def ok(nodes, mem):
        return len(set(nodes)) == 1 and sample_local(nodes, mem) >= local
    late = [(t, procs) for t, procs in samples if t >= from_s]
    pairs = [ok(n, m) for _, procs in late for n, m in procs]
    settled = None
    for t, procs in reversed(samples):
        if not all(ok(n, m) for n, m in procs):
            break
        settled = t
    return {
        "stayed_together": bool(late) and all(pairs),
        "together_pairs_share": round(sum(pairs) / len(pairs), 4) if pairs else None,
        "together_from_s": settled,
        "samples_from": len(late),
    }


def run_perfnuma(env, mode, name, secs):
    """One run of perf bench numa mem (PERFNUMA_ARGS[name]) for secs in an opted-in cgroup:
    perf's own convergence report, and every second each process's busy threads' nodes
    and its memory per node (judge_perfnuma), the pages migrated, the threads the daemon
    placed."""
    b = Balancer(env, mode)
    cg = b.start(f"bench-{name}")
    try:
        if b.daemon:
            check_cgroup_mode(env, f"bench-{name}", b.cgroup_mode)
        placed0 = daemon_placements(env) if b.daemon else None
        node_of = scenario.cpu_nodes()
        args = PERFNUMA_ARGS[name]
        procs, threads = int(args[args.index("-p") + 1]), int(args[args.index("-t") + 1])
        cmd = [PERF, "bench", "numa", "mem", *args, "-s", str(secs), "-c"]
        if name == "perfnuma-bound":
            first, n = node1_first_cpus()
            cmd = ["numactl", "--membind=0", *cmd, "-C", f"{first}_{n}x{procs * threads}"]
        out = env.tmp_path("perf.out")

        def enter():
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        mig0 = vmstat("pgmigrate_success")
        c0 = b.cpu()
        with open(out, "w") as f:
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, preexec_fn=enter)
        env.procs.append(p)
        workers, t0 = wait_perf_start(p, procs, threads)
        if name == "perfnuma-bound":
            # Released: every task of perf's may run anywhere from now on.
            everywhere = set(node_of)
            for pid in [p.pid, *workers]:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(int(tid), everywhere)
        samples, affinity, explained = [], {}, {}
        k = 1
        while p.poll() is None:
            time.sleep(max(0.0, t0 + k - time.time()))
            k += 1
            t = round(time.time() - t0, 2)
            s = perf_sample(workers, node_of)
            if s is None:
                continue
            samples.append((t, s))
            if t >= secs - 3 and not affinity:
                # Near the end, while the threads are there: each busy thread's
                # affinity (what a placement narrows), and the daemon's word on each.
                for pid, tids in workers.items():
                    with contextlib.suppress(OSError):
                        affinity[pid] = [sorted(os.sched_getaffinity(tid)) for tid in tids]
                    if b.daemon:
                        r = subprocess.run([env.ctl, "explain", "--json", str(pid)], capture_output=True, text=True)
                        with contextlib.suppress(ValueError):
                            d = json.loads(r.stdout)
                            explained[pid] = {k2: d.get(k2) for k2 in ("mode", "reason", "target_node", "hot_node",
                                                                       "placement")}
        p.wait(60)
        seconds = time.time() - t0
        placed1 = daemon_placements(env) if b.daemon else None
        res = parse_perf_numa(open(out).read())
        if p.returncode != 0:
            raise scenario.Fail(f"perf bench numa exited with {p.returncode}: {open(out).read()[-500:]}")
        if not samples:
            raise scenario.Fail("no sample of perf's processes")
        last = samples[-1][1]
        res.update(judge_perfnuma(samples, PERFNUMA_FROM_S, PERFNUMA_LOCAL))
        res.update({
            "final_local": round(min(thread_local(n, m) for n, m in last), 4),
            "final_each": [round(thread_local(n, m), 4) for n, m in last],
            "final_nodes": [n for n, _ in last],
            "migrated_pages": vmstat("pgmigrate_success") - mig0,
            # Counters of the daemon's placements, as its status names them: the
            # change over the run (None: a daemon without them, or another balancer).
            "threads_placed": ({k2: v - (placed0 or {}).get(k2, 0) for k2, v in placed1.items()}
                               if placed1 else None),
            "balancer_cpu_s": round(b.cpu() - c0, 3),
            "affinity_near_end": {str(k2): v for k2, v in affinity.items()},
            "daemon_explain_near_end": {str(k2): v for k2, v in explained.items()},
            "command": " ".join(cmd),
            "seconds": round(seconds, 2),
            "boot_id": open("/proc/sys/kernel/random/boot_id").read().strip(),
            "samples": [(t, [(n, {str(k2): v for k2, v in m.items()}) for n, m in s]) for t, s in samples],
            "timeline": [(t, round(min(thread_local(n, m) for n, m in s), 4)) for t, s in samples],
        })
        return with_where(res, "numabalanced" if b.daemon else mode, "the workload's own threads (every CPU)")
    finally:
        b.stop()


def run_steady(env, mode, seconds, mb_per_thread, churn_kb, warmup_s=20, conf="", environ=None):
    """Memory local from the start, one reader per CPU of every node (bench/steady.c):
    after warmup_s (the start of every mode: the daemon's first scans, the kernel's
    scan delay), a window of `seconds` whose outliers, percentiles and the kernel's
    NUMA hinting counters are the result. conf: added to the daemon's config."""
    b = Balancer(env, mode, conf)
    cg = b.start("bench-steady")
    stats = f"/tmp/bench.steady.{time.time_ns()}.json"
    ready = f"/tmp/bench.steady.ready.{time.time_ns()}"
    node_of = scenario.cpu_nodes()
    per_node = max(list(node_of.values()).count(n) for n in set(node_of.values()))
    try:
        def enter():
            if mode != "none" and mode != "kernel":
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
        cmd = [os.path.join(env.build, "bench", "steady"), str(mb_per_thread), str(per_node), ready, stats]
        p = subprocess.Popen(cmd + ([str(churn_kb)] if churn_kb else []), preexec_fn=enter, stderr=subprocess.PIPE,
                             env=dict(os.environ, **environ) if environ else None)
        env.procs.append(p)
        wait_ready(p, ready, "steady", timeout=300, poll=0.2)
        start = int(open(ready).read().split()[1], 16)
        # Where first touch put the memory, before any balancer could move it: told
        # apart from where it is at the end, a move is told from a node short of memory.
        nodes_touched = env.region_nodes(p.pid, start)
        time.sleep(warmup_s)

        def snapshot():
            with open(stats) as f:
                return json.load(f), vmstats(), b.cpu(), cpu_s(p.pid), time.time()

        def daemon_cost():
            # Where the daemon's CPU time goes, by stage (daemon/cost.h).
            if not b.daemon:
                return None
            st = json.loads(subprocess.run([env.ctl, "--json", "status"], capture_output=True, text=True,
                                           check=True).stdout)
            return st["cpu_ns"], st["ticks"]
        cost0 = daemon_cost()
        s0, v0, c0, (u0, sy0), t0 = snapshot()
        while time.time() - t0 < seconds:
            if p.poll() is not None:
                raise scenario.Fail(f"steady exited: {p.stderr.read().decode()}")
            time.sleep(1)
        s1, v1, c1, (u1, sy1), t1 = snapshot()
        cost1 = daemon_cost()
        nodes = env.region_nodes(p.pid, start)
        scans = {}
        if b.daemon:
            d = json.loads(subprocess.run([env.ctl, "explain", "--json", str(p.pid)], capture_output=True,
                                          text=True, check=True).stdout)
            scans = {"daemon_scans": d.get("scans"), "daemon_sampled_scans": d.get("sampled_scans"),
                     "daemon_pages": d.get("pages"), "daemon_reason": d.get("reason")}
            (k0, n0), (k1, n1) = cost0, cost1
            scans["daemon_ticks"] = n1 - n0
            scans["daemon_cpu_ms_by_stage"] = {k: round((k1["by_stage"][k] - k0["by_stage"][k]) / 1e6, 1)
                                               for k in k1["by_stage"]}
            scans["daemon_cpu_ms_unattributed"] = round((k1["unattributed"] - k0["unattributed"]) / 1e6, 1)
        read_ms = numa_maps_read_ms(p.pid) if churn_kb else None
        p.send_signal(signal.SIGTERM)
        p.wait(10)
        per_h = 3600.0 / (t1 - t0)
        r = steady_window(s0, s1, t1 - t0)
        r.update({
            "window_s": round(t1 - t0, 1),
            "readers": len(s1["per_thread"]),
            "vmstat_per_h": {k: round((v1[k] - v0[k]) * per_h) for k in v1},
            "vmstat": {k: v1[k] - v0[k] for k in v1},
            "balancer_cpu_s": round(c1 - c0, 3),
            "workload_user_s": round(u1 - u0, 3),
            "workload_sys_s": round(sy1 - sy0, 3),
            "pages_per_node_touched": nodes_touched,
            "pages_per_node_end": nodes,
            "numa_maps_read_ms": read_ms,
            **scans,
        })
        return r
    finally:
        b.stop()


@contextlib.contextmanager
def move_target(tool, size_mb):
    """migrate-run's target process, size_mb on node 0 and a fresh one each time;
    yields its ready line (pid, start, end)."""
    f = f"/tmp/bench.mr.{time.time_ns()}"
    t = subprocess.Popen([tool, "target", "--size-mb", str(size_mb), "--node", "0", "--out", f],
                         stdout=subprocess.DEVNULL)
    try:
        while not os.path.exists(f) or not open(f).read().strip():
            time.sleep(0.1)
        yield open(f).read().split()
    finally:
        t.kill()
        t.wait()


def run_moverate(env, size_mb):
    """One round: the executor with one worker and with two, migratepages(8), and
    memcpy, 0 -> 1."""
    tool = os.path.join(env.build, "tests", "vm", "migrate-run")
    out = {}
    # numabalanced's executor: one job on one worker (CPU 0), then on two workers
    # (service CPUs 0-1, both on node 0 in 2n2c: the job split in two as the daemon
    # splits it, job_split).
    for key, cpus in (("numabalanced_mb_s", "0"), ("numabalanced_2w_mb_s", "0-1")):
        with move_target(tool, size_mb) as (pid, start, end):
            r = subprocess.run([tool, "move", "--cpus", cpus, pid, start, end, "1"], capture_output=True, text=True,
                               check=True)
            res = json.loads(r.stdout)
            if res["error"] or res["moved"] < size_mb * 256 * 0.95:
                raise scenario.Fail(f"migrate-run --cpus {cpus} moved too little: {r.stdout.strip()}")
            out[key] = res["mb_s"]
    # migratepages(8): the same memory, timed from outside.
    with move_target(tool, size_mb) as (pid, _, _):
        t0 = time.time()
        subprocess.run(["taskset", "-c", "0", "migratepages", pid, "0", "1"], check=True)
        out["migratepages_mb_s"] = round(size_mb / (time.time() - t0), 1)
    r = subprocess.run([os.path.join(env.build, "bench", "memcpy-bw"), str(size_mb), "0", "1", "0", "3"],
                       capture_output=True, text=True, check=True)
    out["memcpy_mb_s"] = float(r.stdout)
    return out


MODES = {
    "misplaced": ["numabalanced", "kernel", "numad", "damon", "bind", "none"],
    "bound": ["numabalanced", "kernel", "numad", "none"],
    "stalls": ["numabalanced", "kernel", "none"],
    "misplaced-1g": ["numabalanced", "kernel", "numad", "damon", "bind", "none"],
    "spread": ["numabalanced", "kernel", "numad", "none"],
    "churn": ["numabalanced", "kernel", "numad", "none"],
    "steady": ["numabalanced", "kernel", "damon", "none"],
    "steady-churn": ["numabalanced", "kernel", "none"],
    "maplock": ["numabalanced", "numabalanced-walk", "none"],
    "refill": ["numabalanced", "kernel", "none"],
    "numa02": ["numabalanced", "numabalanced-1k", "kernel", "bind", "none"],
    "numa01": ["numabalanced", "kernel", "bind", "none"],
    # The daemon's modes by their cgroup mode (DAEMON_CGROUP_MODES); a mode this build's
    # daemon does not take is left out, and the document says so.
    "perfnuma": ["numabalanced-place", "numabalanced-balance", "kernel", "numad", "none"],
    "perfnuma-shared": ["numabalanced-place", "numabalanced-balance", "kernel", "numad", "none"],
    "perfnuma-bound": ["numabalanced-place", "numabalanced-balance", "numad", "none"],
    "tiering": ["numabalanced", "kernel-tiering", "damon", "none"],
    "tiering-big": ["numabalanced", "numabalanced-floor0", "kernel-tiering", "damon", "none"],
    "tiering-shares": ["numabalanced", "kernel-tiering", "damon", "none"],
    "tiering-redis": ["numabalanced", "kernel-tiering", "damon", "none", "all-fast"],
}
TOPOLOGY = {"misplaced": "2n1c", "bound": "2n2c", "stalls": "2n1c", "moverate": "2n2c", "misplaced-1g": "2n1c-big",
            "spread": "4n1c", "churn": "2n2c", "steady": "2n1c", "steady-churn": "2n1c-big", "maplock": "2n1c-big",
            "refill": "4n1c", "numa02": "2n1c", "numa01": "2n1c", "perfnuma": "2n2c", "perfnuma-shared": "2n2c",
            "perfnuma-bound": "2n2c", "tiering": "2n1m-hmat",
            "tiering-big": "2n1m-hmat", "tiering-shares": "2n1m-hmat", "tiering-redis": "2n1m-hmat"}
# Each process's memory in spread: four of them beside the kernel in 512 MiB nodes.
SPREAD_MB = 96
CHURN_LONG_MB = 256
# Seconds a mode gets to reach 95% local (none: 20 at most); for churn the fixed window.
# The new scenarios' limits keep scripts/bench near an hour on a 2-core host: in their
# one-run validations numabalanced and the kernel got there within 7 s (spread 1.8 and
# 5.1 s, misplaced-1g 6.3 and 6.3 s, churn 1.9-5.5 and 1.2-4.8 s over four runs) and
# numad never, so the limit is mostly what numad's runs cost; it leaves the kernel
# over 4 times its time.
# The daemon's service_cpus (--service-cpus): the shipped default's choice on these
# guests, CPU 0.
SERVICE_CPUS = "0"
# steady: each mode's measured window (the issue asks for at least 10 minutes), and the
# one large mapping of steady-churn (per reader, one reader per node of 2n1c-big: a
# 3 GiB VMA whose numa_maps line is one page-table walk under the mmap lock).
STEADY_WINDOW_S = 600
STEADY_CHURN_MB = 1536
# maplock: steady-churn's workload under the daemon with and without huge_vma, each
# settled process scanned every second instead of every 30 s (scan_max_ms), so that a
# window of minutes holds as many scans as the shipped timing makes in an hour or two.
MAPLOCK_WINDOW_S = 120
MAPLOCK_CONF = "scan_max_ms = 1000\n"
LIMIT_S = {"misplaced": 60, "bound": 60, "misplaced-1g": 45, "spread": 30, "churn": 20, "refill": 40,
           "numa02": 180, "numa01": 60, "tiering": 60,
           "tiering-big": 20, "tiering-shares": 60, "tiering-redis": 60}
# tiering-redis: the room on node 0 a bystander leaves, Redis's dataset as a multiple
# of it (the issue's 1.5 times the fast node), its values, the Zipf exponent of the
# GETs, kvload's connections, and the measured seconds after --limit's warm-up.
REDIS_ROOM_MB, REDIS_RATIO, REDIS_VALUE_B = 200, 1.5, 1000
REDIS_ZIPF_S, REDIS_CLIENTS, REDIS_MEASURE_S = 0.99, 2, 60
# tiering: the workload's memory, moved whole to the slow node, and its hot part.
TIERING_MB, TIERING_HOT_MB = 320, 64
# tiering-big: the workload's memory (more than node 0's 768 MiB; nodes 0 and 2 hold
# 1280 MiB with the kernel's own), its moving hot window; --limit is each of the three
# phases' seconds. numabalanced-floor0: the daemon with no free-memory floor for its
# promotions (promote_free_floor_pct and free_floor_pct 0): what the floor holds back
# on a full fast node.
TIERBIG_MB, TIERBIG_HOT_MB = 960, 64
TIERBIG_WARMUP_S = 12
# The replayed page samples' pages a second (HotSamples): a 64 MiB window of base pages
# whole, as before; larger hot parts a slice a second.
HOTSAMPLES_PAGES = 16384
# tiering-big's look at where every page is (PageWatch), and the daemon's cooldown
# (cooldown_ms, shipped 30 s): a page moved twice within it is a ping-pong.
PAGEWATCH_S, PAGEWATCH_COOLDOWN_S = 5, 30
# tiering-shares: A's memory (touched first, reads its first 64 MiB), B's and B's hot
# part (its last MiB), each cgroup's share of the fast tier. 960 MiB in all, as
# tiering-big: nodes 0 and 2 hold about 1,250 MiB with the kernel's own (1,120 MiB was
# OOM-killed).
# Expected: B's wait (about 250 MiB of its hot part on node 2) is served first by its
# own cold memory on node 0 (80 MiB), then by A's above its share (about 100 MiB), and
# no further: A ends at its share, B's last part stays on node 2.
TIERSHARE_A_MB, TIERSHARE_B_MB, TIERSHARE_B_HOT_MB, TIERSHARE_PCT = 480, 480, 400, 50
TIERBIG_CONF = {"numabalanced-floor0": "[decide]\npromote_free_floor_pct = 0\nfree_floor_pct = 0\n"}
# numa02: the split workload's buffer (each thread's half: 4,096 pages of 4 KiB).
NUMA02_MB = 32
# numa01: each process's private part, and the part they share.
NUMA01_PRIVATE_MB, NUMA01_SHARED_MB = 32, 32


def main():
    global SERVICE_CPUS
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", default=os.environ.get("NUMABALANCED_RESULTS", "/tmp"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=float, default=None,
                    help="seconds a mode gets to reach 95%% local (churn: the window; perfnuma*: perf's "
                         "run, default %d); default per scenario" % PERFNUMA_SECS)
    ap.add_argument("--mode", action="append", default=None,
                    help="run only this mode (repeatable; default: every mode of the scenario)")
    ap.add_argument("--service-cpus", default=SERVICE_CPUS,
                    help="the daemon's service_cpus (default %(default)s, what the shipped config picks here)")
    ap.add_argument("--window", type=float, default=None,
                    help="steady, steady-churn: seconds measured per mode (default %d)" % 600)
    ap.add_argument("--samples", default=None,
                    help="numa02: the host's sw-record recording of the split workload (scripts/bench makes it)")
    ap.add_argument("scenario", choices=sorted(TOPOLOGY))
    a = ap.parse_args()
    SERVICE_CPUS = a.service_cpus
    if a.mode and a.scenario in MODES and not set(a.mode) <= set(MODES[a.scenario]):
        ap.error(f"{a.scenario} has the modes {', '.join(MODES[a.scenario])}")
    env = scenario.Env(a.build, a.out)
    doc = {"scenario": a.scenario, "topology": os.environ.get("NUMABALANCED_TOPOLOGY", TOPOLOGY[a.scenario]),
           "kernel": platform.release(), "accel": os.environ.get("NUMABALANCED_ACCEL", ""), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "runs": {}, "errors": []}
    limit = a.limit if a.limit is not None else LIMIT_S.get(a.scenario, 60)
    doc["limit_s"] = limit
    # Before anything is timed: the first run in a fresh guest would pay for the host's
    # first touch of the guest's memory (scenario.warm_memory).
    scenario.warm_memory(env)
    t_start = time.time()
    recording = None
    if a.scenario == "numa02":
        if not a.samples:
            ap.error("numa02 needs --samples (the host's recording; scripts/bench makes it)")
        recording = read_samples(a.samples)
        doc["recording"] = {"rate": recording[0], "run_ms": recording[1], "samples": len(recording[2])}
    if a.scenario == "moverate":
        doc["runs"]["rounds"] = []
        for i in range(a.runs):
            try:
                doc["runs"]["rounds"].append(run_moverate(env, 512))
            except (scenario.Fail, subprocess.CalledProcessError) as e:
                doc["errors"].append(f"round {i + 1}: {e}")
            print(json.dumps(doc["runs"]["rounds"][-1:]), flush=True)
    else:
        modes = [m for m in MODES[a.scenario] if not a.mode or m in a.mode]
        # DAMON's migrate_hot with a target node is 6.11+: elsewhere the mode is left
        # out, and the document says so.
        if "damon" in modes and not damon_available():
            modes.remove("damon")
            doc["left_out"] = "damon: this kernel's DAMON has no migrate_hot with a target node (6.11+)"
        for m in [m for m in modes if m in DAEMON_CGROUP_MODES]:
            if not daemon_takes_mode(env, DAEMON_CGROUP_MODES[m]):
                modes.remove(m)
                doc["left_out"] = (f"{m}: this build's daemon does not take the cgroup mode "
                                   f"{DAEMON_CGROUP_MODES[m]}")
        if a.scenario.startswith("perfnuma"):
            doc["perf_version"] = subprocess.run([PERF, "version"], capture_output=True, text=True).stdout.strip()
        for i in range(a.runs):
            for mode in (modes if i % 2 == 0 else list(reversed(modes))):
                try:
                    if a.scenario == "steady":
                        r = run_steady(env, mode, a.window or STEADY_WINDOW_S, 256, 0)
                    elif a.scenario == "steady-churn":
                        r = run_steady(env, mode, a.window or STEADY_WINDOW_S, STEADY_CHURN_MB, 1024)
                    elif a.scenario == "maplock":
                        r = run_steady(env, mode, a.window or MAPLOCK_WINDOW_S, STEADY_CHURN_MB, 1024,
                                       conf=MAPLOCK_CONF, environ={"STEADY_4K": "1"})
                    elif a.scenario == "stalls":
                        r = run_stalls(env, mode, 512, 30)
                    elif a.scenario == "spread":
                        r = run_spread(env, mode, SPREAD_MB, limit)
                    elif a.scenario == "refill":
                        r = run_refill(env, mode, limit)
                    elif a.scenario == "numa01":
                        r = run_numa01(env, mode, NUMA01_PRIVATE_MB, NUMA01_SHARED_MB, limit)
                    elif a.scenario == "numa02":
                        r = run_numa02(env, mode, NUMA02_MB, limit, recording)
                    elif a.scenario == "churn":
                        r = run_churn(env, mode, CHURN_LONG_MB, limit)
                    elif a.scenario.startswith("perfnuma"):
                        r = run_perfnuma(env, mode, a.scenario, int(a.limit or PERFNUMA_SECS))
                    elif a.scenario == "tiering":
                        r = run_tiering(env, mode, TIERING_MB, TIERING_HOT_MB, limit)
                    elif a.scenario == "tiering-big":
                        r = run_tiering_big(env, mode, TIERBIG_MB, TIERBIG_HOT_MB, limit)
                    elif a.scenario == "tiering-shares":
                        r = run_tiering_shares(env, mode, limit)
                    elif a.scenario == "tiering-redis":
                        r = run_tiering_redis(env, mode, limit)
                    elif a.scenario == "misplaced-1g":
                        r = run_locality(env, mode, 1024, "default", limit, a.scenario)
                    else:
                        r = run_locality(env, mode, 512, "default" if a.scenario == "misplaced" else "bind:0-1",
                                         limit, a.scenario)
                except (scenario.Fail, subprocess.CalledProcessError, OSError, ValueError) as e:
                    doc["errors"].append(f"{mode} run {i + 1}: {e}")
                    print(f"{mode} run {i + 1}: FAILED: {e}", flush=True)
                    continue
                doc["runs"].setdefault(mode, []).append(r)
                if a.scenario.startswith("perfnuma"):
                    print(f"{a.scenario} {mode} run {i + 1}: perf converged {r['perf_converged_s']} "
                          f"(events {r['perf_events']}) together from {PERFNUMA_FROM_S} s {r['stayed_together']} "
                          f"({r['together_pairs_share']}, all from {r['together_from_s']} s) final {r['final_each']} "
                          f"on {r['final_nodes']} migrated {r['migrated_pages']} placed {r['threads_placed']} "
                          f"cpu {r['balancer_cpu_s']} s, {r['seconds']} s", flush=True)
                    continue
                if a.scenario.startswith("steady") or a.scenario == "maplock":
                    print(f"{a.scenario} {mode} run {i + 1}: " + json.dumps(
                        {k: v for k, v in r.items() if "hist" not in k}), flush=True)
                    continue
                if a.scenario in ("tiering-shares", "tiering-redis"):
                    print(f"{a.scenario} {mode} run {i + 1}: " + json.dumps(
                        {k: v for k, v in r.items() if k != "timeline"}), flush=True)
                    continue
                if a.scenario == "tiering-big":
                    print(f"tiering-big {mode} run {i + 1}: " + json.dumps(
                        {k: v for k, v in r.items() if k != "phases"}) + " phases " + json.dumps(
                        [{k: v for k, v in ph.items() if k not in ("timeline", "node0_free_mb")}
                         for ph in r["phases"]]), flush=True)
                    continue
                if a.scenario == "tiering":
                    print(f"tiering {mode} run {i + 1}: " + json.dumps({k: v for k, v in r.items() if k != "timeline"}),
                          flush=True)
                    continue
                print(f"{a.scenario} {mode} run {i + 1}: t95 {r['t95_s']} final {r['final_local']} "
                      f"migrated {r['migrated_pages']} cpu {r['balancer_cpu_s']} s"
                      + (f" stalls {dict((k, v) for k, v in r['stalls'].items() if k != 'hist')}" if "stalls" in r else "")
                      + (f" each {r['final_each']}" if "final_each" in r else "")
                      + (f" short-lived {r['short_lived_workloads']}+{r['short_lived_true']}"
                         if "short_lived_workloads" in r else ""), flush=True)
    doc["seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(a.out, f"{a.scenario}.json"), "w") as f:
        json.dump(doc, f)
    print(f"wrote {a.scenario}.json in {doc['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
