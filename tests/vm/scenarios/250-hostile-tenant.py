# SPDX-License-Identifier: GPL-2.0-or-later
"""A hostile tenant cannot stop the daemon serving root: bounded fds, RSS, tick.

hostile-tenant:place makes the tenant's ten opted-in balance subtrees place instead
(2,000 cgroups whose processes the placer reads), the rest unchanged.

An unprivileged user (uid 1000) with a delegated subtree makes 20,100 cgroups, opts
50 subtrees of them in (10,050 cgroups, advise and balance, user.numabalanced), puts
a sleeping process in 2,000 of those (2,000 processes), writes junk values on 1,050
more and keeps 16 idle connections to the control socket (reconnecting as they are
closed). Root's misplaced 128 MiB workload, opted in with trusted.numabalanced in a
cgroup that comes after the tenant's by name, must reach 95% local within twice the
time it takes in the same guest without the tenant, or that time plus 15 s when that is
more (a host loaded by other work stretched 1.59 s alone to 6.37 s beside the tenant in
one run; a tenant that stopped the daemon from serving root would take minutes or never
get there) (the median of five runs each,
each placed outside and moved into its cgroup right after a tick, the daemon with its
shipped timing, the tenant's processes all seen once). Meanwhile, sampled every 0.5 s: the daemon's descriptors
(/proc/PID/fd), its VmRSS and its tick time (status last_tick_ns) stay under the
bounds below; root's status request is answered within 1 s every time (numabalancectl
status, run every tenth sample, must succeed; its time is reported); the
daemon is the same process at the end (never restarted) and logged at most 10
invalid settings one by one. The numbers go into engine-hostile-tenant.json.
"""
import json
import os
import signal
import socket
import subprocess
import threading
import time

from scenario import CG, check, copy_for_any_user, fail, sh, sysctl_numa_balancing, wait_local

TENANT_UID = 1000
GROUPS, PER_GROUP = 100, 200          # 20,000 cgroups
PROCS = 2000
# The bounds (numabalanced(8), LIMITS), and what they held in the 2n2c TCG guest.
# Descriptors: the tenant's processes are below min_rss, so none holds a pidfd; what
# is left is the daemon's own (BPF maps and programs, the event loop's), 8 control
# connections of the tenant's (per uid), root's, and the walk's (32 held).
MAX_FDS = 64
# RSS: the records of 2,000 processes and 10,050 cgroups on top of about 8 MB (11 MB).
MAX_RSS_KB = 32 * 1024
# Tick: the walk of 20,100 cgroups runs in its own thread (1.9 s a walk here, then a
# pause three times as long); a tick reads each owner's cgroups for 200 ms at most
# (all of the tenant's 10,050 cgroup.procs took 1.5 s here: TCG makes every system
# call slow), keeps the rest for the next ticks, serves status every 100 ms and runs
# root's moves after 100 ms: 0.46 s at most while the tenant's 2,000 processes were
# new, 0.76 s after. Both far below WatchdogSec (30 s). MAX_TICK_S bounds the ticks
# that run none of root's moves: a tick waits for its migration run, and root's 128 MiB
# took 1.8 and 2.8 s of one tick in two runs under TCG (max_tick_s_moving, reported).
MAX_TICK_FIRST_SIGHT_S = 3.0
MAX_TICK_S = 1.5
# Status: the daemon serves its socket every 100 ms, in a tick too. The request is
# timed over the socket, as numabalancectl sends it, not numabalancectl's run: in a
# TCG guest sharing the host's two cores with another guest, one sample of
# numabalancectl's whole run (fork and exec from this test's Python included) took
# 1.40 s in CI. Two such guests run at once here: the request over the socket took at
# most 0.42 and 0.26 s, numabalancectl's run 0.85 and 1.05 s. Its time is still
# reported (max_ctl_status_s).
MAX_STATUS_S = 1.0
SOCK = "/run/numabalanced/control"
RUNS = 5
WORKLOAD_MB = 128

