# SPDX-License-Identifier: GPL-2.0-or-later
"""A settled process moved to the other node is fixed within seconds (react_ms).

A settled process whose thread is moved to the other node later (as an operator
or a job scheduler would) is fixed within seconds, not at its next backed-off scan:
the BPF program's node-change event brings its decision forward ([sample]
react_ms). Settled here means scanned at 1, 3, 7 and 15 s, the next scan due at
31 s (scan_max_ms = 60000); the move happens at about 17 s and the memory must be
local before 27 s, which without the event would be impossible (the control: with
react_ms = 0 the same process is still remote then)."""
import os
import time

from scenario import check, local_share_direct, node_cpus, sh, sysctl_numa_balancing, wait_local


def run(env, res):
    sysctl_numa_balancing(0)
    results = {}
    for react in (200, 0):
        cg = env.cgroup(f"nb-react{react}", "balance")
        p, start, _ = env.start_workload(cg, 128, 0, 0)
        # The shipped timings except scan_max_ms, so that the backoff is long.
        conf = os.path.join(env.tmp, "numabalanced-react.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\nservice_cpus = 0\nscan_max_ms = 60000\nlog_level = debug\n"
                    f"[sample]\nreact_ms = {react}\n")
        env.run_daemon(conf)
        time.sleep(17)
        check(local_share_direct(p.pid) >= 0.95, f"react={react}: the process was not local on node 0 to begin with")
        sh("taskset", "-a", "-p", "-c", node_cpus(1), str(p.pid))
        # Until the reader has run on node 1, the share still counts node 0 as local.
        time.sleep(0.3)
        t = wait_local(env, p.pid, 0.95, 10)
        results[react] = t
        log = env.log()
        env.stop_daemon()
        env.cleanup()
        env.daemon_log = None
        if react:
            check(t is not None, f"react_ms={react}: not local within 10 s of the move (next scan was ~14 s away)")
            check("a thread now runs on node 1, deciding again in 200 ms" in log, "no node-change event logged")
    res["seconds_to_95pct_local"] = results
    check(results[0] is None, f"react_ms=0: local after {results[0]} s: the test cannot tell the event from a scan")
