# SPDX-License-Identifier: GPL-2.0-or-later
"""The exchange without DAMON: pages no sample named over the cold age make room on a full fast node.

2n1m-hmat on 6.12 with DAMON off ([sample] damon = off, as on a kernel without it) and
page samples replayed ([sample] pmu = replay: the guests have no PMU; two samples of a
page a second from node 0's CPU, as a PMU gives for memory in use). The cgroups of
exchange-across:
- taker: a workload whose 64 MiB, all read all the time and all sampled, was moved to
  the slow node 2;
- donor, opted in: a workload that filled node 0 below its promotion floor and reads
  only its first MiB, the only part of it sampled;
- bystander, not opted in: the rest of the fill.
Asserted: while the taker waits at the floor, explain shows the donor's cold memory
known from its samples (cold.by = samples, state known) with no kdamond watching it;
90% of the taker's hot part on node 0 within HOT_WAIT_S; the donor gave memory for
others, and its sampled MiB is all on node 0 at the end; the bystander's pages all
still on node 0; the donor's demotions for others at most the taker's 64 MiB and 10%;
the taker's promoted part still on node 0 STAY_S later. Under --shipped the tenants are
not root and the daemon runs under its unit (the replay file in /run, which its
PrivateTmp= does not hide)."""
import os
import threading
import time

from scenario import check, explain, load, node_cpus, sysctl_numa_balancing, wait_log

HOT_WAIT_S = 240
KNOWN_WAIT_S = 90        # until explain shows the donor's cold memory known by its samples
STAY_S = 15
SLICE_PAGES = 4096       # of the taker's pages sampled a round: all of its 64 MiB in 4 s
PAGE = os.sysconf("SC_PAGESIZE")


