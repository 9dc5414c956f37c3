#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The shipped unit under a real systemd (PID 1 of a test-bed guest, vmrun --systemd).

    test-systemd.py --build BUILD_DIR

Installs BUILD_DIR/systemd/numabalanced.service as generated (in /run/systemd/system)
with one drop-in that points ExecStart at a copy of the freshly built daemon and a
test configuration, and checks, with systemctl and journalctl as an operator would:
  - start: Type=notify start returns, is-active, the sandbox in effect on the main
    process (capability bounding set, NoNewPrivs, seccomp, read-only root),
    kernel_numa_balancing=disable through ProtectKernelTunables= (the one writable
    sysctl), and numabalancectl status over /run/numabalanced/control;
  - the hardened daemon still reads numa_maps of a root process (bound to nodes 0-1,
    which the kernel's balancing leaves alone) in a cgroup opted in
    with trusted.numabalanced (CAP_SYS_ADMIN) and moves its pages: a migration batch
    line in `journalctl -u numabalanced` and the pages on the node its thread runs on;
  - reload: ActiveState back to active, same MainPID, "Configuration reloaded" in the
    journal; `systemctl reload` of a broken file fails (ExecReload checks it first),
    the daemon is not signalled and the service stays active;
  - the watchdog: WATCHDOG=1 pings arrive (WatchdogTimestamp moves) and the service
    is still active, never restarted, past WatchdogSec;
  - a crash: a migration far longer than WatchdogSec (misplaced memory under a low
    rate_limit_mb_s) runs to its end with no watchdog kill (NRestarts=0, no "Watchdog
    timeout" in the journal, its runs cut by their time budget); then kill -9, and
    systemd restarts the daemon, which finds the operator's kernel.numa_balancing
    saved under /run rather than taking the 0 its predecessor left as theirs;
  - stop: inactive, Result=success, exit status 0, kernel.numa_balancing back to the
    operator's value (set to 1 at the start), nothing left under /run.
With --hybrid the guest is booted in the cgroup v1/hybrid layout (vmrun --append
systemd.unified_cgroup_hierarchy=0, as on RHEL 8 or Ubuntu 20.04): the test checks
that layout (v1 controllers on a tmpfs at /sys/fs/cgroup, cgroup2 at
/sys/fs/cgroup/unified), opts its cgroup in under /sys/fs/cgroup/unified, and checks
that the daemon said it uses that hierarchy.
Results: NUMABALANCED_RESULTS/systemd.json and the unit's journal in
NUMABALANCED_RESULTS/journal.txt.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import nbtest  # noqa: E402

UNIT = "numabalanced.service"
RUN_DIR = "/run/systemd/system"
TEST_DIR = "/run/numabalanced-test"
CG = "/sys/fs/cgroup/nbtest"   # under /sys/fs/cgroup/unified with --hybrid
CAPS = {"cap_dac_read_search": 2, "cap_sys_ptrace": 19, "cap_sys_admin": 21, "cap_sys_nice": 23, "cap_perfmon": 38,
        "cap_bpf": 39}

results = {"checks": []}
out_dir = os.environ.get("NUMABALANCED_RESULTS", "/tmp")
# systemctl gives up on PID 1 after sd-bus's default 25 s. Under TCG with 5.10, PID 1
# spends 20-30 s loading the unit on first use, and a landing CI run failed there with
# "Failed to get properties: Connection timed out". Wait as long as sh() does.
os.environ["SYSTEMD_BUS_TIMEOUT"] = "170s"


class Fail(Exception):
    """A check failed (counted and printed already): the steps after it need it."""


def progress(line):
    # A file in the results: a guest whose console stops (one CI run went silent
    # after the watchdog check) still leaves how far the test got.
    try:
        with open(os.path.join(out_dir, "progress.txt"), "a") as f:
            f.write(f"{time.monotonic():.1f} {line}\n")
    except OSError:
        pass


def log(msg):
    line = f"test-systemd: {msg}"
    print(line, flush=True)
    progress(line)


def check(cond, what, detail=""):
    """nbtest.check, recorded in systemd.json and the progress file; a failed one ends
    the test (Fail): each step needs the one before."""
    results["checks"].append({"check": what, "ok": bool(cond), "detail": detail})
    text = what + (f" ({detail})" if detail else "")
    if not cond:
        failed(text)
        raise Fail(text)
    nbtest.check(True, text)
    log(f"ok: {text}")


def failed(text):
    """A failure, counted and printed by nbtest, and in the progress file."""
    progress(f"test-systemd: FAIL: {text}")
    nbtest.check(False, text)


def sh(*cmd, ok=True, timeout=180):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    if ok and r.returncode != 0:
        text = f"{' '.join(cmd)} exited {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}"
        failed(text)
        raise Fail(text)
    return r


def props(*names):
    """The unit's properties, all from one systemctl show: each call fetches every
    property of the unit over D-Bus, 4 s under TCG in a 5.10 guest."""
    out = sh("systemctl", "show", *(f"--property={n}" for n in names), UNIT).stdout
    got = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return {n: got.get(n, "").strip() for n in names}


def prop(name):
    return props(name)[name]


def journal():
    return sh("journalctl", "-u", UNIT, "-o", "cat", "--no-pager", ok=False).stdout


def wait_for(cond, timeout, step=1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def numa_balancing():
    try:
        return open("/proc/sys/kernel/numa_balancing").read().strip()
    except OSError:
        return None


KNB_SAVED = "/run/numabalanced/kernel.numa_balancing"


def knb_saved():
    try:
        return open(KNB_SAVED).read().strip()
    except OSError:
        return None


def fs_type(path):
    """The file system type mounted at path (the last mount there), or None."""
    kind = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                kind = fields[fields.index("-") + 1]
    return kind


def mem_free_mib(node):
    with open(f"/sys/devices/system/node/node{node}/meminfo") as f:
        for line in f:
            if "MemFree:" in line:
                return int(line.split()[3]) // 1024
    return 0


def write_conf(path, extra=""):
    with open(path, "w") as f:
        f.write("[daemon]\nservice_cpus = 0\ntick_ms = 500\nscan_min_ms = 500\nscan_max_ms = 4000\n"
                "log_level = info\nkernel_numa_balancing = disable\n"
                "[decide]\ncooldown_ms = 1000\n" + extra)


def node_pages(pid, start):
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            fields = line.split()
            if int(fields[0], 16) == start:
                return {int(k[1:]): int(v) for k, v in (t.split("=") for t in fields if re.match(r"N\d+=", t))}
    return {}


# What the daemon and the kernel said, for a failure's report: filled in as the test
# goes (the workload's pid once it runs, numabalancectl once known).
diag = {}


def diagnose():
    """numabalancectl explain/show for the workload and the unit's state, into the
    results: a failed check then says what the daemon thought, not only that it failed."""
    out = []
    cmds = [["systemctl", "status", "--no-pager", "-n", "0", UNIT]]
    if "ctl" in diag and "pid" in diag:
        cmds += [[diag["ctl"], "explain", str(diag["pid"])], [diag["ctl"], "status"],
                 [diag["ctl"], "show", str(diag["pid"])]]
    if "pid" in diag:
        cmds += [["cat", f"/proc/{diag['pid']}/status"]]
    for c in cmds:
        try:
            r = subprocess.run(c, capture_output=True, text=True, timeout=60)
            out.append(f"$ {' '.join(c)}  (exit {r.returncode})\n{r.stdout}{r.stderr}")
        except Exception as e:
            out.append(f"$ {' '.join(c)}: {type(e).__name__}: {e}")
    return "\n".join(out)


def run(build):
    daemon = os.path.join(build, "daemon", "numabalanced")
    ctl = os.path.join(build, "ctl", "numabalancectl")
    workload = os.path.join(build, "tests", "vm", "workload")
    unit_src = os.path.join(build, "systemd", UNIT)

    check(os.path.realpath("/proc/1/exe").endswith("/systemd"), "PID 1 is systemd",
          os.path.realpath("/proc/1/exe"))
    layout = {"/sys/fs/cgroup": fs_type("/sys/fs/cgroup"), "/sys/fs/cgroup/unified": fs_type("/sys/fs/cgroup/unified")}
    want = {"/sys/fs/cgroup": "tmpfs", "/sys/fs/cgroup/unified": "cgroup2"} if HYBRID else {"/sys/fs/cgroup": "cgroup2"}
    check(all(layout[k] == v for k, v in want.items()),
          f"the guest's cgroup layout is {'hybrid' if HYBRID else 'unified'}", str(layout))
    log(f"systemd {sh('systemctl', '--version').stdout.split()[1]}, "
        f"system state {sh('systemctl', 'is-system-running', ok=False).stdout.strip()}")

    # The daemon and its config from /run, so that the build directory's location
    # (ProtectHome= hides /home and /root) does not matter.
    os.makedirs(TEST_DIR, exist_ok=True)
    shutil.copy(daemon, TEST_DIR + "/numabalanced")
    conf = TEST_DIR + "/numabalanced.conf"
    write_conf(conf)
    shutil.copy(unit_src, os.path.join(RUN_DIR, UNIT))
    os.makedirs(os.path.join(RUN_DIR, UNIT + ".d"), exist_ok=True)
    with open(os.path.join(RUN_DIR, UNIT + ".d", "test.conf"), "w") as f:
        # LeakSanitizer (when the suite runs an ASan build) stops the world with ptrace,
        # which the unit's SystemCallFilter= refuses: no leak check under systemd (the
        # other VM tests do it); ignored by a build without ASan.
        f.write(f"[Service]\nExecStart=\nExecStart={TEST_DIR}/numabalanced --config {conf}\n"
                f"ExecReload=\nExecReload={TEST_DIR}/numabalanced --check-config-of $MAINPID\n"
                f"ExecStopPost=\nExecStopPost={TEST_DIR}/numabalanced --restore-affinity\n"
                "ExecReload=/bin/kill -HUP $MAINPID\n"
                # ASan's quarantine (256 MiB by default) holds freed memory back, and
                # the unit's MemoryMax= is 256M: a kdamond's reads (hundreds of sysfs
                # files a second) filled it and the memory cgroup OOM-killed the
                # daemon. 32 MiB, as in tests/vm/shipped.py.
                "Environment=ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=32\n")
    # No daemon-reload: nothing has named the unit since boot, so systemd reads it,
    # drop-in included, from the unit directories the first time it is asked for (below).
    # A reload reruns every generator: 95-100 s in a 5.10 guest under TCG.
    p = props("LoadState", "DropInPaths")
    check(p["LoadState"] == "loaded", "the unit loads", p["LoadState"])
    check("test.conf" in p["DropInPaths"], "the unit has the test's drop-in", p["DropInPaths"])

    # A misplaced workload (root): memory on node 0, thread on node 1, in a cgroup opted
    # in with the trusted.* xattr. Bound to nodes 0-1 (MPOL_BIND), which the kernel's own
    # NUMA balancing never migrates: kernel.numa_balancing is still 1 here (the test
    # checks that the daemon turns it off and restores it), and with a default policy the
    # kernel moved the pages itself while the daemon was starting (three of four local
    # runs under load: no batch line, the memory already on node 1).
    os.makedirs(CG, exist_ok=True)
    sh("setfattr", "-n", "trusted.numabalanced", "-v", "balance", CG)
    ready = TEST_DIR + "/ready"

    def enter():
        with open(CG + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
    wl = subprocess.Popen([workload, "64", "0", "1", "bind:0-1", "1", ready, "4k"], preexec_fn=enter,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    check(wait_for(lambda: os.path.exists(ready) or wl.poll() is not None, 120) and wl.poll() is None,
          "the workload placed its memory", "" if wl.poll() is None else wl.stderr.read().decode())
    pid, start, _ = open(ready).read().split()
    pid, start = int(pid), int(start, 16)
    diag.update(pid=pid, ctl=ctl)
    before = node_pages(pid, start)
    check(before.get(0, 0) > 0.9 * sum(before.values()), "the workload's memory starts on node 0", str(before))

    # The operator's value, which the daemon must give back whatever happens to it.
    knb_before = numa_balancing()
    if knb_before is not None:
        with open("/proc/sys/kernel/numa_balancing", "w") as f:
            f.write("1")
        knb_before = "1"
    t0 = time.monotonic()
    sh("systemctl", "start", UNIT, timeout=120)
    started = time.monotonic()
    check(sh("systemctl", "is-active", UNIT, ok=False).stdout.strip() == "active", "systemctl is-active",
          f"start took {started - t0:.1f} s")
    main_pid = int(prop("MainPID"))
    status = open(f"/proc/{main_pid}/status").read()
    capbnd = int(re.search(r"^CapBnd:\s*([0-9a-f]+)", status, re.M).group(1), 16)
    want = sum(1 << b for b in CAPS.values())
    check(capbnd == want, "capability bounding set is exactly the unit's", f"CapBnd {capbnd:#x}, want {want:#x}")
    check(re.search(r"^NoNewPrivs:\s*1", status, re.M) is not None, "NoNewPrivs")
    check(re.search(r"^Seccomp:\s*2", status, re.M) is not None, "seccomp filter in effect")
    mountinfo = open(f"/proc/{main_pid}/mountinfo").read()
    root_ro = any(l.split()[4] == "/" and "ro" in l.split()[5].split(",") for l in mountinfo.splitlines())
    check(root_ro, "the root is read-only for the daemon (ProtectSystem=strict)")
    if knb_before is not None:
        check(numa_balancing() == "0", "kernel_numa_balancing=disable wrote 0 through ProtectKernelTunables=",
              f"was {knb_before}, now {numa_balancing()}")
    r = sh(ctl, "status", ok=False)
    check(r.returncode == 0, "numabalancectl status over /run/numabalanced/control", r.stderr.strip())
    if HYBRID:
        said = "/sys/fs/cgroup is the cgroup v1/hybrid layout: using the cgroup2 hierarchy at /sys/fs/cgroup/unified"
        check(wait_for(lambda: said in journal(), 10), "the journal says the daemon uses the unified hierarchy",
              said)

    # The hardened daemon reads numa_maps of a root process and moves its pages: at
    # info level the journal sums each minute's batches in one line (the batches
    # themselves are at debug).
    line = wait_for(lambda: next((l for l in journal().splitlines()
                                  if "Migrations in the last" in l and " MiB moved (" in l), None), 150)
    check(line is not None, "a minute's migration summary in journalctl -u numabalanced", line or "none in 150 s")
    check(int(re.search(r"MiB moved \((\d+) pages\)", line).group(1)) > 0, "the summary says pages moved", line)
    after = wait_for(lambda: (lambda n: n if n.get(1, 0) > 0.9 * sum(n.values()) else None)(node_pages(pid, start)),
                     60)
    check(after is not None, "the workload's memory is on node 1 now", str(node_pages(pid, start)))

    # Reload: a good file, then a broken one (not --quick: SIGHUP is no kernel's
    # business either, and the two reloads took 31 s of the 5.10 guest's run).
    if FULL:
        with open(conf, "a") as f:
            f.write("[migrate]\nrate_limit_mb_s = 512\n")
        n_reloaded = journal().count("Configuration reloaded")
        sh("systemctl", "reload", UNIT, timeout=60)
        p = props("ActiveState", "MainPID")
        check(p["ActiveState"] == "active", "active after systemctl reload", p["ActiveState"])
        check(int(p["MainPID"]) == main_pid, "same main process after reload", p["MainPID"])
        check(wait_for(lambda: journal().count("Configuration reloaded") > n_reloaded, 10),
              "the journal says \"Configuration reloaded\"")
        with open(conf, "a") as f:
            f.write("[daemon]\nno_such_key = 1\n")
        n_refused = journal().count("Reload refused")
        r = sh("systemctl", "reload", UNIT, ok=False, timeout=60)
        p = props("ActiveState", "MainPID")
        check(p["ActiveState"] == "active" and int(p["MainPID"]) == main_pid,
              "a broken file is refused and the service stays active",
              f"reload exit {r.returncode}, {p['ActiveState']}, MainPID {p['MainPID']}")
        # systemctl reload itself fails (ExecReload checks the file first), and the
        # daemon never saw the broken file: it keeps the running configuration.
        check(r.returncode != 0, "systemctl reload of a broken file exits 0", str(r.returncode))
        check(journal().count("Reload refused") == n_refused,
              "the daemon was signalled with a broken file (ExecReload did not check it)")
        write_conf(conf)

    # The watchdog: pings arrive, and the service outlives WatchdogSec unrestarted.
    p = props("WatchdogUSec", "WatchdogTimestampMonotonic")
    wd_text = p["WatchdogUSec"]
    wd_usec = int(wd_text) if wd_text.isdigit() else None
    check(wd_text not in ("", "0", "infinity"), "WatchdogSec= is set", wd_text)
    wd_s = (wd_usec / 1e6) if wd_usec else 30.0
    ping1 = int(p["WatchdogTimestampMonotonic"] or 0)
    if FULL:  # (--quick: a ping is enough; outliving WatchdogSec is no kernel's business)
        time.sleep(max(0.0, wd_s + 5 - (time.monotonic() - started)))
    # A later ping: the daemon pings every WatchdogSec/2, so one comes within WatchdogSec
    # (not "at once": under load the checks above can take longer than WatchdogSec, and
    # a read right after ping1 found the same timestamp).
    ping2 = wait_for(lambda: (lambda v: v if v > ping1 else None)(int(prop("WatchdogTimestampMonotonic") or 0)),
                     wd_s) or ping1
    check(ping2 > ping1 > 0, "WATCHDOG=1 pings arrive", f"WatchdogTimestampMonotonic {ping1} -> {ping2}")
    p = props("ActiveState", "MainPID", "NRestarts")
    check(p["ActiveState"] == "active" and int(p["MainPID"]) == main_pid and p["NRestarts"] == "0",
          f"still active, same process, no restart {time.monotonic() - started:.0f} s after start "
          f"(WatchdogSec={wd_s:.0f}s)")

    wl.kill()
    wl.wait()
    if FULL:
        crash(ctl, workload, conf, wd_s, knb_before)
    else:
        kill_and_restart(int(prop("MainPID")), knb_before)

    # Stop.
    sh("systemctl", "stop", UNIT, timeout=60)
    check(sh("systemctl", "is-active", UNIT, ok=False).stdout.strip() == "inactive", "inactive after systemctl stop")
    p = props("Result", "ExecMainStatus")
    check(p["Result"] == "success" and p["ExecMainStatus"] == "0", "clean stop",
          f"Result={p['Result']} ExecMainStatus={p['ExecMainStatus']}")
    if knb_before is not None:
        check(numa_balancing() == knb_before, "kernel.numa_balancing restored at exit", numa_balancing())
        check(knb_saved() is None, "the saved value is gone once restored", str(knb_saved()))


# The case is 1 GiB misplaced at rate_limit_mb_s = 10: about 100 s of
# migration, past WatchdogSec=30s. This guest's CPU nodes hold 768 MiB each (2n1m, with
# the guest's own memory on them), and what is asserted is a migration longer than
# WatchdogSec with no kill: twice WatchdogSec does, with 192 MiB at 3 MB/s (64 s; 96 s
# with 384 MiB cost the CI about a minute more), less if node 0 has less free.
CRASH_SECONDS = 60
FULL = True   # not --quick: also what no kernel changes (reload, watchdog, long migration)
HYBRID = False          # --hybrid


def crash_size(margin=160):
    free0, free1 = mem_free_mib(0), mem_free_mib(1)
    size = min(192, (min(free0, free1) - margin) // 64 * 64)
    log(f"MemFree: node 0 {free0} MiB, node 1 {free1} MiB: {size} MiB misplaced")
    check(size >= 128, "room for a long migration on nodes 0 and 1", f"node 0 {free0} MiB, node 1 {free1} MiB free")
    return size, max(1, round(size / CRASH_SECONDS))


def crash(ctl, workload, conf, wd_s, knb_before):
    """A migration far longer than WatchdogSec: no watchdog kill; then kill -9: the
    restarted daemon restores the operator's kernel.numa_balancing at its stop."""
    size, rate = crash_size()
    write_conf(conf, f"[migrate]\nrate_limit_mb_s = {rate}\n")
    n_reloaded = journal().count("Configuration reloaded")
    sh("systemctl", "reload", UNIT, timeout=60)
    check(wait_for(lambda: journal().count("Configuration reloaded") > n_reloaded, 10),
          f"reloaded with rate_limit_mb_s = {rate}")
    main_pid = int(prop("MainPID"))
    ready = TEST_DIR + "/ready-crash"

    def enter():
        with open(CG + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
    wl = subprocess.Popen([workload, str(size), "0", "1", "bind:0-1", "1", ready, "4k"], preexec_fn=enter,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        check(wait_for(lambda: os.path.exists(ready) or wl.poll() is not None, 180) and wl.poll() is None,
              f"{size} MiB placed on node 0", "" if wl.poll() is None else wl.stderr.read().decode())
        pid, start, _ = open(ready).read().split()
        pid, start = int(pid), int(start, 16)
        diag.update(pid=pid)
        before = node_pages(pid, start)
        # The daemon watches the cgroup already and may have begun by this first look
        # (a few MB at this rate): most of it, not all, is still to move.
        check(before.get(0, 0) > 0.75 * sum(before.values()), "the memory starts on node 0", str(before))
        long_migration(ctl, pid, start, size, rate, wd_s, main_pid)
    finally:
        wl.kill()
        wl.wait()
    kill_and_restart(main_pid, knb_before)


def long_migration(ctl, pid, start, size, rate, wd_s, main_pid):
    t0 = time.monotonic()

    def moved():
        # Never killed on the way: a watchdog kill shows here first (the main process
        # gone, then another one started RestartSec= later).
        p = props("NRestarts", "MainPID")
        if p["NRestarts"] != "0" or int(p["MainPID"] or 0) != main_pid:
            return "killed"
        n = node_pages(pid, start)
        return "done" if n.get(1, 0) >= 0.95 * sum(n.values()) else None
    how = wait_for(moved, 4 * CRASH_SECONDS + 120, step=2.0)
    took = time.monotonic() - t0
    results["crash"] = {"size_mib": size, "rate_mb_s": rate, "seconds_to_95pct": round(took, 1)}
    log(f"{size} MiB at {rate} MB/s: {how} after {took:.0f} s")
    p = props("MainPID", "NRestarts", "Result") if how == "killed" else {}
    check(how != "killed", "no watchdog kill or restart during a migration longer than WatchdogSec",
          f"after {took:.0f} s: MainPID {main_pid} -> {p['MainPID']}, NRestarts={p['NRestarts']}, "
          f"Result={p['Result']}, \"Watchdog timeout\" in the journal: {'Watchdog timeout' in journal()}"
          if how == "killed" else "")
    check(how == "done", f"{size} MiB moved to node 1 at {rate} MB/s", str(node_pages(pid, start)))
    check(took > wd_s, f"the migration took longer than WatchdogSec ({took:.0f} s > {wd_s:.0f} s)")
    check("Watchdog timeout" not in journal(), "no \"Watchdog timeout\" in the journal")
    st = json.loads(sh(ctl, "status", "--json").stdout)
    results["crash"]["migration_runs_cut"] = st.get("migration_runs_cut")
    check(st.get("migration_runs_cut", 0) > 0, "the tick's migration runs were cut by their time budget",
          f"migration_runs_cut={st.get('migration_runs_cut')}")


def kill_and_restart(main_pid, knb_before):
    os.kill(main_pid, 9)
    def up():
        p = props("ActiveState", "MainPID", "NRestarts")
        return p if p["ActiveState"] == "active" and int(p["MainPID"] or 0) not in (0, main_pid) else None
    p = wait_for(up, 60) or props("ActiveState", "MainPID", "NRestarts")
    check(p["ActiveState"] == "active" and p["NRestarts"] == "1", "kill -9: systemd restarted the daemon",
          f"ActiveState={p['ActiveState']} NRestarts={p['NRestarts']} MainPID {main_pid} -> {p['MainPID']}")
    if knb_before is None:
        return
    check(numa_balancing() == "0" and knb_saved() == knb_before,
          "the restarted daemon holds kernel.numa_balancing at 0, the operator's value saved",
          f"sysctl {numa_balancing()}, saved {knb_saved()}")
    check(wait_for(lambda: "was left by a numabalanced that did not exit cleanly" in journal(), 10),
          "the restarted daemon found the operator's value saved")


def watch_stack(path, every):
    """Writes the main thread's stack to path every `every` seconds, from a thread that
    holds the GIL while it reads it. (faulthandler.dump_traceback_later reads the
    frames without it: one of three runs of the 5.10 systemd guest died of SIGSEGV in
    the middle of a dump, stacks.txt cut off at "line 0 in _wait".)"""
    main_id = threading.main_thread().ident

    def loop():
        while True:
            time.sleep(every)
            frame = sys._current_frames().get(main_id)
            if frame is None:
                return
            with open(path, "a") as f:
                f.write(f"-- {time.monotonic():.1f}\n" + "".join(traceback.format_stack(frame)))
    threading.Thread(target=loop, daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--quick", action="store_true",
                    help="leave out what depends on no kernel, for the kernel matrix: the wait past "
                         "WatchdogSec (a ping is still awaited) and the migration longer than "
                         "WatchdogSec (about a minute under TCG) and the two reloads; kill -9 and the "
                         "restart still run")
    ap.add_argument("--hybrid", action="store_true",
                    help="the guest is in the cgroup v1/hybrid layout: opt in under /sys/fs/cgroup/unified")
    a = ap.parse_args()
    global FULL, HYBRID, CG
    FULL = not a.quick
    HYBRID = a.hybrid
    if HYBRID:
        CG = "/sys/fs/cgroup/unified/nbtest"
    # Where the test stands, every 60 s, into the results: if it hangs (a systemctl
    # that never returns, a blocked write), the last stack says where.
    watch_stack(os.path.join(out_dir, "stacks.txt"), 60)
    try:
        run(os.path.abspath(a.build))
    except Fail:
        try:
            d = diagnose()
            with open(os.path.join(out_dir, "diagnosis.txt"), "w") as f:
                f.write(d)
            print(d, flush=True)
        except Exception as e2:
            log(f"(no diagnosis: {type(e2).__name__}: {e2})")
    except Exception as e:  # a crash of the test itself is a failure too, with its reason
        failed(f"{type(e).__name__}: {e}")
    finally:
        try:
            with open(os.path.join(out_dir, "journal.txt"), "w") as f:
                f.write(journal())
        except Exception:
            pass
        results["passed"] = nbtest.failures() == 0
        with open(os.path.join(out_dir, "systemd.json"), "w") as f:
            json.dump(results, f, indent=1)
    nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
