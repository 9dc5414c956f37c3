#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The fleet view in contrib/: the Prometheus rules pass promtool (check rules, and
the unit tests of contrib/prometheus/numabalanced.rules.test.yml: each alert fires on
the series that should fire it and only those), the Grafana dashboard is valid JSON
with a PromQL expression in every panel, and every metric the rules and the dashboard
name is one the daemon writes (daemon/metrics.c). The metrics file a daemon wrote is
checked in the VM test engine-source (tests/vm/test-ctl.py: promtool check metrics,
and the same names present). Skipped (77) without promtool (Debian: prometheus;
scripts/setup installs it with its service disabled).

    test-contrib.py SOURCE_ROOT
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402


def names_in(text):
    """The numabalanced_* metric names an expression text uses (recording rules, which
    are named numabalanced:..., are not metrics the daemon writes)."""
    return set(re.findall(r"\bnumabalanced_[a-z_]+\b", text))


def main():
    root = sys.argv[1]
    rules = os.path.join(root, "contrib", "prometheus", "numabalanced.rules.yml")
    rules_test = os.path.join(root, "contrib", "prometheus", "numabalanced.rules.test.yml")
    dash_path = os.path.join(root, "contrib", "grafana", "numabalanced-dashboard.json")
    written = set(re.findall(r'metric_head\(f, "(numabalanced_[a-z_]+)"',
                             open(os.path.join(root, "daemon", "metrics.c")).read()))
    check(len(written) >= 15, f"the daemon's metric names were not found in daemon/metrics.c: {written}")

    dash = json.load(open(dash_path))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    check(len(exprs) >= len(dash["panels"]) and all(exprs), "a panel without a query")
    used = names_in(" ".join(exprs)) | names_in(open(rules).read())
    unknown = used - written
    check(not unknown, f"contrib/ names metrics the daemon does not write: {sorted(unknown)}")
    print(f"{len(used)} metric(s) named by the rules and the dashboard, all written by the daemon")

    promtool = shutil.which("promtool")
    if not promtool:
        nbtest.skip("promtool not installed (Debian: prometheus)")
    for args in (["check", "rules", rules], ["test", "rules", rules_test]):
        r = subprocess.run([promtool, *args], capture_output=True, text=True, cwd=os.path.dirname(rules_test))
        check(r.returncode == 0, f"promtool {' '.join(args)}: {r.stdout}{r.stderr}")
        print(f"promtool {args[0]} {args[1]}: {'ok' if r.returncode == 0 else 'FAILED'}")
    return nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
