#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The demo's per-node bars (scripts/demo --render-nodes), for every share.

    test-demo-bars.py SCRIPTS_DEMO

Feeds scripts/demo a `numabalancectl show --json` document whose nodes hold 0, 0.4%,
1%, 29%, 30%, 50%, 99% and 100% of the memory (and a share past 1 and a null, as
rounding or a process with no memory could give) and checks each line: no "null"
(jq 1.6 gives null for "#" * 0: the demo's first picture once drew a node with 1% as
the word), a bar of 40 cells with one '#' per full 2.5% and a '.' for a part of one
(any memory at all shows), and the share in whole percent, "<1%" below one. Needs jq
(scripts/setup installs it); skipped without it.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

# share: (full cells, a part of one, the percent shown)
CASES = {
    0.0: (0, False, "0"),
    0.004: (0, True, "<1"),
    0.01: (0, True, "1"),
    0.29: (11, True, "29"),
    0.3: (12, False, "30"),      # 0.3 * 40 is 12.000000000000002 in floating point
    0.5: (20, False, "50"),
    0.99: (39, True, "99"),
    1.0: (40, False, "100"),
    1.0000001: (40, False, "100"),
    None: (0, False, "0"),
}
LINE = re.compile(r"  node (\d+)  (.{40})  (<1|\d+)% of the memory, (\d+) thread\(s\)")


def main():
    demo = sys.argv[1]
    if not shutil.which("jq"):
        nbtest.skip("no jq (scripts/setup installs it)")
    shares = list(CASES)
    doc = {"version": 1, "pid": 1,
           "nodes": [{"node": i, "pages": 0, "bytes": 0, "share": s, "threads": i % 3} for i, s in enumerate(shares)]}
    r = subprocess.run(["bash", demo, "--render-nodes"], input=json.dumps(doc), capture_output=True, text=True,
                       timeout=60)
    nbtest.require(r.returncode == 0, f"scripts/demo --render-nodes exited {r.returncode}: {r.stderr.strip()}")
    print(r.stdout, end="")
    lines = r.stdout.splitlines()
    check("null" not in r.stdout, "the bars say null")
    nbtest.require(len(lines) == len(shares), f"{len(lines)} lines for {len(shares)} nodes")
    for i, (share, line) in enumerate(zip(shares, lines)):
        full, part, pct = CASES[share]
        m = LINE.fullmatch(line)
        if not check(m is not None, f"share {share}: not a node line of a 40-cell bar: {line!r}"):
            continue
        node, bar, shown, threads = m.groups()
        want = "#" * full + ("." if part else "")
        check(bar == want.ljust(40), f"share {share}: bar {bar!r}, expected {want.ljust(40)!r}")
        check(shown == pct, f"share {share}: shows {shown}%, expected {pct}%")
        check(int(node) == i and int(threads) == i % 3, f"share {share}: node {node}, threads {threads}: {line!r}")
    nbtest.finish()


if __name__ == "__main__":
    main()
