# SPDX-License-Identifier: GPL-2.0-or-later
"""The exchange across processes: another opted-in process's cold memory makes room on a full fast node.

2n1m-hmat on 6.12 (DAMON says what is cold; 6.1 has none). Three cgroups:
- taker: a workload whose 64 MiB, all read all the time, was moved to the slow node 2
  (migratepages); it has no memory of its own on node 0 to give up;
- donor, opted in too: a workload that filled node 0 until it was below its promotion
  floor (10% free: the shipped value), and reads only its first MiB. All of it is on
  node 0, so DAMON watches it as a donor (a kdamond left over, for cold regions only).
  exchange-across:overflow moves 8 MiB of it to node 2 first, as a fast node's overflow
  lands on a slow one: DAMON then watches it as a process with slow pages;
- bystander, not opted in: at least 16 MiB on node 0 it touched once, the rest of the
  fill.

First the donor's cgroup has a share of all of node 0 (trusted.numabalanced.fast_share
= 100%, set by root): once explain shows the taker's promotions held at the floor,
SHARE_WATCH_S more pass with none of the donor's memory demoted for others (the
daemon's count in its log: DAMON's first look may make the donor's own pages on node 2
look hot, and its own exchange is its own), and explain and the
metrics show the donor's bytes on node 0 against its share. Then the share is removed.
Asserted: 90% of the taker's hot part on node 0 within HOT_WAIT_S (before the exchange
served other processes, nothing of it moved: the taker had no cold memory there); the
donor's memory that went to node 2 was its cold part (its hot first MiB all on node 0
at the end); the bystander's pages all still on node 0; the daemon counts demoted and
promoted bytes (metrics); the taker's promoted part still on node 0 STAY_S later (not
demoted back: no ping-pong), and by then the donor's memory demoted for others at most
the taker's 64 MiB and 10% (the exchange demotes no more than it promotes). Under --shipped the tenants are not root and the daemon
runs under its unit."""
import ctypes
import os
import re
import subprocess
import time

from scenario import CG, check, explain, fail, load, node_free_mb, sysctl_numa_balancing, wait_log

HOT_MB = 64
DONOR_HOT_MB = 1
DONOR_SLOW_MB = 8        # of the donor, put on node 2 (exchange-across:overflow)
FLOOR_PCT = 10           # the shipped promote_free_floor_pct
LEAVE_FREE_MB = 40       # node 0's free memory the donor leaves: below the floor
BYSTANDER_MB = 16
FILL_TRIES = 4           # bystander fills, each of what node 0 has free above LEAVE_FREE_MB
FLOOR_MARGIN_MB = 16     # filled when this far below the floor
HOT_WAIT_S = 240
HELD_WAIT_S = 120        # until explain shows the taker held at the floor
SHARE_WATCH_S = 20       # then this long with the donor's share in place
SHARE_XATTR = "trusted.numabalanced.fast_share"
STAY_S = 15
PAGE = os.sysconf("SC_PAGESIZE")
SYS_move_pages = 279     # x86-64
MPOL_MF_MOVE = 1 << 1

libc = ctypes.CDLL(None, use_errno=True)


def move_range(pid, start, length, node):
    """Moves [start, start + length) of pid to node (move_pages(2), as root)."""
    n = length // PAGE
    pages = (ctypes.c_void_p * n)(*[start + i * PAGE for i in range(n)])
    nodes = (ctypes.c_int * n)(*([node] * n))
    status = (ctypes.c_int * n)()
    r = libc.syscall(SYS_move_pages, ctypes.c_int(pid), ctypes.c_ulong(n), pages, nodes, status,
                     ctypes.c_int(MPOL_MF_MOVE))
    if r < 0:
        fail(f"move_pages to node {node} failed: errno {ctypes.get_errno()}")


def on_node(pid, start, length, node):
    got = load("promote").range_nodes(pid, start, length)
    return got.get(node, 0) * PAGE, got


def demoted_kib(log, pid):
    """What pid's exchange demoted, by the daemon's own count (its debug lines): (KiB
    for its own promotions, KiB for other processes')."""
    own = others = 0
    for m in re.finditer(rf"pid={pid}: exchange: demoting (\d+) KiB of cold memory, (\d+) KiB of it for other", log):
        own += int(m.group(1)) - int(m.group(2))
        others += int(m.group(2))
    return own, others


