#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs engine scenarios in one test-bed guest (as root, real NUMA topology).

    engine.py --build BUILD_DIR [--out OUT_DIR] SCENARIO[:ARG]...
    engine.py --list

Each scenario is a file tests/vm/scenarios/NNN-name.py (run as `name`) whose
docstring says what it asserts and whose run(env, res[, ARG]) does it: real
workloads in real cgroups, the real daemon, and checks on what a user would see,
`numabalancectl show --json` and the kernel's own numa_maps. The numbers group them:
0xx the engine's cases (a)-(j), 1xx the placement sources, 2xx races, faults and
privilege, 9xx benchmarks (not in CI). What they share is tests/vm/scenario.py.

With --shipped they run as the package ships the daemon: under its unit, for a tenant
who is not root (tests/vm/shipped.py).

The scenarios run in the order given, one after the other in this guest; after each,
what it started is removed (Env.cleanup). A failed check ends its scenario, not the
run. Each scenario's result (pass/fail, the error, timings, the daemon's log tail on
a failure) is printed as one JSON line and written to OUT_DIR/engine-<name>.json
(default: $NUMABALANCED_RESULTS); the exit status is 1 if any scenario failed.
NUMABALANCED_ENGINE_LOG=1 keeps the daemon's whole log in the JSON.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import nbtest  # noqa: E402
import scenario  # noqa: E402
from scenario import Env, Fail  # noqa: E402



def failure_evidence(env, res, marker, out, name):
    """What a failed scenario leaves for its diagnosis, taken before its cleanup: the
    daemon's log tail (and the whole log beside the results, NAME-daemon.log: a
    decision taken 20 s before the failure is not in the tail), the kernel stacks of
    the daemon's and the workloads' threads still there, and the kernel's log since the
    scenario started (a kernel that held a thread, as a soft lockup in a workload on
    6.12 once did, says so there)."""
    log = env.log()
    res["daemon_log_tail"] = log[-4000:]
    with open(os.path.join(out, f"{name.replace(':', '-')}-daemon.log"), "w") as f:
        f.write(log)
    # The kernel's log first: the stacks below add a SysRq backtrace to it.
    res["kernel_log"] = scenario.kernel_log_since(marker)[-6000:]
    pids = [p.pid for p in env.procs if p.poll() is None]
    if env.daemon and env.daemon.poll() is None:
        pids.insert(0, env.daemon.pid)
    if pids:
        res["kernel_stacks"] = scenario.kernel_stacks(*pids)[:8000]


def run_one(env, name, out):
    """Runs scenario name (NAME:ARG passes ARG on, as soak:MINUTES); True if it passed."""
    res = {"scenario": name}
    t0 = time.time()
    # Said before it runs: a scenario that hangs until vmrun's limit is then named
    # (scripts/test-failures looks for this line).
    print(f"engine: {name}: starting", flush=True)
    # The guest's memory as the scenarios before left it.
    print(f"engine: {name}: {scenario.memory_pressure()}", flush=True)
    marker = scenario.kernel_log_mark(name)
    try:
        fn, _, arg = name.partition(":")
        scenario.load(fn).run(env, res, *([arg] if arg else []))
        res["result"] = "pass"
    except Fail as e:   # a failed check: counted and printed already
        res["result"] = "fail"
        res["error"] = str(e)
        failure_evidence(env, res, marker, out, name)
    except Exception as e:  # a bug in the test is a failure too
        res["result"] = "fail"
        res["error"] = f"{type(e).__name__}: {e}"
        failure_evidence(env, res, marker, out, name)
        nbtest.check(False, f"{name}: {res['error']}")
    finally:
        env.cleanup()
        env.daemon_log = None
    res["seconds"] = round(time.time() - t0, 1)
    if res["result"] == "pass" and env.last_log:
        # A passed scenario's numbers come from this log too (exchange-across's own
        # counts): kept beside its results, as a failed one's is.
        with open(os.path.join(out, f"{name.replace(':', '-')}-daemon.log"), "w") as f:
            f.write(env.last_log)
    if os.environ.get("NUMABALANCED_ENGINE_LOG"):
        res["daemon_log"] = env.last_log

    print(json.dumps(res), flush=True)
    with open(os.path.join(out, f"engine-{name.replace(':', '-')}.json"), "w") as f:
        json.dump(res, f, indent=1)
    return res["result"] == "pass"


def main():
    ap = argparse.ArgumentParser(description="Run engine scenarios (tests/vm/scenarios) in this guest.")
    ap.add_argument("--build")
    ap.add_argument("--out", default=os.environ.get("NUMABALANCED_RESULTS", "/tmp"))
    ap.add_argument("--list", action="store_true", help="list the scenarios and what each asserts")
    ap.add_argument("--shipped", action="store_true",
                    help="as the package ships it: the daemon as numabalanced.service under systemd (PID 1, "
                         "vmrun --systemd), the tenants uid 65534 in delegated cgroups opted in with "
                         "user.numabalanced (tests/vm/shipped.py)")
    ap.add_argument("scenarios", nargs="*")
    a = ap.parse_args()
    if a.list:
        for name in scenario.names():
            doc = (scenario.load(name).__doc__ or "").strip().splitlines()
            print(f"{name:14} {doc[0] if doc else ''}")
        return 0
    if not a.build or not a.scenarios:
        ap.error("--build and at least one scenario are needed (--list names them)")
    unknown = [n for n in a.scenarios if n.partition(":")[0] not in scenario.names()]
    if unknown:   # before anything runs
        ap.error(f"no scenario {' '.join(unknown)} in {scenario.SCENARIO_DIR} (--list names them)")
    if a.shipped and not scenario.shipped.is_systemd():
        ap.error("--shipped needs systemd as PID 1 (vmrun --systemd)")
    env = Env(a.build, a.out, as_shipped=a.shipped)
    failed = [name for name in a.scenarios if not run_one(env, name, a.out)]
    if failed:
        print(f"engine: failed: {' '.join(failed)}", flush=True)
    nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
