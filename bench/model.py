# SPDX-License-Identifier: GPL-2.0-or-later
"""A model of the time to 95% local for numabalanced and the kernel's NUMA balancing,
built from terms measured in the guests, checked against the guests' own results, and
projected onto a two-socket server (docs/BENCHMARKS.md, "model"; issue 16, item 4).

    T95(S) = D + (0.95 - s0) * S / R

S the misplaced size, s0 the local share at the start, D the start delay (from the
start of the run until the share first rises), R the move rate while moving. For
numabalanced R is the copy rate of its service CPUs; for the kernel it is the lower of
the copy rate of the faulting thread(s) and the rate at which its scanner marks PTEs,
which the kernel bounds per process (kernel/sched/fair.c, task_scan_min): it marks
numa_balancing_scan_size_mb (256 MB) per scan period, and the period is at least
scan_period_min_ms (1000 ms) divided by the number of 256 MB windows in the process's
RSS, and at least 100 ms (MAX_SCAN_WINDOW, 2560 MB/s): so at most the whole RSS per
second and never more than 2560 MB/s. Under TCG the copy is about 45 times slower than
on hardware while the scan period is wall-clock time, so the guests never see the scan
bound; a server does.

The terms come from the result files of scripts/bench (misplaced, misplaced-1g,
moverate); each size's terms predict the other size's measured time (the check). The
projection states its one assumption, the copy rate of one CPU on the server, and
scales the guest's measured share of memcpy bandwidth to it."""
import statistics

# The server of the projection: what is assumed, not measured here.
SERVER_MEMCPY_GIB_S = 6.0      # one CPU's memcpy across the sockets (an assumption)
SCAN_SIZE_MB = 256             # numa_balancing_scan_size_mb, the default
SCAN_PERIOD_MIN_MS = 1000      # numa_balancing_scan_period_min_ms, the default
MAX_SCAN_WINDOW_MB_S = 2560    # kernel/sched/fair.c
SIZES_GIB = (1, 16, 128)


