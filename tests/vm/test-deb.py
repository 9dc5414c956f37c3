#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Debian package as an operator lives it, in a guest whose PID 1 is systemd
(vmrun --systemd; run after test-systemd.py in the same boot).

    test-deb.py --build BUILD_DIR --deb PATH     (a .deb, or a directory holding one)

  - install: `dpkg -i` succeeds; the unit is enabled and active (started by the
    package, harmless until a cgroup opts in), numabalancectl status answers;
  - an opted-in misplaced workload (128 MiB on node 0, its thread on node 1, in a cgroup
    with trusted.numabalanced = balance) is made 95% local by the packaged daemon on its
    shipped configuration;
  - shipped: the docs and contrib/ under /usr/share/doc/numabalanced, and the empty
    /etc/numabalanced.conf.d; the package's autopkgtest (debian/tests/conf-d-opt-in)
    passes: a service opted in through a file there stays opted in across its
    restart, and `systemctl reload` fails on a broken file, the daemon running on;
  - upgrade: the operator edits /etc/numabalanced.conf (a setting and a comment); a
    newer version of the same package (repacked with a higher version) installs over
    it, the service is active again, and the edited file is kept as it was;
  - removal as a tenant lives it: a process of uid 65534 in a cgroup delegated to it
    and opted in by it (user.numabalanced = place), placed by the packaged daemon (its
    thread narrowed to node 0, beside memory bound there), whose placed thread forks a
    child that carries the narrowed mask; `dpkg -r` gives the thread and the child
    their original affinity back (the stop, the unit's ExecStopPost= or the prerm's
    --restore-affinity: each is right, the output of dpkg is kept);
  - purge: `dpkg --purge` leaves no unit file, no /run/numabalanced, no
    /etc/numabalanced.conf nor its .d, no docs, and the service is not running; a kernel.numa_balancing
    value saved under /run by a daemon that did not exit cleanly is put back first.
The package is built on the host first (scripts/build-deb; scripts/test does it).
Results: NUMABALANCED_RESULTS/deb.json.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

UNIT = "numabalanced.service"
CONF = "/etc/numabalanced.conf"
CG = "/sys/fs/cgroup/nbdeb"
results = {}


def run(*cmd, timeout=120, env=None):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive", **(env or {})))
    return r


def prop(name):
    return run("systemctl", "show", "-P", name, UNIT).stdout.strip()


def wait(cond, what, timeout):
    """Polls cond() until true; a failed check naming what when timeout passes."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.5)
    check(False, f"{what}: not within {timeout} s")
    return False


def local_share(pid, node):
    total = here = 0
    with open(f"/proc/{pid}/numa_maps") as f:
        for line in f:
            for tok in line.split()[1:]:
                if tok.startswith("N") and "=" in tok and tok[1:].split("=")[0].isdigit():
                    k, v = tok[1:].split("=")
                    total += int(v)
                    here += int(v) if int(k) == node else 0
    return here / total if total else 0.0


def writable_root():
    """The guest's root is the host's, read-only: /etc, /usr and /var get an overlay
    with their writes in a tmpfs (/run), so that dpkg can install, and nothing reaches
    the host."""
    base = "/run/test-deb-overlay"
    for d in ("/etc", "/usr", "/var"):
        up, work = f"{base}{d}/upper", f"{base}{d}/work"
        os.makedirs(up, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        r = run("mount", "-t", "overlay", "overlay", "-o", f"lowerdir={d},upperdir={up},workdir={work}", d)
        check(r.returncode == 0, f"cannot make {d} writable: {r.stderr}")
        if r.returncode != 0:
            return False
    # man-db's trigger rebuilds the whole manual index after each dpkg run that ships a
    # man page: under TCG that is most of each dpkg run, and not this package's doing.
    # Without this file (in the overlay only) the trigger does nothing, as in images.
    if os.path.exists("/var/lib/man-db/auto-update"):
        os.unlink("/var/lib/man-db/auto-update")
    return True


def find_deb(path):
    """path, or the one numabalanced_*.deb in directory path."""
    if os.path.isdir(path):
        debs = sorted(f for f in os.listdir(path) if f.startswith("numabalanced_") and f.endswith(".deb"))
        return os.path.join(path, debs[-1]) if debs else None
    return path if os.path.exists(path) else None


def diagnose():
    """What systemd says of the unit, into the test's output."""
    for cmd in (["systemctl", "status", "--no-pager", UNIT], ["journalctl", "--no-pager", "-n", "40", "-u", UNIT],
                ["ls", "-l", "/etc/systemd/system/multi-user.target.wants/", "/usr/sbin/policy-rc.d"]):
        r = run(*cmd)
        print(f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}", flush=True)


