#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The fleet view in contrib/: the Prometheus rules pass promtool (check rules, and
the unit tests of contrib/prometheus/numabalanced.rules.test.yml: each alert fires on
the series that should fire it and only those), the Grafana dashboard is valid JSON
with a PromQL expression in every panel, per host (no aggregation drops the instance
label) and in bytes (not pps), every alert has a case that fires it and one that
does not, and every metric the rules and the dashboard name is one the daemon writes
(daemon/metrics.c). The metrics file a daemon wrote is
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


AGG = r"\b(sum|avg|min|max|count|topk|bottomk|quantile)\b"


def check_per_host(dash, exprs):
    """Every panel is per host: each aggregation keeps the instance label (by (...,
    instance, ...), or without (...) not naming it), and memory is in bytes: the
    bytes counter, not the deprecated pages one, and no panel has a packet unit."""
    for e in exprs:
        for m in re.finditer(AGG + r"\s*(by|without)\s*\(([^)]*)\)", e):
            labels = [x.strip() for x in m.group(3).split(",")]
            check((m.group(2) == "by") == ("instance" in labels), f"a dashboard aggregation across hosts: {e}")
        check(not re.search(AGG + r"\s*\(", e), f"a dashboard aggregation over everything: {e}")
        check("instance=~\"$instance\"" in e, f"a dashboard query not limited to the host variable: {e}")
    for p in dash["panels"]:
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        check(unit != "pps", f"panel {p['title']!r}: unit pps (packets per second)")
        for t in p.get("targets", []):
            check("numabalanced_pages_total" not in t["expr"],
                  f"panel {p['title']!r}: the deprecated pages_total, not moved_bytes_total: {t['expr']}")
            if "numabalanced_migration_bytes_total" in t["expr"]:
                check(unit in ("Bps", "binBps"), f"panel {p['title']!r}: bytes not shown per second ({unit}): {t['expr']}")


def check_alert_tests(rules_text, test_text):
    """Each alert has a promtool case where it fires and one where it stays quiet;
    none looks for a metric's absence over all hosts, and a stopped daemon is not
    critical."""
    alerts = re.findall(r"^\s*- alert: (\S+)", rules_text, re.M)
    check(len(alerts) >= 4, f"alerts not found: {alerts}")
    check("absent(" not in rules_text, "absent() sees no single host going away")
    cases = re.split(r"^\s*- eval_time:", test_text, flags=re.M)[1:]
    for a in alerts:
        mine = [c for c in cases if re.search(r"alertname: " + re.escape(a) + r"\s*$", c, re.M)]
        check(any("exp_alerts: []" in c for c in mine), f"{a}: no test case where it stays quiet")
        check(any("exp_labels" in c for c in mine), f"{a}: no test case where it fires")
    for block in re.split(r"^\s*- alert: ", rules_text, flags=re.M)[1:]:
        if block.startswith(("NumabalancedNotTicking", "NumabalancedMetricsGone")):
            check("severity: critical" not in block, f"{block.split()[0]} is critical")


def main():
    root = sys.argv[1]
    rules = os.path.join(root, "contrib", "prometheus", "numabalanced.rules.yml")
    rules_test = os.path.join(root, "contrib", "prometheus", "numabalanced.rules.test.yml")
    dash_path = os.path.join(root, "contrib", "grafana", "numabalanced-dashboard.json")
    metrics_c = open(os.path.join(root, "daemon", "metrics.c")).read()
    # Every family name is a string literal there (metric_head()'s, or one passed to a
    # helper that writes a family under two names).
    written = set(re.findall(r'"(numabalanced_[a-z_]+)', metrics_c))
    check(len(written) >= 15, f"the daemon's metric names were not found in daemon/metrics.c: {written}")

    dash = json.load(open(dash_path))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    check(len(exprs) >= len(dash["panels"]) and all(exprs), "a panel without a query")
    used = names_in(" ".join(exprs)) | names_in(open(rules).read())
    # A histogram's series are its family's name with _bucket, _sum or _count.
    histograms = set(re.findall(r'metric_histogram\(f, "(numabalanced_[a-z_]+)"', metrics_c))
    unknown = {n for n in used if n not in written and re.sub(r"_(bucket|sum|count)$", "", n) not in histograms}
    check(not unknown, f"contrib/ names metrics the daemon does not write: {sorted(unknown)}")
    deprecated = {"numabalanced_pages_total", "numabalanced_locality_bytes", "numabalanced_moved_bytes_total",
                  "numabalanced_tick_duration_seconds", "numabalanced_threads_restored_total",
                  "numabalanced_damon_reads_skipped_total"}
    check(not used & deprecated, f"contrib/ uses deprecated metrics: {sorted(used & deprecated)}")
    print(f"{len(used)} metric(s) named by the rules and the dashboard, all written by the daemon")
    check_per_host(dash, exprs)
    check_alert_tests(open(rules).read(), open(rules_test).read())

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
