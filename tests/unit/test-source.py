#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The placement source choice (daemon/source.c), without a VM: numabalanced --once.

    test-source.py NUMABALANCED HAVE_BPF(0|1) TEST_DATA_DIR HAVE_CAPSTONE(0|1)

  - [sample] source = proc: the /proc source, and the line says the config chose it;
  - without the BPF capabilities (as root: setpriv drops CAP_BPF, CAP_PERFMON and
    CAP_SYS_ADMIN from the bounding set; as another user: none to drop), source = auto
    falls back to /proc, says why in one line, and runs; source = bpf refuses to start
    and says why;
  - built without BPF: auto says so, bpf refuses;
  - the sampling chain ([sample] pmu), said once, on stored /sys trees (the 2n2c
    topology with the PMU devices of tests/data/sys-pmu): no PMU, pmu = off, an Intel
    PEBS PMU without the BPF capabilities (page-level sampling off, and why), Arm SPE
    (found, not usable: AUX buffer). With no usable PMU, pmu = auto turns to software
    sampling: as root on this real CPU with Capstone built in, its self-check passes
    and the line says software and why; without Capstone it says it is refused. The daemon pins itself to the lowest CPU it may
    run on, which must be in that topology (CPUs 0-3): when it is not, these cases
    cannot run and the test is a skip (77) once the others passed.
The BPF source itself is tested in the VM (tests/vm/test-bpf.py, engine-source)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

daemon, have_bpf, data, have_capstone = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4] == "1"
tmp = nbtest.tmpdir("nb-source-")
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
    nbtest.skip("root without setpriv: cannot drop the BPF capabilities")

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


def chain(pmu, pmu_tree, unprivileged):
    """Runs --once on the 2n2c topology with tests/data/sys-pmu/PMU_TREE as the PMU
    devices; returns (exit status, the "Sampling chain" lines, all output)."""
    root = os.path.join(tmp, f"sys-{pmu_tree}")
    if not os.path.isdir(root):
        os.mkdir(root)
        os.symlink(os.path.join(data, "sys", "2n2c", "devices"), os.path.join(root, "devices"))
        os.symlink(os.path.join(data, "sys-pmu", pmu_tree, "bus"), os.path.join(root, "bus"))
    conf = os.path.join(tmp, f"chain-{pmu}.conf")
    with open(conf, "w") as f:
        f.write(f"[daemon]\nservice_cpus = {cpu}\n[select]\ncgroup_root = {tmp}/no-cgroupfs\n"
                f"[sample]\nsource = proc\npmu = {pmu}\n")
    cmd = [daemon, "--once", "--config", conf, "--control-socket", "", "--sys-root", root]
    if unprivileged and os.geteuid() == 0:
        cmd = ["setpriv", "--inh-caps=-all", "--bounding-set=-bpf,-sys_admin,-perfmon"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    return r.returncode, [ln for ln in out.splitlines() if "Sampling chain" in ln], out


# The stored 2n2c topology has CPUs 0-3: the daemon pins itself to one of ours.
if cpu >= 4:
    nbtest.skip(f"CPU {cpu}, the lowest this test may run on, is not in the stored 2n2c topology (CPUs 0-3): "
                "the sampling chain cases cannot run")



def check_auto_software(lines, no_pmu, what):
    """pmu = auto without a usable PMU (no_pmu: why, or its start): software, or refused
    and why."""
    check(len(lines) == 1, f"{what}: the chain was not said exactly once: {lines}")
    line = lines[0] if lines else ""
    if have_capstone and os.geteuid() == 0:
        check(line.startswith("Sampling chain: software (task-clock, 100 samples/s") and
              f"[sample] pmu = auto, and {no_pmu}" in line and line.endswith(") + /proc"),
              f"{what}: root on a real CPU with Capstone: not software, or not why: {line}")
    elif not have_capstone:
        check(line.startswith(f"Sampling chain: /proc only: page-level sampling off: {no_pmu}") and
              line.endswith("; software sampling refused: no instruction decoder in this build (x86-64 with "
                            "Capstone only)"), f"{what}: {line}")
    else:
        check(no_pmu in line and (line.startswith("Sampling chain: software (") or
                                  "software sampling refused: its self-check could not sample" in line),
              f"{what}, not root: {line}")


rc, lines, out = chain("auto", "none", False)
check(rc == 0, f"chain, no PMU: exit {rc}: {out}")
check_auto_software(lines, "no PMU with precise memory sampling (cpu/events/mem-loads, ibs_op, arm_spe_*)",
                    "chain, no PMU")
rc, lines, out = chain("off", "intel", False)
check(rc == 0 and lines == ["Sampling chain: /proc only: page-level sampling off: [sample] pmu = off"],
      f"chain, pmu = off: {rc} {out}")
rc, lines, out = chain("auto", "spe", False)
check(rc == 0, f"chain, SPE: exit {rc}: {out}")
check(len(lines) == 1 and "arm-spe (arm_spe_0) found, but Arm SPE records come through a perf AUX buffer" in lines[0],
      f"chain, SPE: {lines}")
check_auto_software(lines, "arm-spe (arm_spe_0) found, but Arm SPE records come through a perf AUX buffer",
                    "chain, SPE")
rc, lines, out = chain("auto", "intel", True)
if have_bpf:
    check(rc == 0 and len(lines) == 1 and lines[0].startswith("Sampling chain: /proc only: page-level sampling "
          "off: intel-pebs: ") and "CAP_PERFMON" in lines[0], f"chain, PEBS without capabilities: {rc} {out}")
else:
    check(rc == 0 and lines == ["Sampling chain: /proc only: page-level sampling off: intel-pebs found, but "
                                "numabalanced was built without BPF (-Dbpf)"], f"chain, no BPF: {rc} {out}")

nbtest.finish()