def wait_held(env, pid, limit):
    """Seconds until explain says pid's promotions wait at the floor (promote-floor)."""
    t0 = time.time()
    while time.time() - t0 < limit:
        skipped = explain(env, pid).get("skipped_bytes") or {}
        if skipped.get("promote-floor", 0) > 0:
            return round(time.time() - t0, 1)
        time.sleep(1)
    return None


def kdamonds():
    """What each kdamond watches and how old its tried regions are (a failure's
    diagnosis): pid, state, and (start, end, nr_accesses, age) of its first regions."""
    root, out = "/sys/kernel/mm/damon/admin/kdamonds", []
    for k in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        if not k.isdigit():
            continue
        base, rd = os.path.join(root, k), lambda p: open(p).read().strip()
        ent = {"state": rd(f"{base}/state")}
        try:
            ent["pid"] = rd(f"{base}/contexts/0/targets/0/pid_target")
            tr = f"{base}/contexts/0/schemes/0/tried_regions"
            regs = sorted((int(r) for r in os.listdir(tr) if r.isdigit()))
            ent["regions"] = [[rd(f"{tr}/{r}/{f}") for f in ("start", "end", "nr_accesses", "age")] for r in regs[:40]]
            ent["n_regions"] = len(regs)
        except OSError as e:
            ent["error"] = str(e)
        out.append(ent)
    return out


def node_total_mb(node):
    return load("promote").node_total_mb(node)


def start_taker(env, cg):
    """The taker: HOT_MB read all the time, moved to node 2. Returns (Popen, start, length)."""
    # Base pages: khugepaged collapses a range partly promoted into a huge page on the
    # node most of it is on, moving the rest without the daemon (one ASan run: 64 MiB
    # on node 0, 6.25 MiB of it the daemon's promotions).
    taker, t_start, _ = env.start_workload(cg, HOT_MB, 0, 0, pages="4k")
    subprocess.run(["migratepages", str(taker.pid), "0", "2"], check=True)
    t_len = HOT_MB << 20
    check(on_node(taker.pid, t_start, t_len, 2)[0] >= t_len * 0.99, "migratepages left the taker off node 2")
    return taker, t_start, t_len


def fill_node0(env, res, donor_cg, by_cg, overflow=False):
    """The donor (reading its first DONOR_HOT_MB) fills node 0 to LEAVE_FREE_MB +
    BYSTANDER_MB free, the bystander the rest, below the promotion floor; overflow: 8
    MiB of the donor moved to node 2 first. Returns (donor, its start, its length,
    the bystanders as (Popen, start, length), their bytes on node 0)."""
    hot = {"WORKLOAD_HOT_MB": str(DONOR_HOT_MB)}
    # Free memory settled first: the memory of a scenario's workload killed a moment
    # before comes back over seconds (one run found 100 MiB free after the fill).
    settled = load("promote").settled_free_mb
    total = node_total_mb(0)
    donor_mb = settled(0) - LEAVE_FREE_MB - BYSTANDER_MB
    check(donor_mb > 2 * DONOR_SLOW_MB + 64, f"node 0 has too little free memory to fill: {node_free_mb(0)} MiB")
    donor, d_start, d_len = env.start_workload(donor_cg, donor_mb, 0, 0, env=hot, pages="4k")
    if overflow:
        move_range(donor.pid, d_start + d_len - (DONOR_SLOW_MB << 20), DONOR_SLOW_MB << 20, 2)
    # The bystander fills the rest, topped up until node 0 is below its floor: memory
    # can come back on node 0 after a fill (a departed process's pages freed late; CI
    # run 11 found 93 MiB free where 40 were left), so one reading is not the state.
    bys, fills = [], []
    for _ in range(FILL_TRIES):
        free = settled(0)
        fills.append(free)
        if bys and free < total * FLOOR_PCT / 100 - FLOOR_MARGIN_MB:
            break
        by_mb = max(BYSTANDER_MB if not bys else 1, free - LEAVE_FREE_MB)
        bys.append(env.start_workload(by_cg, by_mb, 0, 0, env=hot, pages="4k"))
    by_before = [on_node(b.pid, s, n, 0)[0] for b, s, n in bys]
    free0 = node_free_mb(0)
    res["node0"] = {"total_mb": total, "free_mb": free0, "donor_mb": donor_mb, "free_mb_before_each_fill": fills,
                    "bystander_mb": [n >> 20 for _, _, n in bys]}
    check(free0 < total * FLOOR_PCT / 100, f"node 0 not below its floor: {free0} of {total} MiB free")
    return donor, d_start, d_len, bys, by_before


