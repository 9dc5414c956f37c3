# SPDX-License-Identifier: GPL-2.0-or-later
"""A settled process with a huge mapping is checked by sampling, not numa_maps, and a change is still fixed.

256 MiB local on node 1 from the start, huge_vma = 128M. Asserted: once settled, its
scans sample (numabalancectl explain's sampled_scans grows to SAMPLED) without one more
full read (scans - sampled_scans stays put); then migratepages(8) moves the whole
process to node 0 behind the daemon's back, the next sampled scan sees it (the debug
line), reads numa_maps and the process is 95% local again within FIXED_WITHIN_S, and
once settled again it is back to sampling."""
import json
import subprocess
import time

from scenario import check, fail, sh, sysctl_numa_balancing, wait_local, wait_log

SAMPLED = 3
# Scans back off from 0.5 s to 4 s (the test timing): settled within about 8 s, and
# then one sampled scan every 4 s.
SETTLED_WITHIN_S = 60
FIXED_WITHIN_S = 60


def explain(env, pid):
    """numabalancectl explain --json: the daemon's record of pid (its scans); {} while
    the daemon does not answer yet (its control socket comes up after its start)."""
    r = sh(env.ctl, "explain", "--json", str(pid), check_rc=False)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def wait_sampled(env, pid, n, timeout):
    """Waits for explain's sampled_scans >= n; returns the document."""
    deadline = time.time() + timeout
    while True:
        d = explain(env, pid)
        if d.get("sampled_scans", 0) >= n:
            return d
        if time.time() >= deadline:
            fail(f"sampled_scans {d.get('sampled_scans')} (of {d.get('scans')} scans) < {n} after {timeout} s:\n"
                 f"{env.log()[-3000:]}")
        time.sleep(0.5)


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-huge", "balance")
    p, _, _ = env.start_workload(cg, 256, 1, 1)
    env.start_daemon(extra_conf="[sample]\nhuge_vma = 128M\n")

    first = wait_sampled(env, p.pid, 1, SETTLED_WITHIN_S)
    full = first["scans"] - first["sampled_scans"]
    d = wait_sampled(env, p.pid, SAMPLED, SETTLED_WITHIN_S)
    res["full_reads_before_sampling"] = full
    check(d["scans"] - d["sampled_scans"] == full,
          f"full reads went on while settled: {d['scans'] - d['sampled_scans']} after {full}")
    check(env.show(p.pid)["local_share"] >= 0.95, "not local while settled")

    subprocess.run(["migratepages", str(p.pid), "1", "0"], check=True, timeout=120)
    t0 = time.time()
    wait_log(env, f"pid={p.pid}: VMA ", timeout=FIXED_WITHIN_S)
    check(f"pid={p.pid}: VMA " in env.log() and "its sampled placement changed: reading numa_maps" in env.log(),
          f"the change was not seen by sampling:\n{env.log()[-3000:]}")
    t = wait_local(env, p.pid, 0.95, FIXED_WITHIN_S)
    res["seconds_to_95pct_after_the_change"] = None if t is None else round(time.time() - t0, 1)
    check(t is not None, f"not 95% local within {FIXED_WITHIN_S} s of migratepages")
    again = wait_sampled(env, p.pid, d["sampled_scans"] + 1, SETTLED_WITHIN_S)
    res["sampled_scans"] = again["sampled_scans"]
    env.stop_daemon()
