# SPDX-License-Identifier: GPL-2.0-or-later
"""What the engine scenarios (tests/vm/scenarios/NNN-name.py) are made of, in the guest.

    from scenario import Env, check, wait_local
    env = Env(build_dir, out_dir)
    cg = env.cgroup("nb-x", "balance")                # opted in with trusted.numabalanced
    p, start, _ = env.start_workload(cg, 256, 0, 1)   # memory on node 0, threads on node 1
    env.start_daemon()
    check(wait_local(env, p.pid, 0.95, 120) is not None, "not fixed within 120 s")
    env.stop_daemon()                                 # SIGTERM; exit status 0 is checked
    env.cleanup()                                     # the runner does this after each one

Env owns what a scenario starts: its cgroups, its workloads and the daemon (with its
log, each line stamped with the seconds since the daemon started), and removes them
again. The readers here take the kernel's own view of placement (numa_maps, the
threads' CPUs) and that of `numabalancectl show --json`, which is what a user sees.

check() is the shared harness's (tests/nbtest.py: counted, printed as FAIL), and a
failed check also ends the scenario (Fail): its steps depend on each other, and the
runner (engine.py) goes on with the next scenario. A check that fails counts once.
Waiting loops call fail() when their time is up rather than check() on every poll,
so that the count of passed checks counts assertions, not polls.
"""
import glob
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCENARIO_DIR = os.path.join(HERE, "scenarios")
sys.path.insert(0, os.path.dirname(HERE))
import nbtest  # noqa: E402
# What a scenario runs as another user (uid 1000, nobody) runs from a copy outside the
# checkout: tests/vm/anyuser.py says why.
from anyuser import copy_for_any_user  # noqa: E402,F401
import shipped  # noqa: E402

CG = "/sys/fs/cgroup"


class Fail(Exception):
    """A scenario cannot go on: a check failed (already counted and printed)."""


def check(cond, msg):
    """nbtest.check; when it fails the scenario ends here (raises Fail)."""
    if not nbtest.check(cond, msg):
        raise Fail(msg)


def fail(msg):
    """A failed check that needs no condition: counted, printed, the scenario ends."""
    check(False, msg)


def thread_times(pid, tid):
    """(state, last CPU, user and system ticks) of a thread, from its stat."""
    f = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
    return f[0], int(f[36]), int(f[11]), int(f[12])


# What the daemon logs of a move call of 5 s or more (daemon/executor.c).
SLOW_CALL = "in the kernel; threads touching those pages waited for it"


