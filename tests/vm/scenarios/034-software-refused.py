# SPDX-License-Identifier: GPL-2.0-or-later
"""Under TCG, [sample] pmu = software is refused at start, said so, and the daemon runs on without page-level sampling.

The software source decodes the instruction each timer sample interrupted after; an
emulated CPU takes its interrupts between translated blocks, away from the accesses.
The daemon's self-check must see it: asserted, the warning naming the self-check and
the emulated CPU, the chain logged without page-level sampling, `numabalancectl status`
showing no page sampler, and a misplaced workload still fixed at VMA level. With the
default pmu = auto and no PMU, software sampling is tried and refused the same way,
said in the chain line."""
import json

from scenario import check, sh, sysctl_numa_balancing, wait_local, wait_log


def run(env, res):
    sysctl_numa_balancing(0)
    cg = env.cgroup("nb-sw", "balance")
    env.start_daemon(extra_conf="[sample]\npmu = software\n")
    wait_log(env, "[sample] pmu = software refused: its self-check's timer samples did not follow the accesses",
             timeout=60)
    check("an emulated CPU" in env.log(), "the refusal does not name the likely cause")
    check("Sampling chain: BPF scheduler only: page-level sampling off: [sample] pmu = software refused" in env.log()
          or "Sampling chain: /proc only: page-level sampling off: [sample] pmu = software refused" in env.log(),
          "the chain was not logged without page-level sampling")
    st = json.loads(sh(env.ctl, "--json", "status").stdout)
    res["sampling_chain"] = st.get("sampling_chain")
    check(st.get("page_sampling") is None and st.get("sampling_chain") in ("bpf", "proc"),
          f"status shows a page sampler: {st.get('page_sampling')} {st.get('sampling_chain')}")
    p, _, _ = env.start_workload(cg, 128, 0, 1)
    t = wait_local(env, p.pid, 0.95, 120)
    res["seconds_to_95pct_local"] = t
    check(t is not None, "not 95% local within 120 s without page-level sampling")
    env.stop_daemon()
    # pmu = auto (the default) with no PMU: software is tried, refused the same way, and
    # said in the one chain line as information.
    env.daemon_log = None
    env.start_daemon()
    wait_log(env, "Sampling chain:", timeout=60)
    res["auto_chain_line"] = [ln for ln in env.log().splitlines() if "Sampling chain:" in ln]
    check("page-level sampling off: no PMU with precise memory sampling (cpu/events/mem-loads, ibs_op, "
          "arm_spe_*); software sampling refused: its self-check's timer samples did not follow the accesses"
          in env.log(), "pmu = auto: the software refusal is not in the chain line")
    check("pmu = software refused" not in env.log(), "pmu = auto: warned as if software had been asked for")
    st = json.loads(sh(env.ctl, "--json", "status").stdout)
    check(st.get("page_sampling") is None, f"pmu = auto: status shows a page sampler: {st.get('page_sampling')}")
    env.stop_daemon()
