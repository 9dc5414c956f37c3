# SPDX-License-Identifier: GPL-2.0-or-later
"""A second hostile tenant: big maps, hopping threads, a busy mmap lock, list floods.

An unprivileged user (uid 1000) opts its own delegated cgroup in (user.numabalanced
= balance) and runs tests/vm/hostile2 there: 16,384 one-page file mappings named with
200 newlines each (a numa_maps of about 14 MB, every newline escaped to four bytes),
256 threads across both nodes, each moving to the other node every 50 ms (a
node-change event each time), and a thread that keeps its mmap lock busy (mmap,
mprotect, munmap of 64 MiB in a loop), all on CPUs 1-3 (the service CPU is 0); beside it the same user asks the control
socket for `list` in a loop as fast as it answers. Root's misplaced 128 MiB workload
must reach 95% local within twice the time (or that time plus 15 s when that is more:
TCG timings on a loaded host) it takes in the same guest without the
tenant (the median of five runs each); meanwhile, sampled every 0.5 s, the daemon's
descriptors, VmRSS and tick time stay under the bounds below, root's status request
is answered within 1 s every time, and the daemon is the same process at the end.
The numbers (and how many of the tenant's processes were quarantined) go into
engine-hostile-second.json.
"""
import json
import os
import signal
import subprocess
import time

from scenario import check, copy_for_any_user, fail, load, sysctl_numa_balancing

TENANT_UID = 1000
MAPS, THREADS = 16384, 256
# Bounds (numabalanced(8), LIMITS). Descriptors as in hostile-tenant (64). RSS: the
# streaming readers keep no file whole; what a scan keeps of the tenant's 16,384 VMAs
# is a few hundred bytes each: 64 MB with room. Tick: the reads of a tick stop after
# 2 s (checked between processes), one read of the tenant's files waits at most its
# deadline (2 s at its size), and a tick waits for its migration run, which ends at
# its budget (MOVE_BUDGET_RUN_MS, 10 s): the tenant's own 16,384 one-page mappings,
# each a range of its own and behind its busy mmap lock, make long runs (a tick of
# 13.1 s in CI). 15 s bounds a tick; far below WatchdogSec (30 s), and the socket is
# served every 100 ms through it (status is bounded at 1 s).
MAX_FDS = 64
MAX_RSS_KB = 64 * 1024
MAX_TICK_S = 15.0
MAX_STATUS_S = 1.0

# The same user floods `list` over the control socket: each reply read whole, the
# next request at once; counts what it got.
FLOOD = r'''
import socket, sys, time
sock_path = sys.argv[1]
n = busy = 0
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
        s.sendall(b"list\n")
        out = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
        n += 1
        busy += b"busy" in out[:64]
    except OSError:
        time.sleep(0.05)
    finally:
        s.close()
    if n % 200 == 0:
        print(n, busy, flush=True)
'''


def run(env, res):
    h = load("hostile-tenant")
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-workload", "balance")
    h.start_daemon(env)
    h.wait_ticks(env, 2)
    alone, runs = h.time_to_local(env, cg)
    res["seconds_to_95pct_local_alone"] = round(alone, 2)
    res["runs_alone"] = [round(t, 2) for t in runs]
    env.stop_daemon()

    tenant_cg = env.cgroup("nb-tenant2")
    h.delegate(tenant_cg)
    files = "/dev/shm/hostile2"
    os.makedirs(files, exist_ok=True)
    os.chown(files, TENANT_UID, TENANT_UID)
    tenant = flood = None
    try:
        def enter():
            with open(os.path.join(tenant_cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        hostile = copy_for_any_user(os.path.join(env.build, "tests", "vm", "hostile2"))
        as_tenant = ["setpriv", f"--reuid={TENANT_UID}", f"--regid={TENANT_UID}", "--clear-groups"]
        subprocess.run(as_tenant + ["setfattr", "-n", "user.numabalanced", "-v", "balance", tenant_cg], check=True)
        t0 = time.time()
        # Off the service CPU (0), as an operator keeps workloads off the daemon's CPUs
        # (numabalanced.conf(5), service_cpus): with its 257 threads allowed on CPU 0
        # too, root's move took 6.87 s beside it against 1.10 s alone (the daemon's
        # worker getting its fair share of a CPU among them) and status up to 2.3 s.
        # By affinity, not a cpuset: enabling cpuset here would reset the affinity of
        # root's workload when it joins its cgroup.
        tenant = subprocess.Popen(as_tenant + ["taskset", "-c", "1-3", hostile, files, str(MAPS), str(THREADS)],
                                  preexec_fn=enter, cwd="/",
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = tenant.stdout.readline().split()
        if line != ["ready"]:
            fail(f"the tenant did not get ready: {line} {tenant.stderr.read()[-2000:]}")
        res["tenant_setup_s"] = round(time.time() - t0, 1)
        with open(f"/proc/{tenant.pid}/numa_maps", "rb") as f:
            res["tenant_numa_maps_bytes"] = len(f.read())

        h.start_daemon(env)
        h.status(env)
        flood = subprocess.Popen(as_tenant + ["/usr/bin/python3", "-c", FLOOD, h.SOCK], cwd="/",
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        mon = h.Monitor(env)
        h.wait_ticks(env, 5)
        t, runs = h.time_to_local(env, cg, mon)
        res["seconds_to_95pct_local_hostile"] = round(t, 2)
        res["runs_hostile"] = [round(x, 2) for x in runs]
        time.sleep(10)
        mon.finish()
        st = h.status(env)
        log = env.log()
        res["quarantined_logged"] = log.count("quarantined for")
        res.update(max_fds=mon.max_fds, max_rss_kb=mon.max_rss_kb,
                   max_tick_s=round(mon.max_tick_s, 3), max_tick_s_moving=round(mon.max_tick_moving_s, 3),
                   max_status_s=round(mon.max_status_s, 3), samples=mon.samples,
                   ticks=st.get("ticks"))
        print(json.dumps(res), flush=True)
        check(t <= max(2 * alone, alone + 15), f"root's workload took {t:.2f} s to 95% local beside the tenant, "
              f"more than twice its {alone:.2f} s alone and more than 15 s beyond it")
        check(not mon.errors, f"sampling the daemon failed: {mon.errors[:3]}")
        check(mon.max_fds <= MAX_FDS, f"the daemon held {mon.max_fds} descriptors (bound {MAX_FDS})")
        check(mon.max_rss_kb <= MAX_RSS_KB, f"the daemon's RSS reached {mon.max_rss_kb} kB (bound {MAX_RSS_KB})")
        check(max(mon.max_tick_s, mon.max_tick_moving_s) <= MAX_TICK_S,
              f"a tick took {max(mon.max_tick_s, mon.max_tick_moving_s):.2f} s (bound {MAX_TICK_S})")
        check(mon.max_status_s <= MAX_STATUS_S, f"root's status took {mon.max_status_s:.2f} s (bound 1 s)")
        check(env.daemon.poll() is None and mon.pid == env.daemon.pid, "the daemon did not survive the tenant")
        env.stop_daemon()
    finally:
        if env.daemon_log:
            subprocess.run(["cp", env.daemon_log, os.path.join(env.out, "hostile-second-daemon.log")])
        for p in (flood, tenant):
            if p and p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        subprocess.run(["rm", "-rf", files])
        try:
            os.rmdir(tenant_cg)
        except OSError:
            pass
