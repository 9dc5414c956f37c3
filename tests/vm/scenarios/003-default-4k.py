# SPDX-License-Identifier: GPL-2.0-or-later
"""(a) on base pages (4 KiB) instead of the kernel's THP default.

001-default with pages=4k."""
from scenario import load


def run(env, res):
    load("default").run(env, res, pages="4k")
