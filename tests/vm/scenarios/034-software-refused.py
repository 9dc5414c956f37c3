# SPDX-License-Identifier: GPL-2.0-or-later
"""Under TCG, [sample] pmu = software is refused at start, said so, and the daemon runs on without page-level sampling.

The software source decodes the instruction each timer sample interrupted after; an
emulated CPU takes its interrupts between translated blocks, away from the accesses.
The daemon's self-check must see it: asserted, the warning naming the self-check and
the emulated CPU, the chain logged without page-level sampling, `numabalancectl status`
showing no page sampler, and a misplaced workload still fixed at VMA level."""
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
