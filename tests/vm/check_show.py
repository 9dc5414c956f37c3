#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest side of the first VM tests (run by tests/vm/vmrun inside a NUMA guest).

    check_show.py --topology NAME --touch PATH --ctl PATH --topo-dump PATH

1. topology: what lib/topology.c reads (topo-dump) agrees with `numactl -H` (nodes,
   CPUs per node, memory size, distances), and with what the test bed was asked for.
2. show: `touch` first-touches regions with known policies and reports where the
   kernel put each page (move_pages query); `numabalancectl show --json PID` must
   then report, for the VMA at each region's start: its policy and node list, the
   allowed nodes (policy nodes within Mems_allowed and the nodes with memory), and
   exactly the kernel's pages per node; and per-node totals at least the regions'
   sums. The human form must work too (its output is printed).
Checks go through tests/nbtest.py: a failed one is printed (FAIL: what: detail), the
count of both closes the output, and the exit status is 1 if any failed.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import nbtest  # noqa: E402

# What each test-bed topology must look like (see vmrun's TOPOLOGIES).
EXPECTED = {
    "2n2c": {"cpus": {0: "0-1", 1: "2-3"}, "memory": [0, 1],
             "distances": [[10, 20], [20, 10]]},
    "4n1c": {"cpus": {0: "0", 1: "1", 2: "2", 3: "3"}, "memory": [0, 1, 2, 3],
             "distances": [[10, 16, 22, 16], [16, 10, 16, 22], [22, 16, 10, 16], [16, 22, 16, 10]]},
    "2n1m": {"cpus": {0: "0", 1: "1", 2: ""}, "memory": [0, 1, 2],
             "distances": [[10, 20, 20], [20, 10, 20], [20, 20, 10]]},
}

# Regions touch makes in each topology: every policy kind, on nodes that exist
# there. In 2n1m the memory-only node 2 is a bind, preferred and task target.
REGIONS = {
    "2n2c": ["local:0", "local:1", "bind:1", "bind:0-1", "interleave:0-1", "preferred:1", "task:1"],
    "4n1c": ["local:0", "local:3", "bind:2", "bind:1,3", "interleave:0-3", "preferred:2", "task:3"],
    "2n1m": ["local:0", "local:1", "bind:2", "bind:1-2", "interleave:0-2", "preferred:2", "task:2"],
}

def check(ok, what, detail=""):
    """nbtest.check, with the detail (what was seen) added to a failure's line."""
    return nbtest.check(ok, f"{what}: {detail}" if detail else what)


def parse_list(s):
    """Kernel list syntax ("0-2,5") to a set of ints."""
    out = set()
    s = s.strip()
    if not s:
        return out
    for part in s.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def fmt_list(ids):
    ids = sorted(ids)
    parts, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def parse_numactl_h(text):
    """numactl -H: {node: {"cpus": set, "size_mb": int}}, distance matrix (list of rows)."""
    nodes, dist, order = {}, [], None
    for line in text.splitlines():
        m = re.match(r"node (\d+) cpus:(.*)$", line)
        if m:
            nodes.setdefault(int(m.group(1)), {})["cpus"] = {int(x) for x in m.group(2).split()}
            continue
        m = re.match(r"node (\d+) size: (\d+) MB", line)
        if m:
            nodes.setdefault(int(m.group(1)), {})["size_mb"] = int(m.group(2))
            continue
        m = re.match(r"node\s+((?:\d+\s*)+)$", line)
        if m:
            order = [int(x) for x in m.group(1).split()]
            continue
        m = re.match(r"\s*(\d+):\s+((?:\d+\s*)+)$", line)
        if m and order is not None:
            dist.append([int(x) for x in m.group(2).split()])
    return nodes, order, dist


def check_topology(name, topo_dump):
    print(f"== topology {name}")
    r = run([topo_dump])
    if not check(r.returncode == 0, "topo-dump reads /sys", r.stderr.strip()):
        return None
    topo = json.loads(r.stdout)
    r = run(["numactl", "-H"])
    if not check(r.returncode == 0, "numactl -H runs", r.stderr.strip()):
        return topo
    print(r.stdout.rstrip())
    nodes, order, dist = parse_numactl_h(r.stdout)
    ours = {n["id"]: n for n in topo["nodes"]}

    check(sorted(ours) == sorted(nodes), "same nodes as numactl -H", f"{sorted(ours)} vs {sorted(nodes)}")
    for nid, n in sorted(ours.items()):
        nn = nodes.get(nid, {})
        check(parse_list(n["cpus"]) == nn.get("cpus"), f"node {nid}: CPUs match numactl",
              f"{n['cpus']} vs {nn.get('cpus')}")
        # numactl prints MemTotal >> 20 bytes (numa_node_size64 reads the node's meminfo).
        check(n["mem_total_kb"] >> 10 == nn.get("size_mb"), f"node {nid}: size matches numactl",
              f"{n['mem_total_kb']} kB vs {nn.get('size_mb')} MB")
        check(n["has_cpus"] == bool(nn.get("cpus")), f"node {nid}: has_cpus matches numactl")
    if order is not None:
        ours_dist = [ours[i]["distances"] for i in sorted(ours)]
        check(order == sorted(ours) and dist == ours_dist, "distances match numactl -H",
              f"{dist} vs {ours_dist}")

    exp = EXPECTED.get(name)
    if exp:
        check({i: ours[i]["cpus"] for i in ours} == exp["cpus"], f"CPUs per node are {exp['cpus']}")
        check(parse_list(topo["with_memory"]) == set(exp["memory"]), f"nodes with memory are {exp['memory']}",
              topo["with_memory"])
        check([ours[i]["distances"] for i in sorted(ours)] == exp["distances"],
              f"distances are {exp['distances']}")
        for i in exp["memory"]:
            check(ours[i]["mem_total_kb"] > 100 * 1024, f"node {i} has memory", str(ours[i]["mem_total_kb"]))
    return topo


