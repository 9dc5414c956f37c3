# SPDX-License-Identifier: GPL-2.0-or-later
"""(a) on base pages with the kernel's own balancing: timed, for comparison.

002-kernel with pages=4k, beside 003-default-4k."""
from scenario import load


def run(env, res):
    load("kernel").run(env, res, pages="4k")