def in_move_call(pid):
    """Whether a thread of pid is in a page migration in the kernel: the daemon's worker
    in move_pages(2) (its kernel stack names migrate_pages or move_pages), or a thread
    waiting for a page under migration (migration_entry_wait on 5.10,
    migration_entry_wait_on_locked on 6.x)."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            stack = open(f"/proc/{pid}/task/{tid}/stack").read()
            if any(f in stack for f in ("migration_entry_wait", "migrate_pages", "move_pages")):
                return True
    except OSError:
        pass
    return False


def kernel_stacks(*pids):
    """Each thread of pids: its state, the CPU it last ran on, the user and system ticks
    it gained over one second, its wchan and kernel stack (/proc/PID/task/TID/stack):
    what a failure message names when something in the kernel held a thread. A thread
    running on a CPU has no stack there; when one is, the stacks of every CPU's running
    task follow (SysRq l, from the kernel log): where in the kernel it runs."""
    out, before, running = [], {}, False
    for pid in pids:
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                before[(pid, tid)] = thread_times(pid, tid)
        except (OSError, ValueError, IndexError):
            pass
    time.sleep(1)
    for pid in pids:
        try:
            tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
        except OSError:
            out.append(f"pid {pid}: gone")
            continue
        for tid in tids:
            base = f"/proc/{pid}/task/{tid}"
            try:
                comm = open(f"{base}/comm").read().strip()
                state, cpu, utime, stime = thread_times(pid, tid)
                wchan = open(f"{base}/wchan").read().strip()
                stack = open(f"{base}/stack").read().strip().replace("\n", " < ")
            except (OSError, ValueError, IndexError) as e:
                out.append(f"{pid}/{tid}: {e}")
                continue
            u0, s0 = before.get((pid, tid), (None, None, utime, stime))[2:]
            running |= state == "R" and not stack
            out.append(f"{pid}/{tid} {comm} {state} cpu {cpu} +{utime - u0}u +{stime - s0}s ticks/s {wchan}: {stack}")
    out.append(memory_pressure())
    if running:
        out.append("running tasks' kernel stacks (SysRq l):\n" + sysrq_backtrace())
    return "\n".join(out)


def memory_pressure():
    """Each node's free memory and the kernel's reclaim and compaction counters: a
    migration's target allocation that reclaims or compacts runs on, preemptible, for
    as long as that takes (slow under TCG)."""
    parts = []
    for node in sorted(glob.glob("/sys/devices/system/node/node[0-9]*")):
        try:
            info = open(f"{node}/meminfo").read()
            mib = {k: int(m.group(1)) // 1024 for k in ("MemFree", "FilePages", "Shmem", "AnonPages")
                   for m in [re.search(rf"{k}:\s+(\d+) kB", info)] if m}
            parts.append(f"{os.path.basename(node)} free {mib.get('MemFree')} MiB (file {mib.get('FilePages')}, "
                         f"shmem {mib.get('Shmem')}, anon {mib.get('AnonPages')})")
        except OSError:
            pass
    # Removed cgroups the kernel still keeps (their memory's charges): reclaim visits
    # each of them.
    try:
        dying = re.search(r"nr_dying_descendants (\d+)", open("/sys/fs/cgroup/cgroup.stat").read())
        parts.append(f"dying cgroups {dying.group(1)}" if dying else "")
    except OSError:
        pass
    keys = ("allocstall_normal", "allocstall_movable", "pgscan_direct", "pgscan_kswapd", "compact_stall", "compact_fail",
            "pgmigrate_success", "pgmigrate_fail", "numa_pages_migrated")
    try:
        vm = dict(line.split() for line in open("/proc/vmstat"))
        parts.append(" ".join(f"{k} {vm[k]}" for k in keys if k in vm))
    except (OSError, ValueError):
        pass
    return "memory: " + "; ".join(parts)


def sysrq_backtrace():
    """The kernel log's lines from a SysRq l (every CPU's backtrace), at most 120."""
    marker = f"numabalanced-test-sysrq-{time.time()}"
    try:
        with open("/dev/kmsg", "w") as f:
            f.write(marker + "\n")
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("l")
        time.sleep(1)
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"(no backtrace: {e})"
    lines = log.split(marker, 1)[-1].splitlines()[1:]
    return "\n".join(lines[:120])


def kernel_log_mark(name):
    """Writes a marker into the kernel log and returns it, for kernel_log_since()."""
    marker = f"numabalanced-test-{name}-{time.time()}"
    try:
        with open("/dev/kmsg", "w") as f:
            f.write(marker + "\n")
    except OSError:
        pass
    return marker


def kernel_log_since(marker, limit=80):
    """The kernel log's lines after marker, every level (the guest's console shows only
    errors: a soft lockup's stack is at the default level), the last limit of them."""
    try:
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"(no kernel log: {e})"
    if marker not in log:
        return "(the marker is no longer in the kernel log)"
    lines = log.split(marker, 1)[1].splitlines()[1:]
    return "\n".join(lines[-limit:])


