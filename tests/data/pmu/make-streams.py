#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the constructed PMU sample streams replayed by tests/unit/test-page-agg.c,
for the 2n2c topology (tests/data/sys/2n2c: CPUs 0-1 on node 0, 2-3 on node 1).
Deterministic (fixed seed): re-running it gives the same files.

  private.samples   thread 101 (CPUs 0-1) owns 64 pages, thread 202 (CPUs 2-3) owns
                    64 others; each page sampled 2-5 times, interleaved in time, at
                    random offsets inside the page. Expected: 64 -> node 0, 64 -> node 1.
  mixed.samples     private pages as above (16 + 16), 8 pages touched from both nodes
                    (shared: left alone), 8 pages sampled once (too few), 2 samples
                    from CPU 9 (no node). Expected: 32 moves, 8 shared, 8 too few.
  pingpong.samples  one page sampled alternately from CPU 0 and CPU 2, 100 times:
                    never moved."""
import random

rng = random.Random(4)
PAGE = 4096
A, B, S, ONCE = 0x7f0000000000, 0x7f1000000000, 0x7f2000000000, 0x7f3000000000


def private(base, n, tid, cpus):
    out = []
    for p in range(n):
        for _ in range(rng.randint(2, 5)):
            out.append((tid, rng.choice(cpus), base + p * PAGE + rng.randrange(PAGE)))
    return out


def write(name, header, samples):
    with open(name, "w") as f:
        f.write(f"# {header}\n# tid cpu addr\n")
        for t, c, a in samples:
            f.write(f"{t} {c} {a:#x}\n")


s = private(A, 64, 101, [0, 1]) + private(B, 64, 202, [2, 3])
rng.shuffle(s)
write("private.samples", "two threads, private pages: 64 to node 0, 64 to node 1", s)

s = private(A, 16, 101, [0, 1]) + private(B, 16, 202, [2, 3])
for p in range(8):
    s += [(101, 0, S + p * PAGE + 8), (202, 3, S + p * PAGE + 16), (101, 1, S + p * PAGE)]
s += [(101, 0, ONCE + p * PAGE) for p in range(8)]
s += [(303, 9, A), (303, 9, B)]
rng.shuffle(s)
write("mixed.samples", "32 private pages, 8 shared, 8 seen once, 2 from an unknown CPU", s)

write("pingpong.samples", "one page touched from node 0 and node 1 in turn",
      [(101 + 101 * (i % 2), 0 if i % 2 == 0 else 2, S + 64) for i in range(100)])