# The tenant, as uid 1000, in its own subtree: cgroups, opt-ins and junk, processes,
# and connections held open. Prints "ready" once all of it is in place; on SIGTERM
# kills its children and reaps them.
TENANT = r'''
import os, select, signal, socket, subprocess, sys, time
root, sock_path, groups, per_group, nprocs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
sleepers_path = sys.argv[6]
mode = sys.argv[7].encode()
t0 = time.monotonic()
for g in range(groups):
    os.mkdir(f"{root}/g{g:03d}")
    for c in range(per_group):
        os.mkdir(f"{root}/g{g:03d}/c{c:03d}")
t_cgroups = time.monotonic() - t0
# Opted in: g000-g039 advise, g040-g049 balance or place (their 200 children inherit it).
for g in range(50):
    os.setxattr(f"{root}/g{g:03d}", "user.numabalanced", b"advise" if g < 40 else mode)
# Junk: on g050-g099 and 20 children of each (1,050 values).
junk = 0
for g in range(50, groups):
    os.setxattr(f"{root}/g{g:03d}", "user.numabalanced", b"junk\n%d" % g)
    junk += 1
    for c in range(20):
        os.setxattr(f"{root}/g{g:03d}/c{c:03d}", "user.numabalanced", b"\x01bogus%d" % c)
        junk += 1
t_xattrs = time.monotonic() - t0 - t_cgroups
# The processes: tests/vm/sleepers forks them from one small program (2,000 forks and
# execs of sleep(1) took 139 s under TCG; forked interpreters filled the guest's memory).
sleepers = subprocess.Popen([sleepers_path] + [f"{root}/g{i % 50:03d}/c{i // 50:03d}/cgroup.procs"
                                               for i in range(nprocs)], stdout=subprocess.PIPE, text=True)
joined = sleepers.stdout.readline().split()
if joined != ["ready", str(nprocs)]:
    sys.exit(f"sleepers: {joined}")

def stop(*_):
    sleepers.terminate()
    sleepers.wait()
    os._exit(0)
signal.signal(signal.SIGTERM, stop)

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
    except OSError:
        s.close()
        return None
    return s
# 16 connections held idle: one the daemon answers (the request timeout's error, or
# "busy") is closed and opened again 0.2 s later.
held = [None] * 16
t_procs = time.monotonic() - t0 - t_cgroups - t_xattrs
print(f"ready {junk} {t_cgroups:.1f} {t_xattrs:.1f} {t_procs:.1f}", flush=True)
while True:
    for i in range(16):
        if held[i] is None:
            held[i] = connect()
    live = [s for s in held if s is not None]
    r, _, _ = select.select(live, [], [], 0.2)
    for s in r:
        s.close()
        held[held.index(s)] = None
    if r:
        time.sleep(0.2)
'''


def delegate(path):
    """The directory and its interface files to the tenant, as systemd delegates."""
    for f in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
        os.chown(os.path.join(path, f), TENANT_UID, TENANT_UID)


def remove_tree(path):
    """rmdir of every cgroup below path, children first."""
    for dirpath, _, _ in os.walk(path, topdown=False):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


def start_daemon(env):
    """The shipped timing and log level (ticks of 1 s, scans from 1 s to 30 s)."""
    with open(env.conf, "w") as f:
        f.write("[daemon]\nservice_cpus = 0\nlog_level = info\n")
    env.run_daemon(env.conf)


def status(env):
    """root's status; while the daemon starts (no socket yet), asked again for 60 s."""
    deadline = time.time() + 60
    while True:
        r = sh(env.ctl, "status", "--json", check_rc=False)
        if r.returncode == 0:
            return json.loads(r.stdout)
        if time.time() >= deadline or env.daemon.poll() is not None:
            fail(f"numabalancectl status: {r.stderr.strip()}")
        time.sleep(0.2)


def wait_ticks(env, n):
    """Until n more ticks have ended (right after the last one, when n > 0)."""
    end = status(env)["ticks"] + n
    deadline = time.time() + 120
    while status(env)["ticks"] < end:
        if time.time() >= deadline:
            fail(f"the daemon did not tick {n} times within 120 s")
        time.sleep(0.05)


