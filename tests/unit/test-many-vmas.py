#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A process with 30,000 VMAs (issue 7, hostile input: anyone can make one), read by
numabalancectl show --json, which uses the daemon's own readers (numa_maps, maps,
status, stat): every VMA is reported, and the memory used stays bounded (asserted:
peak RSS under 64 MiB; numa_maps of such a process is ~2 MB of text). The time taken
is printed for the record, not asserted (timings belong to benchmarks).

    test-many-vmas.py NUMABALANCECTL MANYVMAS"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

ctl, helper = sys.argv[1], sys.argv[2]
N = 30000

p = subprocess.Popen([helper, str(N)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
pid = int(p.stdout.readline())
try:
    with open(f"/proc/{pid}/maps") as f:
        n_maps = sum(1 for _ in f)
    check(n_maps >= N, f"the helper has {n_maps} VMAs, expected at least {N}")
    # Through a shell that reports its own children's peak RSS: numabalancectl's alone.
    t0 = time.monotonic()
    out_path = os.path.join(nbtest.tmpdir("nb-many-vmas-"), "show.json")
    c = subprocess.run([sys.executable, "-c",
                        "import resource, subprocess, sys\n"
                        "r = subprocess.run(sys.argv[1:5], stdout=open(sys.argv[5], 'wb'))\n"
                        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
                        ctl, "show", "--json", str(pid), out_path], capture_output=True, text=True, timeout=120)
    dt = time.monotonic() - t0
    rc, peak_kb = (int(x) for x in c.stdout.split())
    check(rc == 0, f"show exited {rc}: {c.stderr[-500:]}")
    with open(out_path, "rb") as f:
        out = f.read()
    doc = json.loads(out)
    vmas = doc.get("vmas", [])
    check(len(vmas) >= N, f"show listed {len(vmas)} VMAs, expected at least {N}")
    print(f"show --json of {n_maps} VMAs: {dt:.2f} s, {len(out) / 1e6:.1f} MB of JSON")
finally:
    p.stdin.close()
    p.wait()

print(f"peak RSS of numabalancectl: {peak_kb / 1024:.1f} MiB")
check(peak_kb < 64 * 1024, f"peak RSS {peak_kb} KiB is not bounded (over 64 MiB for {N} VMAs)")
nbtest.finish()