def run(env, res, variant="donor"):
    check(variant in ("donor", "overflow"), f"exchange-across:{variant}: donor or overflow")
    res["variant"] = variant
    sysctl_numa_balancing(0)
    taker_cg = env.cgroup("nb-x-taker", "balance")
    donor_cg = env.cgroup("nb-x-donor", "balance")
    by_cg = env.cgroup("nb-x-bystander")
    taker, t_start, t_len = start_taker(env, taker_cg)
    donor, d_start, d_len, bys, by_before = fill_node0(env, res, donor_cg, by_cg, variant == "overflow")
    # A moved page keeps its accessed bit, which DAMON would take for an access: the
    # donor's "hot" pages on node 2 would then wait at the floor and its own cold pages
    # make room for them (its own exchange, which no share limits). Cleared, the pages
    # it does not touch are cold to DAMON, as they are.
    with open(f"/proc/{donor.pid}/clear_refs", "w") as f:
        f.write("1")
    d_slow0 = on_node(donor.pid, d_start, d_len, 2)[0]
    donor_mb = res["node0"]["donor_mb"]

    metrics = "/run/numabalanced/test-metrics.prom" if env.shipped else env.tmp_path("metrics.prom")
    # First the donor's cgroup keeps all of node 0 (its share, set by root): the taker
    # waits at the floor, and nothing of the donor's goes.
    os.setxattr(donor_cg, SHARE_XATTR, b"100%")
    env.start_daemon(extra_conf=f"[sample]\npmu = off\n[report]\nmetrics_path = {metrics}\n")
    wait_log(env, "DAMON evidence: in use", 60)
    waited = wait_held(env, taker.pid, HELD_WAIT_S)
    res["seconds_to_taker_held_at_floor"] = waited
    check(waited is not None, f"the taker's promotions never waited at node 0's floor within {HELD_WAIT_S} s")
    if variant == "donor":
        # Its memory all on node 0 (kswapd demoted none of it): watched as a donor, or,
        # with a few pages of a library on node 2, as a process with slow pages that
        # may give, over all its mappings too. Either way a kdamond watches it.
        check(d_slow0 == 0, f"the donor has {d_slow0 >> 10} KiB on node 2 before the exchange")
        monitored = explain(env, donor.pid).get("damon_monitored")
        res["donor_damon_monitored"] = monitored
        check(monitored is True, f"no kdamond watches the donor (explain's damon_monitored: {monitored})")
    time.sleep(SHARE_WATCH_S)
    d_slow_kept = on_node(donor.pid, d_start, d_len, 2)[0]
    got_t = on_node(taker.pid, t_start, t_len, 0)
    res["with_share"] = {"donor_demoted_mb": round((d_slow_kept - d_slow0) / 2**20, 1),
                         "taker_on_node0_mb": round(got_t[0] / 2**20, 1)}
    why = explain(env, donor.pid)
    fs = why.get("fast_share") or {}
    res["with_share"]["explain"] = fs
    own, others = demoted_kib(env.log(), donor.pid)
    res["with_share"]["donor_demoted_kib"] = {"own": own, "for_others": others}
    # DAMON's first look finds every page young (a page not yet marked idle), so the
    # donor's own pages on node 2 may look hot for a moment and its own exchange make
    # room for them: that is its own, which no share limits. For others: nothing.
    check(others == 0, f"the donor gave {others} KiB of its cold memory for others within its share "
                       f"(its node-2 pages {d_slow0 >> 20} then {d_slow_kept >> 20} MiB; explain: {fs})")
    n0 = [n for n in fs.get("nodes", []) if n.get("node") == 0]
    check(fs.get("share_pct") == 100 and n0 and n0[0].get("held_bytes") and n0[0]["held_bytes"] >= (donor_mb << 20) // 2,
          f"explain does not show the donor's share and what it holds on node 0: {fs}")
    label = f'cgroup="/{os.path.relpath(donor_cg, CG)}",node="0"'
    held_metric = load("promote").metric(metrics, f"numabalanced_fast_held_bytes{{{label}}}")
    res["with_share"]["fast_held_bytes_metric"] = held_metric
    check(held_metric and held_metric >= (donor_mb << 20) // 2, f"numabalanced_fast_held_bytes: {held_metric}")

    # The share removed: the donor's cold memory makes room for the taker's hot part.
    os.removexattr(donor_cg, SHARE_XATTR)
    t0, t90 = time.time(), None
    while time.time() - t0 < HOT_WAIT_S:
        if on_node(taker.pid, t_start, t_len, 0)[0] >= t_len * 0.9:
            t90 = time.time() - t0
            break
        time.sleep(1)
    res["seconds_to_90pct_promoted"] = round(t90, 1) if t90 is not None else None
    got_t = on_node(taker.pid, t_start, t_len, 0)
    res["taker_pages_by_node"] = got_t[1]
    d_slow = on_node(donor.pid, d_start, d_len, 2)[0]
    res["donor_demoted_mb"] = round((d_slow - d_slow0) / 2**20, 1)
    if t90 is None:
        res["donor_explain"] = explain(env, donor.pid)
        res["kdamonds"] = kdamonds()
    check(t90 is not None, f"90% of the taker's {HOT_MB} MiB not on node 0 within {HOT_WAIT_S} s: {got_t[1]}; "
                           f"the donor's pages on node 2 grew by {res['donor_demoted_mb']} MiB")
    own2, others2 = demoted_kib(env.log(), donor.pid)
    res["donor_demoted_kib"] = {"own": own2, "for_others": others2}
    check(others2 > 0 and d_slow > d_slow0, f"the donor gave up nothing for others ({others2} KiB), yet the taker "
                                            f"was promoted")

    # No ping-pong: what was promoted stays, what was demoted stays, STAY_S on.
    time.sleep(STAY_S)
    kept = on_node(taker.pid, t_start, t_len, 0)
    res["taker_on_node0_after_mb"] = round(kept[0] / 2**20, 1)
    check(kept[0] >= t_len * 0.9, f"the taker's promoted part went back: {kept[1]}")
    d_slow_end = on_node(donor.pid, d_start, d_len, 2)[0]
    check(d_slow_end >= d_slow, f"the donor's demoted pages came back: {d_slow >> 20} then {d_slow_end >> 20} MiB")
    donor_hot = on_node(donor.pid, d_start, DONOR_HOT_MB << 20, 0)
    res["donor_hot_pages_by_node"] = donor_hot[1]
    check(donor_hot[0] == DONOR_HOT_MB << 20, f"the donor's hot MiB was demoted: {donor_hot[1]}")
    by_after = [on_node(b.pid, s, n, 0) for b, s, n in bys]
    res["bystander_pages_by_node"] = [a[1] for a in by_after]
    check([a[0] for a in by_after] == by_before, f"the bystander (not opted in) was moved: {res['bystander_pages_by_node']}")
    # At most as much for others as they promote: the taker's wait is its 64 MiB, and
    # a wait served once is not served again while its promotions take the room.
    own3, others3 = demoted_kib(env.log(), donor.pid)
    res["donor_demoted_kib_at_end"] = {"own": own3, "for_others": others3}
    check(others3 * 1024 <= t_len * 1.1, f"the donor gave {others3} KiB for others, more than the taker's "
                                         f"{t_len >> 10} KiB could take")

    time.sleep(1.5)   # a tick writes the metrics after its jobs ran
    res["demoted_bytes_total"] = load("promote").metric(metrics, "numabalanced_demoted_bytes_total")
    res["promoted_bytes_total"] = load("promote").metric(metrics, "numabalanced_promoted_bytes_total")
    check((res["demoted_bytes_total"] or 0) > 0, f"numabalanced_demoted_bytes_total is {res['demoted_bytes_total']}")
    check((res["promoted_bytes_total"] or 0) >= t_len * 0.9,
          f"numabalanced_promoted_bytes_total is {res['promoted_bytes_total']}")
    env.stop_daemon()