def kernel_scan_mb_s(size_mb):
    """The most the kernel's scanner marks per second for a process of size_mb."""
    windows = max(1, size_mb // SCAN_SIZE_MB)
    period_ms = max(1000 * SCAN_SIZE_MB / MAX_SCAN_WINDOW_MB_S, SCAN_PERIOD_MIN_MS / windows)
    return SCAN_SIZE_MB * 1000 / period_ms


def run_terms(run, size_mb):
    """(s0, D, R in MiB/s) of one run's timeline, or None when it never moved enough."""
    tl = run.get("timeline") or []
    if len(tl) < 3 or run.get("t95_s") is None:
        return None
    s0 = tl[0][1]
    start = next((t for t, s in tl if s >= s0 + 0.02), None)
    t20 = next((t for t, s in tl if s >= 0.2), None)
    t80 = next((t for t, s in tl if s >= 0.8), None)
    if start is None or t20 is None or t80 is None or t80 <= t20:
        return None
    return s0, start, 0.6 * size_mb / (t80 - t20)


def terms(doc, mode, size_mb):
    got = [x for x in (run_terms(r, size_mb) for r in doc["runs"].get(mode, [])) if x]
    if not got:
        return None
    return {"s0": statistics.median(x[0] for x in got), "D": statistics.median(x[1] for x in got),
            "R": statistics.median(x[2] for x in got), "runs": len(got)}


def t95(t, size_mb, rate=None):
    return t["D"] + (0.95 - t["s0"]) * size_mb / (rate or t["R"])


def section(load, w, plots):
    """Writes the model's section with w(); load(name) gives a result file. Returns a
    goal row or None."""
    w("## model: time to 95% past these machines\n")
    small, big, mr = load("misplaced"), load("misplaced-1g"), load("moverate")
    if not small or not big or not mr or not mr["runs"].get("rounds"):
        w("Not computed: it needs the result files of misplaced, misplaced-1g and moverate.\n")
        return None
    memcpy = statistics.median(r["memcpy_mb_s"] for r in mr["runs"]["rounds"])
    rows, check = {}, []
    for mode in ("numabalanced", "kernel"):
        a, b = terms(small, mode, 512), terms(big, mode, 1024)
        if not a or not b:
            w(f"Not computed: {mode} has no run that moved from 20% to 80% in both sizes.\n")
            return None
        rows[mode] = (a, b)
        for name, t, other, size, doc in (("512 MiB", a, "1 GiB", 1024, big), ("1 GiB", b, "512 MiB", 512, small)):
            measured = statistics.median(r["t95_s"] for r in doc["runs"][mode] if r["t95_s"] is not None)
            check.append((mode, name, other, t95(t, size), measured))
    w(__doc__.split("\n\n")[1].replace("\n", " ").strip() + "\n")
    w("Under TCG the copy is about 45 times slower than on hardware while the kernel's scan period is "
      "wall-clock time, so the guests never reach the scan bound; a server does.\n")
    w("**Terms measured in the guests** (medians over the runs of misplaced, 512 MiB, and misplaced-1g, "
      "1 GiB; 2n1c and 2n1c-big; D from the run's start until the local share first rises by 2 points, R "
      "from the time between 20% and 80% local):\n")
    w("| balancer | size | runs | share at start | D, start delay (s) | R, move rate (MiB/s) | R / guest memcpy |")
    w("|---|---|---|---|---|---|---|")
    for mode, (a, b) in rows.items():
        for size, t in (("512 MiB", a), ("1 GiB", b)):
            w(f"| {mode} | {size} | {t['runs']} | {100 * t['s0']:.1f}% | {t['D']:.2f} | {t['R']:.0f} "
              f"| {t['R'] / memcpy:.2f} |")
    w("")
    w(f"The guest's memcpy from node 0 to node 1 (moverate): {memcpy:.0f} MiB/s.\n")
    w("**The check**: each size's terms predict the other size's time to 95%.\n")
    w("| balancer | terms from | predicts | predicted (s) | measured (s) | error |")
    w("|---|---|---|---|---|---|")
    for mode, frm, to, pred, meas in check:
        w(f"| {mode} | {frm} | {to} | {pred:.2f} | {meas:.2f} | {100 * (pred - meas) / meas:+.0f}% |")
    w("")
    # The projection: each balancer's share of memcpy from the 1 GiB runs (the larger,
    # where the start matters least), scaled to the stated server copy rate.
    share = {mode: rows[mode][1]["R"] / memcpy for mode in rows}
    d = {mode: rows[mode][1]["D"] for mode in rows}
    cpu = SERVER_MEMCPY_GIB_S * 1024
    w(f"**Projection** onto a two-socket server where one CPU copies {SERVER_MEMCPY_GIB_S:.0f} GiB/s across "
      "the sockets (an assumption, not measured here). Each balancer moves at its measured share of memcpy "
      f"(numabalanced {share['numabalanced']:.2f}, the kernel {share['kernel']:.2f}, from the 1 GiB runs); "
      "numabalanced with one and with two service CPUs; the kernel in one faulting thread (as in the "
      "benchmark) and bounded by its scanner; the start delays as measured in the guests (an upper bound: "
      "part of them is CPU time that hardware spends faster). S misplaced, memory 0% local at the start.\n")
    w("| misplaced | kernel: scan bound (MiB/s) | kernel: T95 (s) | numabalanced, 1 CPU: T95 (s) "
      "| numabalanced, 2 CPUs: T95 (s) | kernel / numabalanced (2 CPUs) |")
    w("|---|---|---|---|---|---|")
    proj = []
    for gib in SIZES_GIB:
        mb = gib * 1024
        scan = kernel_scan_mb_s(mb)
        k = d["kernel"] + 0.95 * mb / min(share["kernel"] * cpu, scan)
        n1 = d["numabalanced"] + 0.95 * mb / (share["numabalanced"] * cpu)
        n2 = d["numabalanced"] + 0.95 * mb / (2 * share["numabalanced"] * cpu)
        proj.append((gib, k, n1, n2))
        w(f"| {gib} GiB | {scan:.0f} | {k:.1f} | {n1:.1f} | {n2:.1f} | {k / n2:.1f}x |")
    w("")
    png = plot(proj, plots)
    if png:
        w(f"![model]({png})\n")
    return None


def plot(proj, plots):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    import os
    fig, ax = plt.subplots(figsize=(6, 3.4))
    xs = [p[0] for p in proj]
    ax.plot(xs, [p[1] for p in proj], "o-", color="tab:red", label="kernel")
    ax.plot(xs, [p[2] for p in proj], "s--", color="tab:blue", label="numabalanced, 1 service CPU")
    ax.plot(xs, [p[3] for p in proj], "s-", color="tab:blue", label="numabalanced, 2 service CPUs")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs, [f"{x} GiB" for x in xs])
    ax.set_ylabel("projected time to 95% (s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"model: misplaced memory on a 2-socket server ({SERVER_MEMCPY_GIB_S:.0f} GiB/s per CPU)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(plots, "model.png"), dpi=90)
    plt.close(fig)
    return "bench/model.png"
