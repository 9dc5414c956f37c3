# SPDX-License-Identifier: GPL-2.0-or-later
"""(a) with [sample] source = auto: the BPF source is used, and said.

001-default with the default [sample] source = auto: the BPF source is used, the
daemon says so (and never names the proc source), and the process converges."""
from scenario import check, load


def run(env, res):
    load("default").run(env, res)
    log = env.last_log
    check("Sampling where threads run with BPF on tp_btf/sched_switch (source bpf" in log,
          "the daemon did not say it samples with BPF")
    check("source proc" not in log, "the daemon mentions the proc source")
