#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The generated numabalanced.service: systemd-analyze verify passes, and
systemd-analyze security --offline=yes rates it at most 2.5.

    test-systemd-unit.py UNIT NUMABALANCED MANDIR

UNIT is the unit as meson generated it (ExecStart=@sbindir@/numabalanced filled
in). verify checks that ExecStart names an executable, so the copy that is verified
has that one path replaced by the freshly built NUMABALANCED; everything else is
byte for byte the generated unit. The man pages in MANDIR are put on MANPATH so
that verify also finds the unit's Documentation= pages. The unit's settings that
the daemon depends on are checked too: Type=notify, the reload and watchdog, the
capability set, and no memory-node or CPU restriction (see the unit's comments).
Skipped (77) without systemd-analyze.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
MAX_EXPOSURE = 2.5
CAPS = {"CAP_SYS_PTRACE", "CAP_SYS_NICE", "CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN"}

failures = 0


def fail(msg):
    global failures
    print(f"FAIL: {msg}")
    failures += 1


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
        print("SKIP: systemd-analyze not found (Debian package systemd)")
        return SKIP
    text = open(unit).read()
    s = settings(text)

    # What the daemon relies on.
    exec_start = s.get("ExecStart", [""])[0]
    if not re.fullmatch(r"/\S+/numabalanced", exec_start):
        fail(f"ExecStart={exec_start}: expected an absolute path to numabalanced with @sbindir@ substituted")
    if s.get("Type") != ["notify"]:
        fail(f"Type={s.get('Type')}: expected notify")
    if s.get("ExecReload") != ["/bin/kill -HUP $MAINPID"]:
        fail(f"ExecReload={s.get('ExecReload')}: expected /bin/kill -HUP $MAINPID")
    if not s.get("WatchdogSec"):
        fail("no WatchdogSec=")
    caps = set(" ".join(s.get("CapabilityBoundingSet", [])).split())
    if caps != CAPS:
        fail(f"CapabilityBoundingSet={sorted(caps)}, expected {sorted(CAPS)}")
    for forbidden in ("NUMAPolicy", "NUMAMask", "AllowedMemoryNodes", "CPUAffinity", "AllowedCPUs",
                      "PrivateUsers", "AmbientCapabilities", "User", "DynamicUser"):
        if forbidden in s:
            fail(f"{forbidden}= is set: the daemon needs every memory node, pins itself to service_cpus "
                 f"and runs as root with the bounding set only")
    if s.get("RuntimeDirectory") != ["numabalanced"]:
        fail("RuntimeDirectory=numabalanced missing (the control socket lives there)")
    for want in ("SystemCallFilter", "RestrictAddressFamilies", "ProtectProc", "ProtectSystem"):
        if want not in s:
            fail(f"{want}= missing")

    with tempfile.TemporaryDirectory(prefix="test-systemd-unit-") as tmp:
        # verify: the generated unit with ExecStart pointed at the build's binary.
        vdir = os.path.join(tmp, "unit")
        os.mkdir(vdir)
        vunit = os.path.join(vdir, "numabalanced.service")
        with open(vunit, "w") as f:
            f.write(text.replace(f"ExecStart={exec_start}\n", f"ExecStart={os.path.abspath(daemon)}\n"))
        manpath = os.path.join(tmp, "man")
        for page in os.listdir(mandir):
            m = re.fullmatch(r".+\.([1-8])", page)
            if m:
                os.makedirs(os.path.join(manpath, f"man{m.group(1)}"), exist_ok=True)
                shutil.copy(os.path.join(mandir, page), os.path.join(manpath, f"man{m.group(1)}", page))
        env = dict(os.environ, MANPATH=manpath + ":", SYSTEMD_LOG_COLOR="0", SYSTEMD_PAGER="cat")
        r = subprocess.run([analyze, "verify", vunit], capture_output=True, text=True, env=env)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or out:
            fail(f"systemd-analyze verify (exit {r.returncode}):\n{out}")
        else:
            print("ok: systemd-analyze verify: no complaints (ExecStart, Documentation= man pages included)")

        # security, offline, on the unit exactly as generated.
        r = subprocess.run([analyze, "security", "--offline=yes", "--no-pager", unit],
                           capture_output=True, text=True, env=env)
        out = r.stdout + r.stderr
        m = re.search(r"Overall exposure level for numabalanced\.service: (\d+(?:\.\d+)?)", out)
        if not m:
            fail(f"systemd-analyze security printed no exposure level (exit {r.returncode}):\n{out}")
        else:
            score = float(m.group(1))
            print(f"systemd-analyze security --offline=yes: exposure {score} (at most {MAX_EXPOSURE})")
            if score > MAX_EXPOSURE:
                fail(f"exposure {score} > {MAX_EXPOSURE}:\n{out}")
            for line in out.splitlines():
                if line.startswith("\u2717"):
                    print("  " + re.sub(r"\s{2,}", "  ", line.strip()))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
