# SPDX-License-Identifier: GPL-2.0-or-later
"""The process execs mid-job (same pid, start time, pidfd): the job stops.

stale-mbind with another change between the scan and the moves (see there)."""
from scenario import load


def run(env, res):
    load("stale-mbind").run(env, res, how="exec")
