# SPDX-License-Identifier: GPL-2.0-or-later
"""Without the BPF capabilities: falls back to /proc and says why; source = bpf refuses.

Without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (setpriv), source = auto falls back
to /proc, says why once, and the process is still fixed; source = bpf refuses to
start. The opt-in is user.* (trusted.* needs CAP_SYS_ADMIN to be read)."""
import os

from scenario import check, sh, sysctl_numa_balancing, wait_local


def run(env, res):
    wrapper = os.path.join(env.tmp, "numabalanced-nocaps")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec setpriv --inh-caps=-all --bounding-set=-bpf,-sys_admin,-perfmon "
                f"{env.daemon_bin} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    conf = os.path.join(env.tmp, "numabalanced-bpf-forced.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\nservice_cpus = 0\n[sample]\nsource = bpf\n")
    r = sh(wrapper, "--once", "--config", conf, "--control-socket", "", check_rc=False)
    check(r.returncode != 0, "source = bpf without privileges: the daemon started anyway")
    check("[sample] source = bpf, but BPF is unavailable" in r.stderr + r.stdout,
          f"source = bpf without privileges: no error naming the cause: {r.stderr}")

    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-nocaps", "balance", xattr="user.numabalanced")
    p, start, _ = env.start_workload(cg, 256, 0, 1)
    env.start_daemon(daemon_bin=wrapper)
    t = wait_local(env, p.pid, 0.95, 300)
    res["seconds_to_95pct_local"] = t
    check(t is not None, f"not 95% local within 300 s: {env.show(p.pid)['local_share']}")
    env.stop_daemon()
    log = env.last_log
    lines = [ln for ln in log.splitlines() if "Sampling where threads run" in ln]
    check(len(lines) == 1, f"the source was not logged exactly once: {lines}")
    check(lines and "(source proc): BPF unavailable: " in lines[0] and "Operation not permitted" in lines[0],
          f"the fallback line does not say why: {lines}")