def mems_allowed(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Mems_allowed_list:"):
                return parse_list(line.split(":", 1)[1])
    return None


def check_show(name, touch, ctl, topo, regions, results):
    print(f"== show {name}: touch {' '.join(regions)}")
    out = os.path.join(results, f"touch-{name}.json")
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.monotonic()
    p = subprocess.Popen([touch, "--out", out] + regions, stdin=subprocess.PIPE)
    try:
        while not os.path.exists(out):
            if p.poll() is not None:
                check(False, "touch places its regions", f"touch exited {p.returncode}")
                return
            if time.monotonic() - t0 > 120:
                check(False, "touch places its regions", "no output after 120 s")
                return
            time.sleep(0.1)
        print(f"touch placed its regions in {time.monotonic() - t0:.1f} s", flush=True)
        with open(out) as f:
            want = json.load(f)
        print(json.dumps({r["name"]: r["node_pages"] for r in want["regions"]}))

        r = run([ctl, "show", "--json", str(p.pid)])
        if not check(r.returncode == 0, f"numabalancectl show --json {p.pid} succeeds",
                     f"exit {r.returncode}: {r.stderr.strip()}"):
            return
        try:
            got = json.loads(r.stdout)
        except ValueError as e:
            check(False, "show --json prints JSON", f"{e}: {r.stdout[:500]!r}")
            return
        check(got.get("version") == 1, "show JSON version 1")
        check(got.get("pid") == p.pid, "show JSON pid")

        with_memory = parse_list(topo["with_memory"])
        mems = mems_allowed(p.pid)
        vmas = {v.get("start"): v for v in got.get("vmas", [])}
        sums = {}
        for reg in want["regions"]:
            what = f"region {reg['name']} at {reg['start']}"
            v = vmas.get(reg["start"])
            if not check(v is not None, f"{what}: show has a VMA starting there"):
                continue
            pol_nodes = parse_list(reg["policy_nodes"])
            allowed = (pol_nodes if reg["policy"] != "default" else with_memory) & with_memory & mems
            check(v.get("policy") == reg["policy"], f"{what}: policy {reg['policy']}", str(v.get("policy")))
            check(v.get("policy_nodes") == reg["policy_nodes"], f"{what}: policy_nodes '{reg['policy_nodes']}'",
                  str(v.get("policy_nodes")))
            check(v.get("allowed_nodes") == fmt_list(allowed), f"{what}: allowed_nodes '{fmt_list(allowed)}'",
                  str(v.get("allowed_nodes")))
            check(v.get("kind") == "anon" and v.get("page_size_kb") * 1024 == want["page_size"],
                  f"{what}: anonymous, base pages", f"{v.get('kind')} {v.get('page_size_kb')} kB")
            check(v.get("node_pages") == reg["node_pages"], f"{what}: node_pages as the kernel reported",
                  f"{v.get('node_pages')} vs move_pages {reg['node_pages']}")
            check(v.get("pages") == reg["pages"], f"{what}: {reg['pages']} pages", str(v.get("pages")))
            for n, c in reg["node_pages"].items():
                sums[int(n)] = sums.get(int(n), 0) + c
        per_node = {e["node"]: e["pages"] for e in got.get("nodes", [])}
        for n, s in sorted(sums.items()):
            check(per_node.get(n, 0) >= s, f"node {n}: total pages >= the regions' {s}", str(per_node.get(n)))
        total = sum(per_node.values())
        check(got.get("total_pages") == total, "total_pages is the sum over nodes",
              f"{got.get('total_pages')} vs {total}")

        r = run([ctl, "show", str(p.pid)])
        print(r.stdout.rstrip())
        check(r.returncode == 0 and r.stdout.strip() != "", f"numabalancectl show {p.pid} (text) succeeds",
              f"exit {r.returncode}: {r.stderr.strip()}")
    finally:
        try:
            p.stdin.close()
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        check(rc == 0, "touch exits cleanly", f"exit {rc}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topology", default=os.environ.get("NUMABALANCED_TOPOLOGY"))
    ap.add_argument("--touch", required=True)
    ap.add_argument("--ctl", required=True)
    ap.add_argument("--topo-dump", required=True)
    ap.add_argument("--regions", nargs="*")
    a = ap.parse_args()
    results = os.environ.get("NUMABALANCED_RESULTS", "/tmp")

    # The kernel's own balancing would move default-policy pages while we compare
    # two views of them; the test bed is ours, so turn it off here.
    try:
        with open("/proc/sys/kernel/numa_balancing", "w") as f:
            f.write("0")
    except OSError as e:
        print(f"note: cannot turn kernel.numa_balancing off: {e}")

    t0 = time.monotonic()
    topo = check_topology(a.topology, a.topo_dump)
    print(f"(topology checks: {time.monotonic() - t0:.1f} s)")
    if topo is not None:
        t1 = time.monotonic()
        check_show(a.topology, a.touch, a.ctl, topo, a.regions or REGIONS[a.topology], results)
        print(f"(show checks: {time.monotonic() - t1:.1f} s)")
    nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
