# SPDX-License-Identifier: GPL-2.0-or-later
"""The control socket answers within 1 s during a minute-long move; SIGTERM stops it.

The control socket during a long move: rate_limit_mb_s = 1 makes moving 64 MiB
of base pages in batches of 512 one run of about a minute (the budget is charged after
each batch, and one batch of the default size holds the whole range). While it runs,
numabalancectl status and list answer (the event loop waits on the workers; the
manager serves the socket every 100 ms), and SIGTERM stops the run within seconds."""
import json
import socket
import time

from scenario import check, node_share, sh, sysctl_numa_balancing, wait_log


def control_request(req, path="/run/numabalanced/control", timeout=30):
    """One request over the control socket, as numabalancectl sends it; the raw reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as so:
        so.settimeout(timeout)
        so.connect(path)
        so.sendall(req)
        out = b""
        while True:
            d = so.recv(65536)
            if not d:
                return out
            out += d


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-busy", "balance")
    p, start, _ = env.start_workload(cg, 64, 0, 1, pages="4k")
    env.start_daemon(extra_conf="[migrate]\nrate_limit_mb_s = 1\nbatch_pages = 512\n")
    wait_log(env, "moving ")
    time.sleep(1)
    worst = 0.0
    for i in range(5):
        # The daemon's own answer time, over the socket: numabalancectl's start-up (an
        # ASan binary under TCG) is not the daemon's (it took 1.1-2.0 s for the two).
        for req in (b"status\n", b"list\n"):
            t0 = time.time()
            reply = control_request(req)
            worst = max(worst, time.time() - t0)
            check(reply.startswith(b"{") and b"error" not in reply[:20], f"{req!r}: {reply[:200]!r}")
        st = json.loads(sh(env.ctl, "status", "--json").stdout)
        lst = json.loads(sh(env.ctl, "list", "--json").stdout)
        check(st.get("ticks", 0) > 0 and "processes" in lst, f"status/list without content: {st} {lst}")
        time.sleep(1)
    res["worst_answer_seconds"] = round(worst, 3)
    share = node_share(env, p.pid, start, 1)
    res["share_on_node1_while_asking"] = round(share, 3)
    check(worst < 1.0, f"the daemon took {worst:.2f} s to answer a request during the move")
    check(share < 0.9, f"the move was over before the questions ({share:.2f} on node 1): the test shows nothing")
    t0 = time.time()
    env.stop_daemon()
    res["sigterm_seconds"] = round(time.time() - t0, 2)
    check(time.time() - t0 < 5, f"SIGTERM during the move took {time.time() - t0:.1f} s")
