# SPDX-License-Identifier: GPL-2.0-or-later
"""The engine's scenarios as the package ships the daemon (engine.py --shipped).

In a guest booted with systemd as PID 1 (vmrun --systemd), Env.start_daemon() runs the
daemon as numabalanced.service, the unit as built (its capability bounding set,
ProtectKernelTunables=, ProtectControlGroups=, ...), with one drop-in: ExecStart= and
ExecStopPost= pointed at a copy of the freshly built daemon under /run (ProtectHome=
and PrivateTmp= hide a checkout under /root or /tmp) and the scenario's configuration.
Its log is the unit's journal, each line stamped with the seconds since the start as
the engine's own log is.

The tenants are not root: Env.cgroup() makes a cgroup delegated to TENANT_UID (the
directory and its cgroup.procs, cgroup.threads and cgroup.subtree_control chowned to
it, as systemd's Delegate= does) and the tenant itself opts it in with the
user.numabalanced xattr; the workloads join it as root and then drop to the tenant
(no groups, no capabilities) before they exec a copy every user can run.

ShippedDaemon stands in for the Popen of a daemon started by hand: send_signal(SIGTERM)
and kill() act on the unit through systemctl; poll() and wait() read /proc and the unit's
cgroup.
"""
import os
import signal
import subprocess
import threading
import time

UNIT = "numabalanced.service"
RUN_DIR = "/run/systemd/system"
TEST_DIR = "/run/numabalanced-test"
# The test bed's bound on a stop with its ExecStopPost= (install()).
STOP_POST_S = 180
TENANT_UID = 65534   # nobody
TENANT_GID = 65534
# Files a tenant's workload writes (ready files): every user may create them.
TENANT_TMP = "/run/nb-tenant-tmp"
AS_TENANT = ["setpriv", f"--reuid={TENANT_UID}", f"--regid={TENANT_GID}", "--clear-groups",
             "--inh-caps=-all", "--bounding-set=-all"]

# systemctl gives up on PID 1 after sd-bus's 25 s; under TCG loading a unit can take
# longer than that.
os.environ["SYSTEMD_BUS_TIMEOUT"] = "170s"


def systemctl(*args, ok=True, timeout=180):
    r = subprocess.run(["systemctl", *args], capture_output=True, text=True, timeout=timeout)
    if ok and r.returncode != 0:
        raise RuntimeError(f"systemctl {' '.join(args)} exited {r.returncode}: {r.stdout.strip()} "
                           f"{r.stderr.strip()}")
    return r


def props(*names):
    out = systemctl("show", *(f"--property={n}" for n in names), UNIT).stdout
    got = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return {n: got.get(n, "").strip() for n in names}


def is_systemd():
    return os.path.realpath("/proc/1/exe").endswith("/systemd")


_installed = False