class Samples(threading.Thread):
    """Samples appended to the replay file once a second, each line twice (the two-sample
    rule): the donor's hot pages all every round, the taker's SLICE_PAGES a round in
    turn. The thread runs on node 1's CPUs, so the replay file's tmpfs pages (about
    250 KB a second) are not taken from node 0, which the scenario keeps full and whose
    bystander's pages must stay there."""

    def __init__(self, path, cpu, taker, donor, node1_cpus):
        super().__init__(daemon=True)
        self.path, self.stop_event, self.node1_cpus = path, threading.Event(), node1_cpus
        self.taker, self.donor = [self.lines(cpu, *taker), self.lines(cpu, *donor)]
        self.next = 0

    @staticmethod
    def lines(cpu, pid, start, length):
        return [f"{pid} {cpu} {start + i * PAGE + 64:#x}\n" for i in range(length // PAGE)]

    def run(self):
        os.sched_setaffinity(0, self.node1_cpus)
        while not self.stop_event.is_set():
            part = self.taker[self.next:self.next + SLICE_PAGES]
            self.next = (self.next + len(part)) % len(self.taker)
            with open(self.path, "a") as f:
                f.write("".join(part + self.donor) * 2)
            self.stop_event.wait(1)


def cpulist(text):
    """"0-1,3" as {0, 1, 3}."""
    out = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def wait_cold_known(env, pid, limit):
    """(seconds, explain's cold) once explain says pid's cold memory is known by its
    samples; (None, the last cold) after limit."""
    t0, cold = time.time(), None
    while time.time() - t0 < limit:
        cold = explain(env, pid).get("cold")
        if cold and cold.get("by") == "samples":
            return round(time.time() - t0, 1), cold
        time.sleep(1)
    return None, cold


def run(env, res):
    x = load("exchange-across")
    sysctl_numa_balancing(0)
    taker_cg = env.cgroup("nb-xs-taker", "balance")
    donor_cg = env.cgroup("nb-xs-donor", "balance")
    by_cg = env.cgroup("nb-xs-bystander")
    taker, t_start, t_len = x.start_taker(env, taker_cg)
    donor, d_start, d_len, bys, by_before = x.fill_node0(env, res, donor_cg, by_cg)
    d_slow0 = x.on_node(donor.pid, d_start, d_len, 2)[0]

    run_dir = "/run/numabalanced-test" if env.shipped else env.tmp
    os.makedirs(run_dir, exist_ok=True)
    replay = os.path.join(run_dir, f"replay.{time.time_ns()}")
    open(replay, "w").close()
    metrics = "/run/numabalanced/test-metrics.prom" if env.shipped else env.tmp_path("metrics.prom")
    env.start_daemon(extra_conf=f"[sample]\npmu = replay\nreplay_path = {replay}\ndamon = off\n"
                                f"[report]\nmetrics_path = {metrics}\n")
    wait_log(env, "Memory on nodes 2 is a lower tier", 60)
    # Samples of a process are kept from its first full read on: both read first.
    for pid in (taker.pid, donor.pid):
        wait_log(env, f"pid={pid}", 60)
    cpu = int(node_cpus(0).split(",")[0].split("-")[0])
    samples = Samples(replay, cpu, (taker.pid, t_start, t_len), (donor.pid, d_start, x.DONOR_HOT_MB << 20),
                      cpulist(node_cpus(1)))
    samples.start()
    try:
        held = x.wait_held(env, taker.pid, x.HELD_WAIT_S)
        res["seconds_to_taker_held_at_floor"] = held
        check(held is not None, f"the taker's promotions never waited at node 0's floor within {x.HELD_WAIT_S} s")
        known, cold = wait_cold_known(env, donor.pid, KNOWN_WAIT_S)
        res["seconds_to_donor_cold_known"], res["donor_cold"] = known, cold
        check(known is not None, f"the donor's cold memory was not known by its samples within {KNOWN_WAIT_S} s: "
                                 f"explain's cold {cold}")
        check(cold["samples"]["state"] == "known" and cold["samples"]["missed_permille"] <= 50,
              f"explain's cold of the donor: {cold}")
        monitored = explain(env, donor.pid).get("damon_monitored")
        check(monitored is False, f"a kdamond watches the donor with damon = off: {monitored}")

        t0, t90 = time.time(), None
        while time.time() - t0 < HOT_WAIT_S:
            if x.on_node(taker.pid, t_start, t_len, 0)[0] >= t_len * 0.9:
                t90 = time.time() - t0
                break
            time.sleep(1)
        res["seconds_to_90pct_promoted"] = round(t90, 1) if t90 is not None else None
        got_t = x.on_node(taker.pid, t_start, t_len, 0)
        res["taker_pages_by_node"] = got_t[1]
        d_slow = x.on_node(donor.pid, d_start, d_len, 2)[0]
        res["donor_demoted_mb"] = round((d_slow - d_slow0) / 2**20, 1)
        if t90 is None:
            res["donor_explain"] = explain(env, donor.pid)
        check(t90 is not None, f"90% of the taker's {x.HOT_MB} MiB not on node 0 within {HOT_WAIT_S} s: {got_t[1]}; "
                               f"the donor's pages on node 2 grew by {res['donor_demoted_mb']} MiB")
        own, others = x.demoted_kib(env.log(), donor.pid)
        res["donor_demoted_kib"] = {"own": own, "for_others": others}
        check(others > 0 and d_slow > d_slow0, f"the donor gave up nothing for others ({others} KiB)")

        time.sleep(STAY_S)
        kept = x.on_node(taker.pid, t_start, t_len, 0)
        res["taker_on_node0_after_mb"] = round(kept[0] / 2**20, 1)
        check(kept[0] >= t_len * 0.9, f"the taker's promoted part went back: {kept[1]}")
    finally:
        samples.stop_event.set()
        samples.join(5)
        os.unlink(replay)   # about 220 KB a second into /run's tmpfs: not left to later scenarios
    donor_hot = x.on_node(donor.pid, d_start, x.DONOR_HOT_MB << 20, 0)
    res["donor_hot_pages_by_node"] = donor_hot[1]
    check(donor_hot[0] == x.DONOR_HOT_MB << 20, f"the donor's sampled MiB was demoted: {donor_hot[1]}")
    by_after = [x.on_node(b.pid, s, n, 0) for b, s, n in bys]
    res["bystander_pages_by_node"] = [a[1] for a in by_after]
    check([a[0] for a in by_after] == by_before, f"the bystander (not opted in) was moved: {res['bystander_pages_by_node']}")
    own, others = x.demoted_kib(env.log(), donor.pid)
    res["donor_demoted_kib_at_end"] = {"own": own, "for_others": others}
    check(others * 1024 <= t_len * 1.1, f"the donor gave {others} KiB for others, more than the taker's "
                                        f"{t_len >> 10} KiB could take")
    time.sleep(1.5)   # a tick writes the metrics after its jobs ran
    res["demoted_bytes_total"] = load("promote").metric(metrics, "numabalanced_demoted_bytes_total")
    check((res["demoted_bytes_total"] or 0) > 0, f"numabalanced_demoted_bytes_total is {res['demoted_bytes_total']}")
    env.stop_daemon()
