# SPDX-License-Identifier: GPL-2.0-or-later
"""Its cgroup is switched to off mid-job: the moves stop.

stale-mbind with another change between the scan and the moves (see there)."""
from scenario import load


def run(env, res):
    load("stale-mbind").run(env, res, how="off")