def install(build, conf):
    """The unit as built, with the test's drop-in; the daemon copied under /run. Once
    a boot, before anything names the unit: systemd then reads it, drop-in included,
    when first asked, and no daemon-reload is needed (one took over 180 s in a 6.1
    guest under TCG, rerunning every generator). conf's path stays the same for every
    start of the boot; its contents change."""
    global _installed
    if _installed:
        return
    _installed = True
    os.makedirs(TEST_DIR, exist_ok=True)
    daemon = os.path.join(TEST_DIR, "numabalanced")
    tmp = daemon + ".new"
    with open(os.path.join(build, "daemon", "numabalanced"), "rb") as src, open(tmp, "wb") as dst:
        dst.write(src.read())
    os.chmod(tmp, 0o755)
    os.rename(tmp, daemon)
    with open(os.path.join(build, "systemd", UNIT)) as f:
        unit = f.read()
    with open(os.path.join(RUN_DIR, UNIT), "w") as f:
        f.write(unit)
    dropin = os.path.join(RUN_DIR, UNIT + ".d")
    os.makedirs(dropin, exist_ok=True)
    stop_post = ""
    if "ExecStopPost=" in unit:
        stop_post = f"ExecStopPost=\nExecStopPost={daemon} --restore-affinity\n"
    with open(os.path.join(dropin, "test.conf"), "w") as f:
        # LeakSanitizer (an ASan build) stops the world with ptrace, which the unit's
        # SystemCallFilter= refuses: no leak check under the unit (the engine's other
        # runs do it). The restart limit is lifted: a scenario starts and stops often.
        # TimeoutStopSec= also bounds ExecStopPost=, a new process of the whole daemon
        # binary: under TCG, beside the scenario's busy threads on every CPU, its dynamic
        # loading alone took 7-10 s (strace: 19 s of library loading and a 6.6 s
        # relocation, traced), an ASan build past the unit's 30 s. The daemon's own stop
        # is still held to 30 s (Env.stop_daemon, ShippedDaemon.wait_main).
        # ASan keeps freed memory in a quarantine of 256 MiB by default: as much as the
        # unit's MemoryMax=, which killed an ASan daemon (memcg OOM) after 36 s of
        # exchange-across's scans of a 621 MiB process. 32 MiB keeps it under the limit.
        f.write(f"[Unit]\nStartLimitIntervalSec=0\n[Service]\nExecStart=\nExecStart={daemon} --config {conf}\n"
                f"ExecReload=\nExecReload={daemon} --check-config-of $MAINPID\nExecReload=/bin/kill -HUP $MAINPID\n"
                f"{stop_post}TimeoutStopSec={STOP_POST_S}s\nEnvironment=ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=32\n")


# The unit's cgroup (the guest's unified hierarchy): who runs in it, the main process
# or ExecStopPost=, is read here rather than asked of PID 1.
UNIT_CGROUP = os.path.join("/sys/fs/cgroup/system.slice", UNIT)


