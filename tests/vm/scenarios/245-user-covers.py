# SPDX-License-Identifier: GPL-2.0-or-later
"""A user's opt-in covers its own processes only: its sudo and root's process there are left alone.

uid 1000 owns a delegated cgroup and opts it in with user.numabalanced. In it run
three misplaced processes: uid 1000's own, one with sudo's ids (real uid 1000,
effective and saved uid 0, as a setuid program started from the user's shell has),
and one of root's. The user's own is balanced; the other two are not moved at all,
uid 1000's `numabalancectl list` shows only its own, and its `explain` of the other
two is word for word its explain of a pid that does not exist (root's explain says
not-covered)."""
import json
import os
import subprocess
import tempfile
import time

from scenario import check, copy_for_any_user, fail, sh, sysctl_numa_balancing, wait_local

USER = 1000
AS_USER = ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups"]


def start(env, cgroup, size_mb, ready, prefix=(), ids=None):
    """The workload in cgroup (64 MiB on node 0, threads on node 1), started through
    prefix (setpriv) or with setresuid(ids) before the exec; the three from the same
    copy every user can reach (copy_for_any_user), not from the build directory."""
    def enter():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        if ids:
            os.setresuid(*ids)

    p = subprocess.Popen([*prefix, copy_for_any_user(env.workload), str(size_mb), "0", "1", "default", "1", ready],
                         preexec_fn=enter, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    env.procs.append(p)
    deadline = time.time() + 120
    while not os.path.exists(ready):
        if p.poll() is not None:
            fail(f"workload exited: {p.stderr.read().decode()}")
        if time.time() >= deadline:
            fail("workload did not get ready")
        time.sleep(0.2)
    pid, begin = open(ready).read().split()[:2]
    return int(pid), int(begin, 16)


def ctl_json(env, *args, user=False):
    r = sh(*(AS_USER + [copy_for_any_user(env.ctl)] if user else [env.ctl]), "--json", *args, check_rc=False)
    try:
        return json.loads(r.stdout)
    except ValueError:
        fail(f"numabalancectl {' '.join(args)}: not JSON: {r.stdout!r} {r.stderr!r}")


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-user")
    os.chown(cg, USER, USER)
    sh(*AS_USER, "setfattr", "-n", "user.numabalanced", "-v", "balance", cg)
    rd = tempfile.mkdtemp(prefix="nb-user-")
    os.chmod(rd, 0o777)
    mine, _ = start(env, cg, 128, os.path.join(rd, "mine"), prefix=AS_USER)
    sudo, s_start = start(env, cg, 64, os.path.join(rd, "sudo"), ids=(USER, 0, 0))
    roots, r_start = start(env, cg, 64, os.path.join(rd, "root"))
    before = {sudo: env.region_nodes(sudo, s_start), roots: env.region_nodes(roots, r_start)}
    env.start_daemon()
    t = wait_local(env, mine, 0.95, 120)
    res["seconds_to_95pct_local"] = t
    check(t is not None, "the user's own process was not balanced: the opt-in did nothing")
    time.sleep(3)
    check(env.region_nodes(sudo, s_start) == before[sudo], "the sudo-like process was moved")
    check(env.region_nodes(roots, r_start) == before[roots], "root's process in the user's cgroup was moved")

    listed = {p["pid"] for p in ctl_json(env, "list", user=True).get("processes", [])}
    check(mine in listed and sudo not in listed and roots not in listed, f"uid {USER} lists {listed}")
    watched = {p["pid"] for p in ctl_json(env, "list").get("processes", [])}
    check(mine in watched and sudo not in watched and roots not in watched, f"the daemon watches {watched}")

    none = ctl_json(env, "explain", "2147483647", user=True)
    none.pop("pid", None)
    for pid in (sudo, roots):
        ex = ctl_json(env, "explain", str(pid), user=True)
        ex.pop("pid", None)
        check(ex == none, f"uid {USER}'s explain of {pid}: {ex}, of no process: {none}")
        ex = ctl_json(env, "explain", str(pid))
        check(ex.get("why") == "not-covered", f"root's explain of {pid}: {ex}")
    env.stop_daemon()
