#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The generated numabalanced.service: systemd-analyze verify passes, and
systemd-analyze security --offline=yes rates it at most 2.5.

    test-systemd-unit.py UNIT NUMABALANCED MANDIR

UNIT is the unit as meson generated it (ExecStart=@sbindir@/numabalanced filled
in). verify checks that ExecStart names an executable, so the copy that is verified
has that path replaced by the freshly built NUMABALANCED (in ExecReload= and
ExecStopPost= too); everything else is byte for byte the generated unit. The man
pages in MANDIR are put on MANPATH so that verify also finds the unit's
Documentation= pages. The unit's settings that the daemon depends on are checked
too: Type=notify, the reload and watchdog, ExecStopPost=numabalanced
--restore-affinity (the threads' affinities given back whatever ended the daemon),
the capability set, no memory-node or CPU restriction (see the unit's comments),
and nothing that could take a migration worker off its CPU while the kernel holds a
batch of the workload's pages unmapped (no CPUQuota=, Nice= above 0, idle or batch
scheduling, or CPUWeight= below the default).
Skipped (77) without systemd-analyze.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

MAX_EXPOSURE = 2.5
CAPS = {"CAP_SYS_PTRACE", "CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN", "CAP_SYS_NICE", "CAP_DAC_READ_SEARCH"}


def settings(text):
    """{key: [values]} of the [Service] and [Unit] sections."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;[":
            continue
        k, _, v = line.partition("=")
        out.setdefault(k.strip(), []).append(v.strip())
    return out


def main():
    if len(sys.argv) != 4:
        print("usage: test-systemd-unit.py UNIT NUMABALANCED MANDIR", file=sys.stderr)
        return 2
    unit, daemon, mandir = sys.argv[1:]
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        nbtest.skip("systemd-analyze not found (Debian package systemd)")
    text = open(unit).read()
    s = settings(text)

    # What the daemon relies on.
    exec_start = s.get("ExecStart", [""])[0]
    check(re.fullmatch(r"/\S+/numabalanced", exec_start),
          f"ExecStart={exec_start}: expected an absolute path to numabalanced with @sbindir@ substituted")
    check(s.get("Type") == ["notify"], f"Type={s.get('Type')}: expected notify")
    # A reload checks the file first (a broken one fails systemctl reload), then signals.
    reload = s.get("ExecReload", [])
    check(len(reload) == 2 and re.fullmatch(r"/\S+/numabalanced --check-config-of \$MAINPID", reload[0]) and
          reload[1] == "/bin/kill -HUP $MAINPID",
          f"ExecReload={reload}: expected numabalanced --check-config-of $MAINPID, then /bin/kill -HUP $MAINPID")
    # Whatever ended the daemon (a stop that timed out, a kill, a crash, a failed
    # start), the threads it narrowed get their affinity back (docs/RULES.md).
    stop_post = s.get("ExecStopPost", [])
    check(len(stop_post) == 1 and stop_post[0] == exec_start + " --restore-affinity",
          f"ExecStopPost={stop_post}: expected {exec_start} --restore-affinity")
    # A broken configuration at start exits 6, which must not be restarted for ever.
    check(s.get("RestartPreventExitStatus") == ["6"],
          f"RestartPreventExitStatus={s.get('RestartPreventExitStatus')}: expected 6")
    check(s.get("WatchdogSec"), "no WatchdogSec=")
    # A pidfd per balanced process: the default soft limit of 1024 is far too few.
    nofile = s.get("LimitNOFILE", ["0"])[-1].split(":")[-1]
    check(nofile.isdigit() and int(nofile) >= 65536, f"LimitNOFILE={nofile}: expected at least 65536")
    # Memory bounded by design: a limit, with the headroom the unit's comment explains
    # over the 18.9 MB measured at 10,000 processes.
    mem = s.get("MemoryMax", ["infinity"])[-1]
    m = re.fullmatch(r"(\d+)([KMG]?)", mem)
    mem_mb = int(m.group(1)) * {"": 1 / 2**20, "K": 1 / 1024, "M": 1, "G": 1024}[m.group(2)] if m else 0
    check(76 <= mem_mb <= 1024, f"MemoryMax={mem}: expected between 76M (4x the measured peak) and 1G")
    caps = set(" ".join(s.get("CapabilityBoundingSet", [])).split())
    check(caps == CAPS, f"CapabilityBoundingSet={sorted(caps)}, expected {sorted(CAPS)}")
    # ProtectKernelTunables= makes /sys read-only: DAMON's sysfs must be writable again,
    # or DAMON evidence is off under the unit (it was, before this line).
    rw = " ".join(s.get("ReadWritePaths", [])).split()
    check("-/sys/kernel/mm/damon/admin" in rw and "-/proc/sys/kernel/numa_balancing" in rw,
          f"ReadWritePaths={rw}: expected -/sys/kernel/mm/damon/admin (DAMON) and "
          "-/proc/sys/kernel/numa_balancing")
    for forbidden in ("NUMAPolicy", "NUMAMask", "AllowedMemoryNodes", "CPUAffinity", "AllowedCPUs",
                      "PrivateUsers", "AmbientCapabilities", "User", "DynamicUser"):
        check(forbidden not in s, f"{forbidden}= is set: the daemon needs every memory node, pins itself to "
              f"service_cpus and runs as root with the bounding set only")
    # A move call holds the pages of a kernel batch unmapped, and the workload's threads
    # that touch one wait until the worker maps it again: nothing may take the worker off
    # its CPU in the middle (docs/RULES.md, "How long a workload thread waits").
    check("CPUQuota" not in s, f"CPUQuota={s.get('CPUQuota')}: a throttled worker keeps a batch of the "
          "workload's pages unmapped until the next period")
    nice = s.get("Nice", ["0"])[-1]
    check(re.fullmatch(r"-?\d+", nice) and int(nice) <= 0, f"Nice={nice}: the workers must not run below "
          "the workload they make wait")
    check(s.get("CPUSchedulingPolicy", ["other"])[-1] in ("other", "fifo", "rr"),
          f"CPUSchedulingPolicy={s.get('CPUSchedulingPolicy')}: idle or batch would leave a worker off its "
          "CPU in the middle of a batch")
    weight = s.get("CPUWeight", ["100"])[-1]
    check(not weight.isdigit() or int(weight) >= 100, f"CPUWeight={weight}: below the default, the workers "
          "lose their CPU to the workload in the middle of a batch")
    check(s.get("RuntimeDirectory") == ["numabalanced"],
          "RuntimeDirectory=numabalanced missing (the control socket lives there)")
    check(s.get("RuntimeDirectoryPreserve") == ["yes"],
          f"RuntimeDirectoryPreserve={s.get('RuntimeDirectoryPreserve')}: expected yes (the operator's "
          "kernel.numa_balancing saved there must outlive a daemon killed before its exit)")
    for want in ("SystemCallFilter", "RestrictAddressFamilies", "ProtectProc", "ProtectSystem"):
        check(want in s, f"{want}= missing")

    env = dict(os.environ, SYSTEMD_LOG_COLOR="0", SYSTEMD_PAGER="cat")
    verify(analyze, env, text, exec_start, daemon, mandir)
    security(analyze, env, unit)
    nbtest.finish()


def verify(analyze, env, text, exec_start, daemon, mandir):
    """systemd-analyze verify: the generated unit with ExecStart pointed at the
    build's binary, and the man pages on MANPATH for its Documentation=."""
    tmp = nbtest.tmpdir("test-systemd-unit-")
    vdir = os.path.join(tmp, "unit")
    os.mkdir(vdir)
    vunit = os.path.join(vdir, "numabalanced.service")
    with open(vunit, "w") as f:
        f.write(text.replace(f"ExecStart={exec_start}\n", f"ExecStart={os.path.abspath(daemon)}\n")
                .replace(f"ExecReload={exec_start} ", f"ExecReload={os.path.abspath(daemon)} ")
                .replace(f"ExecStopPost={exec_start} ", f"ExecStopPost={os.path.abspath(daemon)} "))
    manpath = os.path.join(tmp, "man")
    for page in os.listdir(mandir):
        m = re.fullmatch(r".+\.([1-8])", page)
        if m:
            os.makedirs(os.path.join(manpath, f"man{m.group(1)}"), exist_ok=True)
            shutil.copy(os.path.join(mandir, page), os.path.join(manpath, f"man{m.group(1)}", page))
    r = subprocess.run([analyze, "verify", vunit], capture_output=True, text=True,
                       env=dict(env, MANPATH=manpath + ":"))
    out = (r.stdout + r.stderr).strip()
    if check(r.returncode == 0 and not out, f"systemd-analyze verify (exit {r.returncode}):\n{out}"):
        print("ok: systemd-analyze verify: no complaints (ExecStart, Documentation= man pages included)")


def security(analyze, env, unit):
    """systemd-analyze security, offline, on the unit exactly as generated."""
    r = subprocess.run([analyze, "security", "--offline=yes", "--no-pager", unit],
                       capture_output=True, text=True, env=env)
    out = r.stdout + r.stderr
    m = re.search(r"Overall exposure level for numabalanced\.service: (\d+(?:\.\d+)?)", out)
    if not check(m, f"systemd-analyze security printed no exposure level (exit {r.returncode}):\n{out}"):
        return
    score = float(m.group(1))
    print(f"systemd-analyze security --offline=yes: exposure {score} (at most {MAX_EXPOSURE})")
    check(score <= MAX_EXPOSURE, f"exposure {score} > {MAX_EXPOSURE}:\n{out}")
    for line in out.splitlines():
        if line.startswith("\u2717"):
            print("  " + re.sub(r"\s{2,}", "  ", line.strip()))


if __name__ == "__main__":
    sys.exit(main())