def _proc_start(pid):
    """pid's start time (field 22 of /proc/PID/stat), None when gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def _unit_pids():
    try:
        with open(os.path.join(UNIT_CGROUP, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class ShippedDaemon:
    """The unit's main process, as much of a Popen as the engine uses.

    Started and stopped with systemctl; whether it runs is read from /proc and the
    unit's cgroup. Each systemctl call is a D-Bus round trip to PID 1, and in a TCG
    guest whose CPUs a scenario's readers keep busy one took 2-24 s (traced: a start
    and a stop of place-bound cost 54 and 60 s when polled with `systemctl show`, about
    20 s the rest of the scenario).

    Known gap: poll() reports the exit status as soon as the main process is gone and
    no ExecStopPost= process is in the cgroup; in the moment before PID 1 spawns
    ExecStopPost= it may read ExecMainStatus before PID 1 has recorded the exit (then
    0). The next start waits for the stop job in systemd either way."""

    def __init__(self):
        self.pid = None
        self.start_time = None
        self.returncode = None

    def start(self):
        # No reset-failed: the drop-in lifts the start limit, and a failed unit starts.
        systemctl("start", "--no-block", UNIT)
        deadline = time.time() + 120
        next_look = time.time() + 10
        while time.time() < deadline:
            for pid in _unit_pids():
                try:
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                except OSError:
                    continue
                # The main process once it has exec'd the daemon (ExecStart=).
                if cmd and cmd[0].endswith(b"/numabalanced") and b"--config" in cmd:
                    self.pid = pid
                    self.start_time = _proc_start(pid)
                    return
            if time.time() >= next_look:   # PID 1's view: a unit that failed at once
                p = props("MainPID", "ActiveState")
                if p["MainPID"] not in ("", "0"):
                    self.pid = int(p["MainPID"])
                    self.start_time = _proc_start(self.pid)
                    return
                if p["ActiveState"] == "failed":
                    break
                next_look = time.time() + 10
            time.sleep(0.2)
        self.returncode = self._status()

    def _status(self):
        p = props("ExecMainStatus")
        return int(p["ExecMainStatus"] or 0)

    def _stopping(self):
        """ExecStopPost= still running (the main process gone)."""
        for pid in _unit_pids():
            try:
                if b"--restore-affinity" in open(f"/proc/{pid}/cmdline", "rb").read():
                    return True
            except OSError:
                pass
        return False

    def main_exited(self):
        """Whether the main process is gone (ExecStopPost= may still run)."""
        return self.returncode is not None or _proc_start(self.pid) != self.start_time

    def poll(self):
        if self.returncode is not None:
            return self.returncode
        if not self.main_exited() or self._stopping():
            return None
        self.returncode = self._status()
        return self.returncode

    def wait_main(self, timeout):
        """Waits for the main process to be gone, up to timeout s."""
        deadline = time.time() + timeout
        while not self.main_exited():
            if time.time() >= deadline:
                raise subprocess.TimeoutExpired(UNIT, timeout)
            time.sleep(0.2)

    def wait(self, timeout=None):
        deadline = time.time() + (timeout if timeout is not None else 3600)
        while self.poll() is None:
            if time.time() >= deadline:
                raise subprocess.TimeoutExpired(UNIT, timeout)
            time.sleep(0.2)
        return self.returncode

    def send_signal(self, sig):
        if sig == signal.SIGTERM:
            systemctl("stop", "--no-block", UNIT)
        else:
            systemctl("kill", f"--signal={int(sig)}", UNIT)

    def kill(self):
        """kill -9 of the main process, the unit then left stopped (no automatic
        restart): what the scenarios' "the daemon killed, then started again" means.
        ExecStopPost= still runs, as it does after any end of the main process."""
        systemctl("kill", "--signal=KILL", "--kill-who=main", UNIT, ok=False)
        # At once: a stop cancels the restart Restart=on-failure schedules (RestartSec=)
        # and waits for the main process to be gone and ExecStopPost= to have run.
        systemctl("stop", UNIT, ok=False)
        self.returncode = -9


def start(build, conf, log_path):
    """Installs the unit for conf, starts it and follows its journal into log_path.
    Returns (ShippedDaemon, t0)."""
    install(build, conf)
    t0 = time.time()
    follow = subprocess.Popen(["journalctl", "-f", "-n", "0", "-o", "cat", "-u", UNIT], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)

    def pump():
        with open(log_path, "w") as log:
            for line in iter(follow.stdout.readline, b""):
                log.write(f"{time.time() - t0:8.2f} {line.decode(errors='replace')}")
                log.flush()

    threading.Thread(target=pump, daemon=True).start()
    time.sleep(1.0)    # journalctl -f reads the journal's end before the start
    d = ShippedDaemon()
    d.follow = follow
    d.start()
    return d, t0


def tenant_tmp():
    os.makedirs(TENANT_TMP, exist_ok=True)
    os.chmod(TENANT_TMP, 0o1777)
    return TENANT_TMP


def delegate(path):
    """path (a new cgroup) delegated to the tenant, as systemd's Delegate= does."""
    for f in ("", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"):
        p = os.path.join(path, f) if f else path
        if os.path.exists(p):
            os.chown(p, TENANT_UID, TENANT_GID)


def set_mode(path, mode):
    """The tenant opts its cgroup in (mode), or out (None), with user.numabalanced: a
    forked child that becomes the tenant (no exec: each cost 2-3 s beside busy readers
    under TCG)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            become_tenant()
            if mode:
                os.setxattr(path, "user.numabalanced", mode.encode())
            else:
                os.removexattr(path, "user.numabalanced")
            os._exit(0)
        except BaseException as e:
            os.write(w, str(e).encode()[:1000])
            os._exit(1)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        err = f.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if status != 0 and mode:
        raise RuntimeError(f"the tenant could not opt {path} in: {err}")


def become_tenant():
    """In a preexec_fn, after joining the cgroup: the tenant, no groups."""
    os.setgroups([])
    os.setresgid(TENANT_GID, TENANT_GID, TENANT_GID)
    os.setresuid(TENANT_UID, TENANT_UID, TENANT_UID)
