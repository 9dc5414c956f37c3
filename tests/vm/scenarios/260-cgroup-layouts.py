# SPDX-License-Identifier: GPL-2.0-or-later
"""The cgroup v1 and hybrid layouts: the unified hierarchy used where there is one,
the start refused where there is none.

The daemon runs in a private mount namespace whose /sys/fs/cgroup is a tmpfs, as on
a host in the v1/hybrid layout (RHEL 8, Ubuntu 20.04):
  - hybrid: the cgroup2 hierarchy mounted at /sys/fs/cgroup/unified. The daemon says
    it uses that one, and fixes a misplaced workload in a cgroup opted in there;
  - v1 only: nothing at /sys/fs/cgroup/unified. The daemon exits non-zero at once,
    and its message names the layout and what to change."""
import os
import subprocess

from scenario import check, fail, kernel_stacks, sysctl_numa_balancing, wait_local, wait_log

# The daemon under a private /sys/fs/cgroup: a tmpfs, with cgroup2 at unified/ if asked.
WRAPPER = """#!/bin/sh
exec unshare -m --propagation private sh -c '
mount -t tmpfs tmpfs /sys/fs/cgroup || exit 1
if [ {unified} = 1 ]; then
        mkdir /sys/fs/cgroup/unified && mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified || exit 1
fi
exec "$0" "$@"' {daemon} "$@"
"""


def wrapper(env, unified):
    path = env.tmp_path("hybrid-daemon")
    with open(path, "w") as f:
        f.write(WRAPPER.format(daemon=env.daemon_bin, unified=1 if unified else 0))
    os.chmod(path, 0o700)
    return path


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-hybrid", "balance")
    p, _, _ = env.start_workload(cg, 64, 0, 1)
    env.start_daemon(daemon_bin=wrapper(env, unified=True))
    wait_log(env, "/sys/fs/cgroup is the cgroup v1/hybrid layout: using the cgroup2 hierarchy at "
                  "/sys/fs/cgroup/unified", 30)
    t = wait_local(env, p.pid, 0.95, 120)
    res["hybrid_seconds_to_95pct_local"] = t
    check(t is not None, "hybrid layout: the workload opted in under /sys/fs/cgroup/unified was not fixed in 120 s")
    env.stop_daemon()

    # (env.conf as the daemon above had it.) Its output goes to a file, not a pipe: a
    # process left holding a pipe would look like a daemon that does not exit.
    out_path = env.tmp_path("v1-daemon.log")
    with open(out_path, "w") as out:
        d = subprocess.Popen([wrapper(env, unified=False), "--foreground", "--config", env.conf],
                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = d.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # Where it hangs, before it is killed: the wrapper (unshare, mount) or the daemon.
            stacks = kernel_stacks(d.pid)
            d.kill()
            d.wait()
            fail(f"v1 layout: the daemon was still running after 30 s: it did not refuse to start; "
                 f"its output: {open(out_path).read()[-600:]!r}; where it was: {stacks}")
    log = open(out_path).read()
    check(rc != 0, f"v1 layout: the daemon did not refuse to start (exit status {rc})")
    check("/sys/fs/cgroup is not a cgroup2 file system and there is none at /sys/fs/cgroup/unified" in log and
          "systemd.unified_cgroup_hierarchy=1" in log, f"v1 layout: the message does not say what to change: {log[-600:]}")
    res["v1_message"] = [ln for ln in log.splitlines() if "cgroup2" in ln][:1]