def timed(what, *cmd, timeout=300):
    """run(*cmd), its seconds kept in the results (under what)."""
    t0 = time.monotonic()
    r = run(*cmd, timeout=timeout)
    results.setdefault("seconds", {})[what] = round(time.monotonic() - t0, 1)
    return r


def install(deb):
    r = timed("dpkg -i " + os.path.basename(deb), "dpkg", "-i", deb)
    check(r.returncode == 0, f"dpkg -i {os.path.basename(deb)}: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.returncode == 0


def repack_newer(deb, tmp):
    """The same package with a higher version: what an upgrade installs."""
    root = os.path.join(tmp, "pkg")
    run("dpkg-deb", "-R", deb, root)
    control = os.path.join(root, "DEBIAN", "control")
    text = open(control).read()
    old = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Version: ")][0]
    new = old + "+upgrade1"
    open(control, "w").write(text.replace(f"Version: {old}", f"Version: {new}"))
    out = os.path.join(tmp, f"numabalanced_{new}.deb")
    r = run("dpkg-deb", "-b", root, out)
    check(r.returncode == 0, f"dpkg-deb -b: {r.stderr}")
    return out, old, new


def test_install(deb):
    # test-systemd.py, earlier in this boot, ran the unit from /run/systemd/system (with
    # a drop-in), which would hide the package's: removed, and systemd told.
    left = [p for p in (f"/run/systemd/system/{UNIT}", f"/run/systemd/system/{UNIT}.d") if os.path.lexists(p)]
    for p in left:
        shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
    if left:
        run("systemctl", "daemon-reload")
        results["removed_test_units"] = left
    # A container image's policy-rc.d (this machine's says "exit 101") forbids starting
    # services from maintainer scripts; an operator's machine has none. Removed in the
    # guest's overlay only.
    if os.path.exists("/usr/sbin/policy-rc.d"):
        os.unlink("/usr/sbin/policy-rc.d")
        results["removed_policy_rc_d"] = True
    if not install(deb):
        return False
    check(os.path.exists(f"/lib/systemd/system/{UNIT}"), "the package did not install its unit")
    # The unit systemd runs is the package's, with no drop-in of anyone else's.
    frag, dropins = prop("FragmentPath"), prop("DropInPaths")
    check(frag == f"/lib/systemd/system/{UNIT}" and not dropins,
          f"systemd runs another unit than the package's: {frag} (drop-ins: {dropins or 'none'})")
    check(run("systemctl", "is-enabled", UNIT).stdout.strip() == "enabled", "the unit is not enabled")
    if not wait(lambda: prop("ActiveState") == "active", "the service active after dpkg -i", 60):
        diagnose()
    r = run("numabalancectl", "--json", "status")
    check(r.returncode == 0, f"numabalancectl status: {r.stderr}")
    if r.returncode == 0:
        results["status_after_install"] = json.loads(r.stdout).get("sampling_chain")
    return True


def test_shipped_and_autopkgtest():
    """The docs and contrib/ in /usr/share/doc/numabalanced (dh_compress may have
    compressed a long one), the empty /etc/numabalanced.conf.d; then the package's own
    autopkgtest (debian/tests/conf-d-opt-in): a service opted in through a file of
    that directory, kept across its restart, and a reload that fails on a broken one."""
    doc = "/usr/share/doc/numabalanced"
    for f in ("docs/ctl-json.md", "docs/OPT-IN.md", "examples/prometheus/numabalanced.rules.yml",
              "examples/grafana/numabalanced-dashboard.json"):
        check(os.path.exists(f"{doc}/{f}") or os.path.exists(f"{doc}/{f}.gz"), f"{doc}/{f} is not shipped")
    check(os.path.isdir("/etc/numabalanced.conf.d"), "/etc/numabalanced.conf.d is not shipped")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "debian", "tests", "conf-d-opt-in")
    r = timed("autopkgtest conf-d-opt-in", "sh", script, timeout=240)
    print(r.stdout + r.stderr, flush=True)
    check(r.returncode == 0, f"debian/tests/conf-d-opt-in exited {r.returncode}")
    if r.returncode != 0:
        diagnose()


