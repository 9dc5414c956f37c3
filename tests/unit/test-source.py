#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The placement source choice (daemon/source.c), without a VM: numabalanced --once.

    test-source.py NUMABALANCED HAVE_BPF(0|1)

  - [sample] source = proc: the /proc source, and the line says the config chose it;
  - without the BPF capabilities (as root: setpriv drops CAP_BPF, CAP_PERFMON and
    CAP_SYS_ADMIN from the bounding set; as another user: none to drop), source = auto
    falls back to /proc, says why in one line, and runs; source = bpf refuses to start
    and says why;
  - built without BPF: auto says so, bpf refuses.
The BPF source itself is tested in the VM (tests/vm/test-bpf.py, engine-source)."""
import os
import shutil
import subprocess
import sys
import tempfile

daemon, have_bpf = sys.argv[1], sys.argv[2] == "1"
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


tmp = tempfile.mkdtemp(prefix="nb-source-")
cpu = min(os.sched_getaffinity(0))


def run(source, unprivileged):
    conf = os.path.join(tmp, f"{source}.conf")
    with open(conf, "w") as f:
        f.write(f"[daemon]\nservice_cpus = {cpu}\n[select]\ncgroup_root = {tmp}/no-cgroupfs\n"
                f"[sample]\nsource = {source}\n")
    cmd = [daemon, "--once", "--config", conf, "--control-socket", ""]
    if unprivileged and os.geteuid() == 0:
        cmd = ["setpriv", "--inh-caps=-all", "--bounding-set=-bpf,-sys_admin,-perfmon"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    lines = [ln for ln in (r.stdout + r.stderr).splitlines()
             if "Sampling where threads run" in ln or "[sample] source" in ln]
    return r.returncode, lines, r.stdout + r.stderr


rc, lines, out = run("proc", False)
check(rc == 0, f"source = proc: exit {rc}: {out}")
check(lines == ["Sampling where threads run from /proc (source proc): [sample] source = proc"],
      f"source = proc: {lines}")

if os.geteuid() == 0 and not shutil.which("setpriv"):
    print("SKIP: root without setpriv: cannot drop the BPF capabilities")
    sys.exit(77)

rc, lines, out = run("auto", True)
check(rc == 0, f"auto, unprivileged: exit {rc}: {out}")
check(len(lines) == 1, f"auto, unprivileged: the source was not said exactly once: {lines}")
if have_bpf:
    check(lines[:1] and lines[0].startswith("Sampling where threads run from /proc (source proc): BPF unavailable: ")
          and "Operation not permitted" in lines[0] and "CAP_BPF" in lines[0],
          f"auto, unprivileged: the fallback does not say why: {lines}")
else:
    check(lines == ["Sampling where threads run from /proc (source proc): built without BPF (-Dbpf)"],
          f"auto, built without BPF: {lines}")

rc, lines, out = run("bpf", True)
check(rc != 0, f"source = bpf, unprivileged: the daemon ran (exit {rc})")
check(any(ln.startswith("[sample] source = bpf, but ") for ln in lines),
      f"source = bpf, unprivileged: no error naming the cause: {out}")
check(not any("Sampling where threads run" in ln for ln in lines),
      f"source = bpf, unprivileged: it claims a source: {lines}")

shutil.rmtree(tmp, ignore_errors=True)
print("failures:", failures)
sys.exit(1 if failures else 0)