def time_to_local(env, cg, mon=None):
    """Root's misplaced workload, placed outside cg and moved into it right after a
    tick (so that every run waits about as long for the next one): the median of RUNS
    runs' seconds from the move to 95% local. Started in cg, the daemon could see it
    before its memory was placed, find nothing to move yet and come back a scan later:
    in CI that took 3 of 5 runs beside the tenant, 1 of 5 alone, and a ratio of 2.25.
    mon: told while root's moves may be in a tick (until two ticks after 95%)."""
    times = []
    for _ in range(RUNS):
        p, _, _ = env.start_workload(None, WORKLOAD_MB, 0, 1)
        wait_ticks(env, 1)
        if mon:
            mon.moving = True
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
        t = wait_local(env, p.pid, 0.95, 180)
        check(t is not None, "root's workload was not 95% local within 180 s")
        times.append(t)
        p.kill()
        p.wait()
        env.procs.remove(p)
        if mon:
            wait_ticks(env, 2)
            mon.moving = False
    return sorted(times)[RUNS // 2], times


def status_request():
    """Root's status request over the control socket, as numabalancectl sends it: the
    reply's text ('' when the connection failed: a sampling error)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    try:
        s.connect(SOCK)
        s.sendall(b"status\n")
        out = b""
        while True:
            d = s.recv(65536)
            if not d:
                return out.decode(errors="replace")
            out += d
    except OSError as e:
        return f"({e})"
    finally:
        s.close()


class Monitor:
    """Samples the daemon every 0.5 s: descriptors, VmRSS, and root's status (its
    answer time, last_tick_ns, the processes watched)."""

    def __init__(self, env):
        self.env = env
        self.pid = env.daemon.pid
        self.started = time.time()
        self.max_status_at = None
        self.max_fds = self.max_rss_kb = 0
        self.max_tick_s = self.max_status_s = self.max_tick_moving_s = self.max_ctl_s = 0.0
        self.moving = False        # root's workload is being moved: ticks wait for it
        self.watched = 0
        self.samples = 0
        self.errors = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                self.max_fds = max(self.max_fds, len(os.listdir(f"/proc/{self.pid}/fd")))
                with open(f"/proc/{self.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            self.max_rss_kb = max(self.max_rss_kb, int(line.split()[1]))
            except OSError as e:
                self.errors.append(f"reading /proc/{self.pid}: {e}")
            t0 = time.time()
            reply = status_request()
            took = time.time() - t0
            if took > self.max_status_s:
                self.max_status_s = took
                self.max_status_at = round(t0 - self.started, 1)
            if self.samples % 10 == 0:
                # numabalancectl itself, every tenth sample: its time is reported,
                # not bounded (see MAX_STATUS_S).
                t0 = time.time()
                r = subprocess.run([self.env.ctl, "status", "--json"], capture_output=True, text=True, timeout=30)
                self.max_ctl_s = max(self.max_ctl_s, time.time() - t0)
                if r.returncode != 0:
                    self.errors.append(f"numabalancectl status: rc {r.returncode}: {r.stderr[:200]!r}")
            try:
                st = json.loads(reply)
                if self.moving:
                    self.max_tick_moving_s = max(self.max_tick_moving_s, st["last_tick_ns"] / 1e9)
                else:
                    self.max_tick_s = max(self.max_tick_s, st["last_tick_ns"] / 1e9)
                self.watched = st["processes_watched"]
                self.samples += 1
            except (ValueError, KeyError):
                self.errors.append(f"status: {reply[:200]!r}")
            time.sleep(0.5)

    def finish(self):
        self.stop = True
        self.thread.join(60)


def run(env, res, mode="balance"):
    """mode (hostile-tenant:place): what the tenant's g040-g049 opt in to."""
    check(mode in ("balance", "place"), f"hostile-tenant:{mode}: balance or place")
    res["tenant_mode"] = mode
    sysctl_numa_balancing(0)
    # After the tenant's by name, as /workload.slice comes after /user.slice.
    # As on a systemd host: the tenant's tree after system.slice by name (user.slice
    # is), root's workload after the tenant's. The walk shares its bound among a
    # directory's subtrees in name order, each an equal part of what is left, the rest
    # passing on to those after it: under systemd as PID 1 a tenant's tree named
    # nb-tenant came before the mounts' cgroups (sys-kernel-*.mount, ...) and
    # system.slice, got about an eighth of the bound and, with 20,100 cgroups, about
    # 79 of each group's 200 children (790 of the 2,000 processes watched).
    cg = env.cgroup("workload-nb", "balance")
    start_daemon(env)
    wait_ticks(env, 2)
    alone, runs = time_to_local(env, cg)
    res["seconds_to_95pct_local_alone"] = round(alone, 2)
    res["runs_alone"] = [round(t, 2) for t in runs]
    env.stop_daemon()

    tenant_root = env.cgroup("user-nb-tenant")
    delegate(tenant_root)
    sock = SOCK
    tenant = None
    try:
        def enter():
            with open(os.path.join(tenant_root, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        # The tenant (uid 1000) runs sleepers itself: from a copy it can reach, not from
        # the build directory (whose parents may be closed to it).
        sleepers = copy_for_any_user(os.path.join(env.build, "tests", "vm", "sleepers"))
        t0 = time.time()
        # Its memory on node 0: root's workload moves to node 1, which the tenant's
        # processes must not have filled (they are not what is measured).
        tenant = subprocess.Popen(["setpriv", f"--reuid={TENANT_UID}", f"--regid={TENANT_UID}", "--clear-groups",
                                   "numactl", "--membind=0", "/usr/bin/python3", "-c", TENANT, tenant_root, sock, str(GROUPS), str(PER_GROUP),
                                   str(PROCS), sleepers, mode],
                                  preexec_fn=enter, cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        line = tenant.stdout.readline().split()
        if not line or line[0] != "ready":
            fail(f"the tenant did not get ready: {line} {tenant.stderr.read()[-2000:]}")
        res["tenant_setup_s"] = round(time.time() - t0, 1)
        res["tenant_junk_values"] = int(line[1])
        # Where the setup's time went: mkdir, setxattr, fork and exec.
        res["tenant_setup_split_s"] = dict(zip(("cgroups", "xattrs", "processes"), map(float, line[2:5])))
        res["tenant_cgroups"] = GROUPS * PER_GROUP + GROUPS
        res["tenant_processes"] = PROCS

        # What one walk of the whole tree costs here (the walker thread's, not the tick's).
        t1 = time.time()
        sh(os.path.join(env.build, "tests", "vm", "select-dump"), CG)
        res["walk_s"] = round(time.time() - t1, 3)
        t_daemon = time.time()
        start_daemon(env)
        # Sampled once it answers: its start (the page sampler's self-check among the
        # rest) may take longer than run_daemon's half second.
        status(env)
        mon = Monitor(env)
        # First sight of the tenant: its 2,000 processes are each read once.
        deadline = time.time() + 300
        while mon.watched < PROCS:
            if time.time() >= deadline:
                fail(f"the daemon watched {mon.watched} processes after 300 s (the tenant has {PROCS})")
            time.sleep(0.5)
        wait_ticks(env, 3)
        res["max_tick_s_first_sight"] = round(mon.max_tick_s, 3)
        res["first_sight_s"] = round(time.time() - t_daemon, 1)
        mon.max_tick_s = 0.0
        t, runs = time_to_local(env, cg, mon)
        res["seconds_to_95pct_local_hostile"] = round(t, 2)
        res["runs_hostile"] = [round(x, 2) for x in runs]
        # A few more seconds of the steady state.
        time.sleep(10)
        mon.finish()
        res.update(max_fds=mon.max_fds, max_rss_kb=mon.max_rss_kb, max_tick_s=round(mon.max_tick_s, 3),
                   max_tick_s_moving=round(mon.max_tick_moving_s, 3),
                   max_status_s=round(mon.max_status_s, 3), max_status_at_s=mon.max_status_at,
                   max_ctl_status_s=round(mon.max_ctl_s, 3),
                   processes_watched=mon.watched,
                   samples=mon.samples)
        print(json.dumps(res), flush=True)
        check(t <= max(2 * alone, alone + 15), f"root's workload took {t:.2f} s to 95% local beside the tenant, "
              f"more than twice its {alone:.2f} s alone and more than 15 s beyond it")
        check(res["max_tick_s_first_sight"] <= MAX_TICK_FIRST_SIGHT_S,
              f"a tick took {res['max_tick_s_first_sight']:.2f} s while the tenant's processes were first read "
              f"(bound {MAX_TICK_FIRST_SIGHT_S})")
        check(not mon.errors, f"sampling the daemon failed: {mon.errors[:3]}")
        check(mon.watched >= PROCS, f"the daemon watched only {mon.watched} processes (the tenant has {PROCS})")
        check(mon.max_fds <= MAX_FDS, f"the daemon held {mon.max_fds} descriptors (bound {MAX_FDS})")
        check(mon.max_rss_kb <= MAX_RSS_KB, f"the daemon's RSS reached {mon.max_rss_kb} kB (bound {MAX_RSS_KB})")
        check(mon.max_tick_s <= MAX_TICK_S, f"a tick took {mon.max_tick_s:.2f} s (bound {MAX_TICK_S})")
        check(mon.max_status_s <= MAX_STATUS_S, f"root's status took {mon.max_status_s:.2f} s (bound 1 s)")
        check(env.daemon.poll() is None and mon.pid == env.daemon.pid, "the daemon did not survive the tenant")
        log = env.log()
        one_by_one = log.count("treating as unset")
        res["invalid_logged_one_by_one"] = one_by_one
        check(one_by_one <= 10, f"{one_by_one} invalid settings logged one by one (at most 10 a minute)")
        check("not logged one by one" in log, "the invalid settings not logged were not counted")
        env.stop_daemon()
    finally:
        if env.daemon_log:
            subprocess.run(["cp", env.daemon_log, os.path.join(env.out, "hostile-tenant-daemon.log")])
        if tenant and tenant.poll() is None:
            tenant.send_signal(signal.SIGTERM)
            try:
                tenant.wait(120)
            except subprocess.TimeoutExpired:
                tenant.kill()
                tenant.wait()
        remove_tree(tenant_root)