def test_fixes(build):
    # The kernel's own balancing off, as the operators this is for have it: otherwise
    # it, not the package, could be what fixes the workload.
    with open("/proc/sys/kernel/numa_balancing", "w") as f:
        f.write("0")
    os.makedirs(CG, exist_ok=True)
    os.setxattr(CG, "trusted.numabalanced", b"balance")
    ready = os.path.join(tempfile.mkdtemp(), "ready")
    workload = os.path.join(build, "tests", "vm", "workload")

    def enter():
        with open(os.path.join(CG, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    p = subprocess.Popen([workload, "128", "0", "1", "default", "1", ready, "system"], preexec_fn=enter,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait(lambda: os.path.exists(ready), "the workload ready", 120)
        t0 = time.time()
        ok = wait(lambda: local_share(p.pid, 1) >= 0.95, "the workload 95% on node 1 (its thread's)", 180)
        results["seconds_to_95pct_local"] = round(time.time() - t0, 1) if ok else None
    finally:
        p.kill()
        p.wait()
        time.sleep(0.5)
        try:
            os.rmdir(CG)
        except OSError:
            pass


def cpus_of(pid, tid=None):
    with open(f"/proc/{pid}/task/{tid or pid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return ""


def test_remove_restores(build):
    """A tenant's placed thread and the child it forked get their affinity back at
    dpkg -r."""
    sys.path.insert(0, HERE)
    import shipped                        # noqa: E402 (the tenant's helpers)
    from anyuser import copy_for_any_user  # noqa: E402
    cg = CG + "-place"
    os.makedirs(cg, exist_ok=True)
    shipped.delegate(cg)
    shipped.set_mode(cg, "place")
    node0 = open("/sys/devices/system/node/node0/cpulist").read().strip()
    ready = os.path.join(shipped.tenant_tmp(), f"deb-gather.{time.time_ns()}")
    gather = copy_for_any_user(os.path.join(build, "tests", "vm", "gather"))

    def enter():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        shipped.become_tenant()
    # One thread (a node of this guest has one CPU): memory bound to node 0, the thread
    # started on node 1 with every CPU allowed; the daemon places it on node 0.
    p = subprocess.Popen([gather, "64", "0", "1", "1", "free", "bind", ready], preexec_fn=enter,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    child = None
    try:
        if not wait(lambda: os.path.exists(ready), "the tenant's workload ready", 120):
            return
        tid = int(open(ready).read().split()[3])
        original = cpus_of(p.pid, tid)
        if not wait(lambda: cpus_of(p.pid, tid) == node0, "the tenant's thread placed on node 0", 120):
            return
        os.kill(p.pid, signal.SIGUSR1)
        if not wait(lambda: os.path.exists(ready + ".child"), "a child forked by the placed thread", 60):
            return
        child = int(open(ready + ".child").read())
        check(cpus_of(child) == node0, f"the child did not inherit the placed mask: {cpus_of(child)}")
        wait(lambda: str(child) in open("/run/numabalanced/affinity").read(), "the child recorded", 60)
        r = timed("dpkg -r", "dpkg", "-r", "numabalanced")
        results["remove_output"] = (r.stdout + r.stderr)[-1500:]
        check(r.returncode == 0, f"dpkg -r: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        check(cpus_of(p.pid, tid) == original, f"dpkg -r left the tenant's thread narrowed: {cpus_of(p.pid, tid)}")
        check(cpus_of(child) == original, f"dpkg -r left the child narrowed: {cpus_of(child)}")
        results["restored_at_remove"] = cpus_of(child) == original and cpus_of(p.pid, tid) == original
    finally:
        p.kill()
        p.wait()
        if child:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.5)
        try:
            os.rmdir(cg)
        except OSError:
            pass


def test_upgrade(deb, tmp):
    edited = open(CONF).read().replace("#log_level = info", "log_level = debug", 1)
    edited += "\n# edited by the operator (test-deb.py)\n"
    check("log_level = debug" in edited, "the shipped file has no '#log_level = info' line to edit")
    open(CONF, "w").write(edited)
    newer, old, new = repack_newer(deb, tmp)
    results["upgrade"] = f"{old} -> {new}"
    if not install(newer):
        return
    check(run("dpkg-query", "-W", "-f=${Version}", "numabalanced").stdout == new, "the upgrade did not install")
    check(open(CONF).read() == edited, "the upgrade changed the operator's /etc/numabalanced.conf")
    if not wait(lambda: prop("ActiveState") == "active", "the service active after the upgrade", 60):
        diagnose()


def test_purge():
    # As a daemon killed while it held kernel.numa_balancing at 0 leaves it: the
    # operator's value saved under /run, the sysctl at 0. The purge puts it back, as
    # the next start would have (it deleted the saved value and left the sysctl at 0).
    run("systemctl", "stop", UNIT)
    os.makedirs("/run/numabalanced", exist_ok=True)
    with open("/run/numabalanced/kernel.numa_balancing", "w") as f:
        f.write("1\n")
    with open("/proc/sys/kernel/numa_balancing", "w") as f:
        f.write("0")
    r = timed("dpkg --purge", "dpkg", "--purge", "numabalanced")
    with open("/proc/sys/kernel/numa_balancing") as f:
        after = f.read().strip()
    check(after == "1", f"kernel.numa_balancing after the purge: {after}, expected the saved 1")
    results["numa_balancing_after_purge"] = after
    check(r.returncode == 0, f"dpkg --purge: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    left = [p for p in (f"/lib/systemd/system/{UNIT}", "/run/numabalanced", CONF, CONF + ".d",
                        "/usr/share/doc/numabalanced/examples", "/usr/sbin/numabalanced",
                        "/etc/systemd/system/multi-user.target.wants/" + UNIT) if os.path.lexists(p)]
    check(not left, f"left behind by the purge: {left}")
    check(prop("ActiveState") != "active", "the service still runs after the purge")
    check(run("pgrep", "-x", "numabalanced").returncode != 0, "a numabalanced process is still running")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--deb", required=True)
    a = ap.parse_args()
    check(os.path.exists("/run/systemd/system"), "not a systemd guest")
    deb = find_deb(a.deb)
    if not deb:
        check(False, f"no package at {a.deb}: scripts/build-deb builds it (scripts/test does)")
        return nbtest.finish()
    results["deb"] = os.path.basename(deb)
    tmp = tempfile.mkdtemp(prefix="test-deb-", dir="/run")
    try:
        if writable_root() and test_install(deb):
            test_shipped_and_autopkgtest()
            test_fixes(a.build)
            test_upgrade(deb, tmp)
            test_remove_restores(a.build)
            test_purge()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with open(os.path.join(os.environ.get("NUMABALANCED_RESULTS", "/tmp"), "deb.json"), "w") as f:
            json.dump(results, f, indent=1)
    return nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
