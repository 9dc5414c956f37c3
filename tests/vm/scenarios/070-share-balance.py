# SPDX-License-Identifier: GPL-2.0-or-later
"""(share) a group's shared memory follows its threads; pages an outsider maps stay.

PostgreSQL's layout (tests/vm/shmgroup.c): a leader writes 64 MiB of shared memory
(/dev/shm) and 16 MiB of anonymous private memory while its cgroup's CPUs are node
0's, then forks three workers that read all of both and stays idle (the anonymous
pages: a pre-fork server's copy-on-write table). A process of another cgroup, not opted in, maps and writes
the object's first 4 MiB. The daemon runs with its shipped timings; the cgroup
(balance) is then given node 1's CPUs, its memory nodes unchanged. Asserted: the
group's pages (all but the outsider's 4 MiB) reach 90% on node 1 within 120 s of the
move (seconds_to_90pct records when; the leader's numa_maps is the kernel's view), the
copy-on-write pages too (cow_seconds_to_90pct), still shared (the leader's view),
every page the outsider maps is still on node 0, `explain` names the group (the leader
and its workers, the object's target node 1), status counts the shared bytes moved,
and the log says pages mapped outside the group were not moved."""
import os
import subprocess
import time

from scenario import check, explain, node_cpus, sysctl_numa_balancing, wait_ready, warm_memory

SIZE_MB = 64
COW_MB = 16
OUTSIDE_MB = 4
BOUND_S = 120


def shmgroup(env):
    return env.exe(os.path.join(env.build, "tests", "vm", "shmgroup"))


def start(env, cg, args, name):
    """shmgroup ARGS in cg (None: where we are) as the tenant; the ready file's fields."""
    ready = env.ready_path(name)
    procs = os.path.join(cg, "cgroup.procs") if cg else None
    p = subprocess.Popen([shmgroup(env), *args(ready)], preexec_fn=env.enter(procs), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    env.procs.append(p)
    wait_ready(p, ready, "shmgroup")
    return open(ready).read().split()


def kill_cgroup(cg):
    try:
        with open(os.path.join(cg, "cgroup.kill"), "w") as f:
            f.write("1")
    except OSError:
        pass


def run(env, res):
    sysctl_numa_balancing(0)
    warm_memory(env)
    name = f"nb-share-{os.getpid()}"
    cg = env.cgroup("nb-share", "balance", mems="0-1", cpus=node_cpus(0))
    out_cg = env.cgroup("nb-share-out")
    try:
        lead = start(env, cg, lambda ready: ["lead-cow", str(SIZE_MB), str(COW_MB), "3", ready, "/" + name],
                     "shmgroup")
        leader, start_addr, cow_addr = int(lead[0]), int(lead[1], 16), int(lead[3], 16)
        workers = [int(x) for x in lead[4:]]
        outsider = start(env, out_cg, lambda ready: ["map", "/" + name, "0", str(OUTSIDE_MB), ready], "outsider")
        out_pid, out_start = int(outsider[0]), int(outsider[1], 16)
        check(env.region_nodes(leader, start_addr).get(0, 0) * 4096 >= SIZE_MB * 2**20 * 0.99,
              f"the shared memory is not on node 0 to begin with: {env.region_nodes(leader, start_addr)}")
        env.start_daemon(shipped_timing=True)
        time.sleep(5)   # a few ticks with the group where its memory is
        with open(os.path.join(cg, "cpuset.cpus"), "w") as f:
            f.write(node_cpus(1))
        moved_at = time.time()
        group_pages = (SIZE_MB - OUTSIDE_MB) * 2**20 // 4096
        cow_pages = COW_MB * 2**20 // 4096
        t = cow_t = None
        while time.time() - moved_at < BOUND_S and (t is None or cow_t is None):
            if t is None and env.region_nodes(leader, start_addr).get(1, 0) >= 0.9 * group_pages:
                t = round(time.time() - moved_at, 1)
            if cow_t is None and env.region_nodes(leader, cow_addr).get(1, 0) >= 0.9 * cow_pages:
                cow_t = round(time.time() - moved_at, 1)
            time.sleep(1)
        res["seconds_to_90pct"] = t
        res["cow_seconds_to_90pct"] = cow_t
        res["leader_nodes"] = env.region_nodes(leader, start_addr)
        res["cow_nodes"] = env.region_nodes(leader, cow_addr)
        res["outsider_nodes"] = env.region_nodes(out_pid, out_start)
        check(t is not None, f"the group's shared pages not 90% on node 1 within {BOUND_S} s: {res['leader_nodes']}")
        check(cow_t is not None, f"the copy-on-write pages not 90% on node 1 within {BOUND_S} s: {res['cow_nodes']}")
        check(res["outsider_nodes"].get(1, 0) == 0,
              f"pages the outsider maps moved: {res['outsider_nodes']}")
        ex = explain(env, workers[0])
        group = ex.get("share_group") or {}
        res["share_group"] = group
        check(sorted(group.get("members", [])) == sorted([leader, *workers]),
              f"explain does not name the group of the leader and its workers: {group}")
        check(any(o.get("target_node") == 1 for o in group.get("objects", [])), f"no object targets node 1: {group}")
        check(any(o.get("kind") == "copy-on-write" and o.get("address") == cow_addr for o in group.get("objects", [])),
              f"explain names no copy-on-write object at the table's address: {group}")
        check(env.status().get("shared_moved_bytes", 0) > 0, "status counts no shared bytes moved")
        check("mapped outside its group" in env.log(), "the log does not say pages mapped outside the group stayed")
        env.stop_daemon()
    finally:
        kill_cgroup(cg)
        kill_cgroup(out_cg)
        time.sleep(0.5)
        try:
            os.unlink(f"/dev/shm/{name}")
        except OSError:
            pass
