# SPDX-License-Identifier: GPL-2.0-or-later
"""Privilege: the unit's capabilities suffice; each one missing is named, once.

Privilege (issue 7): the daemon with exactly the unit's capabilities converges
scenario (a) (256 MiB, trusted.* opt-in) with the BPF source; with each one of them
missing it starts, and says in one line which one and what it cannot do without it;
without CAP_SYS_ADMIN the trusted.* opt-in is indeed not seen."""
import os
import re

from scenario import REPO, check, fail, sh, sysctl_numa_balancing, wait_local

UNIT_CAPS = {"CAP_SYS_PTRACE", "CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN", "CAP_SYS_NICE", "CAP_DAC_READ_SEARCH"}


def unit_caps():
    """The capabilities of systemd/numabalanced.service.in's CapabilityBoundingSet=."""
    for line in open(os.path.join(REPO, "systemd", "numabalanced.service.in")):
        if line.startswith("CapabilityBoundingSet="):
            return line.split("=", 1)[1].split()
    fail("no CapabilityBoundingSet= in the unit")


def setpriv_wrapper(env, caps, name):
    """A wrapper running the daemon as root with exactly caps in its bounding set (so in
    its permitted and effective sets after exec), none inheritable."""
    wrapper = os.path.join(env.tmp, f"numabalanced-{name}")
    keep = ",".join("+" + c.lower().replace("cap_", "") for c in caps)
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec setpriv --inh-caps=-all --bounding-set=-all,{keep} {env.daemon_bin} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    return wrapper


def with_unit_caps(env, res, caps):
    """Exactly the unit's set: scenario (a) converges with the BPF source."""
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-caps", "balance")
    p, start, _ = env.start_workload(cg, 256, 0, 1)
    env.start_daemon(daemon_bin=setpriv_wrapper(env, caps, "unitcaps"))
    t = wait_local(env, p.pid, 0.95, 300)
    res["seconds_to_95pct_local"] = t
    check(t is not None, "with exactly the unit's capabilities: not 95% local within 300 s")
    env.stop_daemon()
    log = env.last_log
    check("Capabilities: CAP_SYS_PTRACE CAP_BPF CAP_PERFMON CAP_SYS_ADMIN CAP_SYS_NICE CAP_DAC_READ_SEARCH, all present" in log,
          "the daemon did not say it has all its capabilities")
    check("(source bpf" in log, "the BPF source was not used with the unit's capabilities")
    check("Missing capability" not in log, "a capability reported missing with the unit's set")


def one_fewer(env, res, caps, conf):
    """Each capability missing in turn: the daemon starts and names that one, once."""
    res["one_fewer"] = {}
    for cap in caps:
        w = setpriv_wrapper(env, [c for c in caps if c != cap], "minus-" + cap.lower())
        r = sh(w, "--once", "--config", conf, "--control-socket", "", check_rc=False)
        out = r.stdout + r.stderr
        lines = [ln for ln in out.splitlines() if "Missing capability" in ln]
        res["one_fewer"][cap] = {"exit": r.returncode, "lines": lines}
        check(r.returncode == 0, f"without {cap}: exit {r.returncode}: {out[-800:]}")
        check(len(lines) == 1 and lines[0].startswith(f"Missing capability {cap}: "),
              f"without {cap}: not named exactly once: {lines}")
        if cap == "CAP_SYS_ADMIN":
            check(re.search(r"cgroup\(s\) walked under /sys/fs/cgroup, 0 opted in", out),
                  f"without CAP_SYS_ADMIN the trusted.* opt-in was still seen: {out[-800:]}")
        if cap in ("CAP_BPF", "CAP_PERFMON"):
            # CAP_SYS_ADMIN stands in for them: still BPF, and the line says so.
            check("through CAP_SYS_ADMIN" in lines[0] if lines else False, f"without {cap}: {lines}")
            check("(source bpf" in out, f"without {cap} (CAP_SYS_ADMIN kept): the BPF source was not used")


def run(env, res):
    caps = unit_caps()
    check(set(caps) == UNIT_CAPS, f"the unit's capability set changed: {caps} (update caps.c and this test)")
    with_unit_caps(env, res, caps)
    conf = os.path.join(env.tmp, "numabalanced-caps.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\nservice_cpus = 0\nlog_level = debug\n")
    one_fewer(env, res, caps, conf)
    # Without CAP_SYS_ADMIN and CAP_BPF: the BPF source falls back to /proc, and says so.
    w = setpriv_wrapper(env, [c for c in caps if c not in ("CAP_SYS_ADMIN", "CAP_BPF")], "minus-admin-bpf")
    r = sh(w, "--once", "--config", conf, "--control-socket", "", check_rc=False)
    out = r.stdout + r.stderr
    check(r.returncode == 0 and "(source proc): BPF unavailable" in out and
          re.search(r"Missing capability CAP_BPF: no BPF: thread placement is sampled from /proc", out),
          f"without CAP_SYS_ADMIN and CAP_BPF: {out[-800:]}")