def sh(*cmd, check_rc=True, timeout=300):
    # Bounded: a command that hangs fails the scenario and says which command it was,
    # where it would have held the guest silent until vmrun's limit.
    try:
        r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(cmd)} did not return within {timeout} s")
    if check_rc and r.returncode != 0:
        fail(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def load(name):
    """The scenario module called name: tests/vm/scenarios/NNN-name.py."""
    for f in sorted(os.listdir(SCENARIO_DIR)):
        m = re.fullmatch(r"(\d{3})-(.+)\.py", f)
        if m and m.group(2) == name:
            mod_name = "scenario_" + m.group(1) + "_" + name.replace("-", "_")
            if mod_name in sys.modules:
                return sys.modules[mod_name]
            spec = importlib.util.spec_from_file_location(mod_name, os.path.join(SCENARIO_DIR, f))
            mod = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = mod
            spec.loader.exec_module(mod)
            return mod
    raise KeyError(f"no scenario {name!r} in {SCENARIO_DIR}")


def names():
    """Every scenario, in the order of its number."""
    return [m.group(1) for m in (re.fullmatch(r"\d{3}-(.+)\.py", f) for f in sorted(os.listdir(SCENARIO_DIR)))
            if m]


# --- the machine -------------------------------------------------------------

def sysctl_numa_balancing(v):
    with open("/proc/sys/kernel/numa_balancing", "w") as f:
        f.write(str(v))


SCAN_DELAY = "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms"


def kernel_scan_delay_ms(ms):
    """Sets how long the kernel's NUMA balancing waits before it first scans a new
    process (debugfs since 5.13; mounted here if it is not), and returns the old value
    for the scenario to put back. A scenario that asserts what the daemon decides about
    memory the kernel balances sets it long: else the kernel may have made that memory
    local before the daemon's first scan, and there is nothing left to decide."""
    if not os.path.exists(SCAN_DELAY):
        sh("mount", "-t", "debugfs", "debugfs", "/sys/kernel/debug", check_rc=False)
    check(os.path.exists(SCAN_DELAY), f"no {SCAN_DELAY} on this kernel")
    old = int(open(SCAN_DELAY).read())
    with open(SCAN_DELAY, "w") as f:
        f.write(str(ms))
    return old


def sys_list(path):
    """The numbers of a sysfs list file such as cpulist or has_memory ("0-3,8")."""
    out = []
    for part in open(path).read().strip().split(","):
        if part:
            a, _, b = part.partition("-")
            out.extend(range(int(a), int(b or a) + 1))
    return out


def node_cpus(node):
    with open(f"/sys/devices/system/node/node{node}/cpulist") as f:
        return f.read().strip()


def cpu_nodes():
    out = {}
    for d in os.listdir("/sys/devices/system/node"):
        if d.startswith("node") and d[4:].isdigit():
            for c in sys_list(f"/sys/devices/system/node/{d}/cpulist"):
                out[c] = int(d[4:])
    return out


def memory_nodes():
    return sys_list("/sys/devices/system/node/has_memory")


def node_free_mb(node):
    with open(f"/sys/devices/system/node/node{node}/meminfo") as f:
        for line in f:
            if "MemFree:" in line:
                return int(line.split()[-2]) // 1024
    return 0


# --- what a scenario starts --------------------------------------------------

class Env:
    def __init__(self, build, out, as_shipped=False):
        # as_shipped: the daemon runs as numabalanced.service and the tenants are not
        # root (tests/vm/shipped.py); a scenario reads env.shipped where the two differ.
        self.shipped = as_shipped
        self.build = build
        self.out = out
        self.daemon_bin = os.path.join(build, "daemon", "numabalanced")
        self.ctl = os.path.join(build, "ctl", "numabalancectl")
        self.workload = os.path.join(build, "tests", "vm", "workload")
        # Config files, logs, ready files and wrappers: only root reads and writes them.
        self.tmp = nbtest.tmpdir("engine-")
        self.conf = os.path.join(self.tmp, "numabalanced-test.conf")
        self.procs = []
        self.daemon = None
        self.daemon_log = None
        self.cgroups = []
        self.last_log = ""

    def tmp_path(self, name):
        """A fresh path in the run's temporary directory."""
        return os.path.join(self.tmp, f"{name}.{time.time_ns()}")

    # --- cgroups -------------------------------------------------------------
    def cgroup(self, name, mode=None, xattr="trusted.numabalanced", mems=None, cpus=None):
        path = os.path.join(CG, name)
        os.makedirs(path, exist_ok=True)
        self.cgroups.append(path)
        if mems is not None or cpus is not None:
            with open(os.path.join(CG, "cgroup.subtree_control"), "w") as f:
                f.write("+cpuset")
            if cpus is not None:
                with open(os.path.join(path, "cpuset.cpus"), "w") as f:
                    f.write(cpus)
            if mems is not None:
                with open(os.path.join(path, "cpuset.mems"), "w") as f:
                    f.write(mems)
        if self.shipped:
            shipped.delegate(path)
        if mode:
            self.set_mode(path, mode, xattr)
        return path

    def set_mode(self, path, mode, xattr="trusted.numabalanced"):
        """Opts path in (mode) or out (None): by root with xattr, or as shipped by its
        tenant with user.numabalanced."""
        if self.shipped:
            shipped.set_mode(path, mode)
        elif mode:
            os.setxattr(path, xattr, mode.encode())
        else:
            os.removexattr(path, xattr)

    def exe(self, path):
        """A program of the build to run as the workload: a copy any user can run when
        the tenant is not root."""
        return copy_for_any_user(path) if self.shipped else path

    def ready_path(self, name):
        """A fresh path a workload may write (the tenant's, when it is not root)."""
        if self.shipped:
            return os.path.join(shipped.tenant_tmp(), f"{name}.{time.time_ns()}")
        return self.tmp_path(name)

    def enter(self, procs_file):
        """A preexec_fn: join the cgroup (as root), then become the tenant if shipped."""
        def fn():
            if procs_file:
                with open(procs_file, "w") as f:
                    f.write(str(os.getpid()))
            if self.shipped:
                shipped.become_tenant()
        return fn

    # --- workloads -----------------------------------------------------------
    def start_workload(self, cgroup, size_mb, touch, run, policy="default", threads=1, pages="system", env=None,
                       prefix=()):
        """tests/vm/workload in cgroup (None: where we are): size_mb first-touched on node
        touch, its threads on node run. prefix: a command it runs under (numactl ...).
        Returns (Popen, region start, region length)."""
        ready = self.ready_path(f"ready.{len(self.procs)}")
        procs_file = os.path.join(cgroup, "cgroup.procs") if cgroup else None
        p = subprocess.Popen([*prefix, self.exe(self.workload), str(size_mb), str(touch), str(run), policy,
                              str(threads), ready, pages],
                             preexec_fn=self.enter(procs_file), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=dict(os.environ, **env) if env else None)
        self.procs.append(p)
        p.ready = ready
        wait_ready(p, ready, "workload")
        pid, start, length = open(ready).read().split()[:3]
        return p, int(start, 16), int(length)

    def show(self, pid):
        r = sh(self.ctl, "show", "--json", str(pid))
        return json.loads(r.stdout)

    def status(self):
        """The daemon's status as numabalancectl status --json gives it."""
        return json.loads(sh(self.ctl, "status", "--json").stdout)

    def pages_moved(self, pid):
        """The pages the daemon moved of pid (numabalancectl list --json's pages_moved):
        its own moves, which /proc/vmstat mixes with the kernel's compaction."""
        procs = json.loads(sh(self.ctl, "list", "--json").stdout).get("processes", [])
        mine = [q for q in procs if q.get("pid") == pid]
        check(mine, f"list does not show pid {pid}")
        return mine[0]["pages_moved"]

    def region_nodes(self, pid, start):
        """Pages per node of the VMA at start, from numa_maps directly (the kernel's view)."""
        for vma, nodes in numa_maps_nodes(pid):
            if vma == start:
                return nodes
        fail(f"no VMA at {start:#x} in pid {pid}")

    def pages_off_node(self, pid, node, skip_start):
        """pid's pages on nodes other than node, outside the VMA at skip_start: what may
        follow its threads when they are placed on node. How much that is depends on
        chance: whether a thread's stack top falls in a 2 MiB-aligned block inside its
        mapping (a transparent huge page, 512 pages) follows from the address layout,
        so a scenario counts this before placing rather than assume a fixed number
        (23 pages in one run; 1,078 moved in a CI run, which two stack THPs and 54
        small pages make). numa_maps counts a huge page as its base pages. node None: every
        page outside that VMA (for a daemon already running, which may have moved some)."""
        return sum(n for vma, nodes in numa_maps_nodes(pid) if vma != skip_start
                   for k, n in nodes.items() if node is None or k != node)

    # --- the daemon ----------------------------------------------------------
    def start_daemon(self, extra_conf="", service_cpus="0", args=(), shipped_timing=False, daemon_bin=None,
                     log_level="debug"):
        """Writes self.conf and starts the daemon on it. shipped_timing: keep the shipped
        tick and scan intervals (for timings); otherwise tick faster so that the
        functional scenarios finish sooner. daemon_bin: a wrapper to run instead.
        log_level: the benchmarks run the shipped info (debug writes a line a tick)."""
        timing = "" if shipped_timing else "tick_ms = 500\nscan_min_ms = 500\nscan_max_ms = 4000\n"
        with open(self.conf, "w") as f:
            f.write(f"[daemon]\nservice_cpus = {service_cpus}\n{timing}log_level = {log_level}\n{extra_conf}\n")
        self.run_daemon(self.conf, args, daemon_bin)

    def run_daemon(self, conf, args=(), daemon_bin=None):
        """Starts the daemon on a config file of the scenario's own."""
        self.daemon_log = self.tmp_path("numabalanced") + ".log"
        if self.shipped:
            if args or daemon_bin:
                fail("this scenario starts the daemon with its own command line: not as shipped")
            os.makedirs(shipped.TEST_DIR, exist_ok=True)
            unit_conf = os.path.join(shipped.TEST_DIR, "numabalanced.conf")
            with open(conf) as src, open(unit_conf, "w") as dst:
                dst.write(src.read())
            self.daemon, self.daemon_t0 = shipped.start(self.build, unit_conf, self.daemon_log)
            time.sleep(0.5)
            check(self.daemon.poll() is None, f"the unit did not start: {self.log()}")
            return
        self.daemon = subprocess.Popen([daemon_bin or self.daemon_bin, "--foreground", "--config", conf, *args],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # Each line gets the seconds since the daemon started, for the timings.
        t0 = self.daemon_t0 = time.time()

        def pump(src, dst):
            with open(dst, "w") as log:
                for line in iter(src.readline, b""):
                    log.write(f"{time.time() - t0:8.2f} {line.decode(errors='replace')}")
                    log.flush()

        pumping = threading.Thread(target=pump, args=(self.daemon.stdout, self.daemon_log), daemon=True)
        pumping.start()
        time.sleep(0.5)
        if self.daemon.poll() is not None:
            pumping.join(5)   # its last lines, which say why
            fail(f"daemon exited at start (status {self.daemon.returncode}): {self.log()}")

    def log(self):
        if not self.daemon_log or not os.path.exists(self.daemon_log):
            return ""
        self.last_log = open(self.daemon_log).read()
        return self.last_log

    def stop_daemon(self):
        self.log()
        if self.daemon and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                if hasattr(self.daemon, "wait_main"):
                    # Under the unit: the daemon within 30 s, then ExecStopPost=
                    # (shipped.py, STOP_POST_S).
                    self.daemon.wait_main(30)
                rc = self.daemon.wait(30 if not hasattr(self.daemon, "wait_main") else 200)
            except subprocess.TimeoutExpired:
                rc = self.stop_held_daemon()
            check(rc == 0, f"daemon exit status {rc}")
        self.daemon = None

    def stop_held_daemon(self):
        """The daemon did not stop within 30 s of SIGTERM. When one of its threads is in a
        move call in the kernel, that call is waited for (240 s in all): the daemon stops
        between calls, and under TCG one call has taken 60-80 s (docs/TESTING.md); it
        must then have warned of the slow call. Otherwise, or past that, it fails with
        where each thread was. Returns the exit status."""
        pid = self.daemon.pid
        if in_move_call(pid):
            print(f"a move call of the daemon held in the kernel 30 s after SIGTERM, waiting up to 240 s:\n"
                  f"{kernel_stacks(pid)}", flush=True)
            try:
                rc = self.daemon.wait(200)
                time.sleep(0.5)   # the pump thread's last lines
                check(SLOW_CALL in self.log(), "the daemon stopped after a held move call without warning of it")
                return rc
            except subprocess.TimeoutExpired:
                pass
        # Where each thread is, twice a second apart (a syscall that moves on, or one
        # that does not), before the kill; then the log with its last lines.
        stacks = [kernel_stacks(pid)]
        time.sleep(1)
        stacks.append(kernel_stacks(pid))
        self.daemon.kill()
        try:
            self.daemon.wait(60)
        except subprocess.TimeoutExpired:
            stacks.append("still there 60 s after SIGKILL")
        time.sleep(0.5)   # the pump thread's last lines
        tail = "\n".join(self.log().splitlines()[-15:])
        fail("daemon did not stop after SIGTERM; its threads, 1 s apart:\n"
             + "\n--\n".join(stacks) + f"\nthe log's last lines:\n{tail}")

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.procs = []
        if self.daemon and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        for path in reversed(self.cgroups):
            try:
                os.rmdir(path)
            except OSError:
                pass
        self.cgroups = []
        # A scenario that enabled +cpuset (cgroup(mems=/cpus=)) must not leave it on for
        # the next ones: in a child cpuset, a CPU coming online resets every task's
        # affinity to the cpuset's CPUs (6.1). Left on by guards, it unpinned
        # cpu-offline's workload from node 1 as CPU 1 returned, and numabalancectl show
        # and numa_maps, read moments apart, saw its thread on different nodes.
        try:
            with open(os.path.join(CG, "cgroup.subtree_control"), "w") as f:
                f.write("-cpuset")
        except OSError:
            pass


WARMED = False


def warm_memory(env):
    """Has the host back the guest's free memory before anything is timed. QEMU maps a
    TCG guest's RAM and the host allocates it on first touch, so the first run after
    boot that writes to fresh guest memory (a migration's target pages) pays host page
    faults that later runs do not: the first of ten alternating misplaced runs took
    4.97 s against 1.92-2.66 s for the nine after it, whichever balancer ran first.
    Once per guest boot: 80% of every node's free memory is touched, bound to the
    node, and released. The benchmarks call it, and of the CI scenarios (a) and its
    kernel twin, the one pair whose times are read side by side (about 25 s)."""
    global WARMED
    if WARMED:
        return
    for node in memory_nodes():
        mb = node_free_mb(node) * 8 // 10
        if mb < 64:
            continue
        # A node without CPUs (2n1m's node 2) is touched from node 0, bound to it.
        run = node if node in cpu_nodes().values() else 0
        p, _, _ = env.start_workload(None, mb, run, run, policy=f"bind:{node}")
        p.kill()
        p.wait()
        env.procs.remove(p)
    WARMED = True


# --- where the memory is -----------------------------------------------------

CPU_NODE = None


def local_share_direct(pid):
    """The local share as numabalancectl show computes it, read in-process: polling
    with show every 0.25 s would spend a vCPU on process start-up, which in a 1-vCPU
    node is the very CPU the daemon copies on."""
    global CPU_NODE
    if CPU_NODE is None:
        CPU_NODE = cpu_nodes()
    nodes = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except FileNotFoundError:
            continue
        nodes.add(CPU_NODE.get(int(stat.rsplit(")", 1)[1].split()[36]), -1))
    total = local = 0
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            kb = 4
            counts = []
            for tok in line.split()[1:]:
                if tok.startswith("kernelpagesize_kB="):
                    kb = int(tok.split("=")[1])
                elif tok.startswith("N") and "=" in tok and tok[1:].split("=")[0].isdigit():
                    k, v = tok[1:].split("=")
                    counts.append((int(k), int(v)))
            for node, pages in counts:
                total += pages * kb
                if node in nodes:
                    local += pages * kb
    return local / total if total else 0.0


def wait_local(env, pid, target_share, timeout, on_poll=None):
    """Polls until the local share >= target; returns seconds taken or None. With
    on_poll, each poll goes through numabalancectl show --json (what a user sees) and
    on_poll gets the document; otherwise numa_maps is read directly, and the final
    answer is still checked with show."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if on_poll:
            d = env.show(pid)
            on_poll(d)
            share = d["local_share"]
        else:
            share = local_share_direct(pid)
        if share >= target_share:
            took = time.time() - t0
            # The workloads' threads are pinned to one node, so the two reads see the
            # same nodes (a CI run that did not was a cpuset resetting the pinning:
            # see Env.cleanup).
            check(on_poll or env.show(pid)["local_share"] >= target_share,
                  "numabalancectl show disagrees with numa_maps")
            return took
        # 0.1 s: the resolution of every time-to-95% figure (reading numa_maps in
        # process costs a few ms of a vCPU).
        time.sleep(0.1 if not on_poll else 0.5)
    return None


def node_share(env, pid, start, node):
    nodes = env.region_nodes(pid, start)
    total = sum(nodes.values())
    return nodes.get(node, 0) / total if total else 0.0


def wait_log(env, text, timeout=60):
    deadline = time.time() + timeout
    while text not in env.log():
        if time.time() >= deadline:
            fail(f"the daemon never logged {text!r}")
        time.sleep(0.1)


# --- thread placement (mode place) --------------------------------------------

def thread_cpus(pid, tid):
    """A thread's CPU affinity as the kernel has it (Cpus_allowed_list), a sorted list."""
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return sys_list_text(line.split(":", 1)[1])
    return []


def sys_list_text(text):
    out = []
    for part in text.strip().split(","):
        if part:
            a, _, b = part.partition("-")
            out.extend(range(int(a), int(b or a) + 1))
    return out


def all_thread_cpus(pid):
    """{tid: affinity} of every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = thread_cpus(pid, tid)
        except OSError:
            pass
    return out


def thread_node(pid, tid):
    """The node of the CPU the thread last ran on (stat field 39)."""
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return cpu_nodes()[int(fields[36])]


def thread_runtime_ns(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])


def process_node_pages(pid):
    """{node: pages} of the whole process, from numa_maps (base and huge pages alike
    counted in 4 KiB units)."""
    out = {}
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            kb = 4
            for tok in line.split():
                if tok.startswith("kernelpagesize_kB="):
                    kb = int(tok.split("=")[1])
            for tok in line.split():
                if tok.startswith("N") and "=" in tok:
                    k, v = tok[1:].split("=")
                    out[int(k)] = out.get(int(k), 0) + int(v) * kb // 4
    return out


def vmstat(key):
    with open("/proc/vmstat") as f:
        for line in f:
            k, v = line.split()
            if k == key:
                return int(v)
    return 0


def wait_ready(p, ready, what, timeout=120):
    """Waits for process p's ready file; fails if p exits first or the time runs out."""
    deadline = time.time() + timeout
    while not os.path.exists(ready):
        if p.poll() is not None:
            fail(f"{what} exited: {p.stderr.read().decode()}")
        if time.time() >= deadline:
            fail(f"{what} did not get ready")
        time.sleep(0.2)


def numa_maps_nodes(pid):
    """[(VMA start, {node: pages})] from /proc/pid/numa_maps."""
    out = []
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            fields = line.split()
            nodes = {}
            for tok in fields:
                if tok.startswith("N") and "=" in tok:
                    k, v = tok[1:].split("=")
                    nodes[int(k)] = int(v)
            out.append((int(fields[0], 16), nodes))
    return out


def start_gather(env, cg, size_mb, touch, start, threads=2, affinity="free", policy="default"):
    """tests/vm/gather in cgroup cg: size_mb first-touched on node touch, threads
    reading it started on node start (free: their affinity given back, so the
    scheduler or the daemon may move them; pinned: the application's own choice).
    Returns (Popen, region start, [reader tids])."""
    ready = env.ready_path(f"gather.{len(env.procs)}")
    exe = env.exe(os.path.join(env.build, "tests", "vm", "gather"))
    p = subprocess.Popen([exe, str(size_mb), str(touch), str(start), str(threads), affinity, policy, ready],
                         preexec_fn=env.enter(os.path.join(cg, "cgroup.procs")), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    env.procs.append(p)
    wait_ready(p, ready, "gather")
    fields = open(ready).read().split()
    return p, int(fields[1], 16), [int(t) for t in fields[3:]]


def explain(env, pid):
    return json.loads(sh(env.ctl, "explain", "--json", str(pid)).stdout)
