# SPDX-License-Identifier: GPL-2.0-or-later
"""(a) with [sample] source = proc: the /proc source is used, and said.

001-default with [sample] source = proc: the /proc source is used, the daemon says
it is because of the config (and never names the bpf source), and it converges."""
from scenario import check, load


def run(env, res):
    load("default").run(env, res, extra_conf="[sample]\nsource = proc")
    log = env.last_log
    check("Sampling where threads run from /proc (source proc): [sample] source = proc" in log,
          "the daemon did not say it samples from /proc because of the config")
    check("source bpf" not in log, "the daemon mentions the bpf source")
