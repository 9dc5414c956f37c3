#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""numabalancectl against the real daemon, in a test-bed guest (as root, 2 nodes).

    test-ctl.py --build BUILD_DIR

A misplaced workload (memory on node 0, threads on node 1) in an opted-in cgroup, a
second one in a cgroup that did not opt in. Once the daemon has fixed the first:
  - as root, `status`, `list`, `explain --json` show the cgroup and the process,
    pages moved > 0 that agree with the metrics file (parsed strictly), and the
    daemon's CPU time on the cgroup > 0 in each stage (read, decide, migrate);
  - `explain` of the second process says its cgroup is not opted in;
  - as uid 65534 (setpriv), `list` shows nothing of root's, `explain` of root's
    process is refused as not visible, word for word as a pid that does not exist,
    and `status` counts none of root's cgroups, processes or pages;
  - the tables print (exit 0).
Uses tests/vm/scenario.py (Env: cgroups, workload, daemon; checks through tests/nbtest.py)."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "unit"))
import nbtest  # noqa: E402
import promparse  # noqa: E402
import scenario  # noqa: E402
from scenario import Fail, check, fail  # noqa: E402

SOCK = "/tmp/nb-ctl/control"
METRICS = "/tmp/nb-ctl.prom"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def ctl(env, *args, user=None):
    # As nobody: from a copy it can reach, not from the build directory (anyuser.py).
    cmd = NOBODY + [scenario.copy_for_any_user(env.ctl)] if user else [env.ctl]
    return subprocess.run(cmd + ["--socket", SOCK, *args], capture_output=True, text=True, timeout=60)


def ctl_json(env, *args, user=None, rc=0):
    r = ctl(env, "--json", *args, user=user)
    check(r.returncode == rc, f"numabalancectl --json {' '.join(args)}{' as nobody' if user else ''}: "
                              f"exit {r.returncode}, expected {rc}: {r.stderr.strip()}")
    try:
        return json.loads(r.stdout)
    except ValueError:
        fail(f"numabalancectl --json {' '.join(args)}: not JSON: {r.stdout!r}")


def stable_list_and_metrics(env, cgpath):
    """list, the metrics file, list again, until the moved counts and the bytes per
    node did not change in between (a tick may land between the reads)."""
    for _ in range(20):
        a = ctl_json(env, "list")
        fam = promparse.parse(open(METRICS).read())
        b = ctl_json(env, "list")
        ca = [c for c in a["cgroups"] if c["path"] == cgpath]
        cb = [c for c in b["cgroups"] if c["path"] == cgpath]
        if ca and cb and ca[0]["pages"] == cb[0]["pages"] and ca[0]["nodes"] == cb[0]["nodes"]:
            return b, fam
        time.sleep(0.3)
    fail("the moved counts and bytes per node never held still between two list calls")


class TopWatch:
    """numabalancectl top in a real terminal (a tmux session) while a workload is being
    fixed: every frame it drew (tmux pipe-pane copies what it writes to a file; sampling
    the screen in a slow guest can miss a move of a second or two), and its screen as
    tmux shows it."""

    def __init__(self, env):
        self.pid = None
        self.out = env.tmp_path("top-output")
        top_session(env, "nbtop")
        tmux("pipe-pane", "-t", "nbtop", "-o", f"cat >> {self.out}")
        deadline = time.time() + 30
        while "numabalanced pid" not in self.screen():
            if time.time() > deadline:
                fail(f"top did not show its header within 30 s:\n{self.screen()}")
            time.sleep(0.2)

    def screen(self):
        return tmux("capture-pane", "-p", "-t", "nbtop").stdout

    def frames(self):
        """The frames top drew so far (each begins by moving the cursor home: top draws
        over the last frame instead of clearing the screen)."""
        try:
            text = open(self.out, errors="replace").read()
        except FileNotFoundError:
            return []
        return [f.replace("\r", "") for f in text.split("\033[H") if f.strip()]

    def row(self, text):
        """The workload's row of a screen: [pid, comm, local, moved/s, misplaced, refused, nodes..., reason]."""
        for line in text.splitlines():
            f = line.split()
            if f and f[0] == str(self.pid):
                return f
        return None

    def finish(self, res):
        time.sleep(1.5)            # a frame after the last move
        frames = self.frames()
        rows = [self.row(f) for f in frames]
        moving = [r for r in rows if r and any(x.endswith("Mi") and float(x[:-2]) > 0 for x in r)]
        res["top_frames"] = len(frames)
        res["top_moving_frames"] = len(moving)
        check(any("numabalanced pid" in f and "chain" in f for f in frames), "top never drew its header")
        check(any(r for r in rows), f"top never showed the workload's row:\n{frames[-1] if frames else ''}")
        check(moving, f"no frame of top showed the workload moving (MiB/s above 0) in {len(frames)} frames")
        tmux("send-keys", "-t", "nbtop", "l")
        time.sleep(1.5)
        check("sorted by local" in self.screen(), f"the l key did not sort by locality:\n{self.screen()}")
        tmux("send-keys", "-t", "nbtop", "q")
        # 30 s: a TCG guest, and the ASan build's leak check at exit.
        status = wait_exit("nbtop", 30, f"top did not exit on q:\n{self.screen()}")
        check(status == "0", f"top exited {status!r} on q:\n{self.screen()}")
        tmux("kill-session", "-t", "nbtop")


def default_sigchld():
    # The guest's command may run with SIGCHLD ignored, which tmux's server (started by
    # the first call) would inherit: its children then reaped by the kernel, tmux never
    # learns their exit status (pane_dead_status stays empty).
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)


def tmux(*args):
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30, preexec_fn=default_sigchld)


def top_session(env, name):
    """numabalancectl top in a new 160x40 tmux session; the shell around it writes top's
    exit status to /tmp/NAME.status (tmux's own pane_dead_status stayed empty in the
    guests: the status comes from the shell that waited for top)."""
    status = f"/tmp/{name}.status"
    if os.path.exists(status):
        os.unlink(status)
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "40",
         f"{env.ctl} --socket {SOCK} --delay 0.5 top; echo $? > {status}")
    tmux("set-option", "-t", name, "remain-on-exit", "on")


def wait_exit(name, timeout, what):
    """Waits for top in session name to exit; returns its exit status ("" if it did not)."""
    path = f"/tmp/{name}.status"
    deadline = time.time() + timeout
    while True:
        try:
            status = open(path).read().strip()
            if status:
                return status
        except FileNotFoundError:
            pass
        if time.time() > deadline:
            check(False, what)
            return ""
        time.sleep(0.2)


def top_dead_daemon(env, res):
    """top in a terminal, then the daemon stopped under it: top says so and exits 1."""
    top_session(env, "nbtop2")
    time.sleep(2)
    env.stop_daemon()
    status = wait_exit("nbtop2", 15, "top did not exit when the daemon went away")
    screen = tmux("capture-pane", "-p", "-t", "nbtop2").stdout
    check(status == "1" and "the daemon went away" in screen, f"top on a dead daemon: exit {status}:\n{screen}")
    res["top_dead_daemon_exit"] = status
    tmux("kill-session", "-t", "nbtop2")


def check_fleet_view(res):
    """The metrics file as Prometheus's own linter sees it, and every metric that
    contrib/'s alert rules and Grafana dashboard name present in it."""
    import re
    import shutil
    text = open(METRICS).read()
    promtool = shutil.which("promtool")
    check(promtool is not None, "promtool is not installed (scripts/setup installs the Debian package prometheus)")
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        check(r.returncode == 0, f"promtool check metrics: {r.stdout}{r.stderr}")
    contrib = os.path.join(HERE, "..", "..", "contrib")
    named = set()
    for path in ("prometheus/numabalanced.rules.yml", "grafana/numabalanced-dashboard.json"):
        named |= set(re.findall(r"\bnumabalanced_[a-z_]+\b", open(os.path.join(contrib, path)).read()))
    present = set(re.findall(r"^# TYPE (numabalanced_[a-z_]+) ", text, re.M))
    # A histogram's series are its name with _bucket, _sum and _count.
    for h in re.findall(r"^# TYPE (numabalanced_[a-z_]+) histogram", text, re.M):
        present |= {h + "_bucket", h + "_sum", h + "_count"}
    check(named <= present, f"metrics contrib/ names that the file lacks: {sorted(named - present)}")
    res["fleet_view_metrics"] = sorted(named)


def run(env, res):
    scenario.sysctl_numa_balancing(0)
    cg = env.cgroup("nb-ctl", "balance")
    cg_off = env.cgroup("nb-ctl-off")
    # 32 MB/s: the 256 MiB move takes about 8 s whatever the guest's speed, so top draws
    # frames while it runs (moved whole in huge pages, it took 0.35 s in a fast guest, and
    # no frame fell between the process's first listing and the end of its run).
    env.start_daemon(extra_conf=f"[report]\nmetrics_path = {METRICS}\n[migrate]\nrate_limit_mb_s = 32\n",
                     args=("--control-socket", SOCK))
    # The socket first: top gives up at once on a daemon that is not listening yet (under
    # ASan in TCG, loading BPF and the software sampler's self-check took 0.5 s).
    deadline = time.time() + 30
    while not os.path.exists(SOCK) and time.time() < deadline:
        time.sleep(0.1)
    check(os.path.exists(SOCK), f"the daemon did not listen on {SOCK} within 30 s:\n{env.log()}")
    # top is up before the workload appears: the move (seconds) happens under it.
    top = TopWatch(env)
    p, start, _ = env.start_workload(cg, 256, 0, 1)
    top.pid = p.pid
    po, _, _ = env.start_workload(cg_off, 32, 0, 1)
    t = scenario.wait_local(env, p.pid, 0.95, 150)
    top.finish(res)
    check(t is not None, "the workload was not made local within 150 s")
    res["seconds_to_95pct_local"] = t
    time.sleep(1.5)  # a tick after the last move: the metrics file has it

    st = ctl_json(env, "status")
    check(st["pages"]["moved"] > 0, f"status: no pages moved: {st['pages']}")
    check(st["cgroups_watched"] >= 1 and st["processes_watched"] >= 1, f"status: {st}")
    check(st["kernel_numa_balancing"] == 0, f"status kernel_numa_balancing {st['kernel_numa_balancing']}")
    check(st["sampling_source"] in ("proc", "bpf"), f"status sampling_source {st['sampling_source']}")
    for stage in ("read", "decide", "migrate"):
        check(st["cpu_ns"]["by_stage"][stage] > 0, f"status: no CPU time in {stage}")
    res["status"] = st

    lst, fam = stable_list_and_metrics(env, "/nb-ctl")
    c = [c for c in lst["cgroups"] if c["path"] == "/nb-ctl"][0]
    check(c["mode"] == "balance" and c["source"] == "trusted.numabalanced", f"list cgroup {c}")
    check(c["pages"]["moved"] > 0, f"list: cgroup moved nothing: {c['pages']}")
    for stage in ("read", "decide", "migrate"):
        check(c["cpu_ns"][stage] > 0, f"list: no CPU time in {stage} for the cgroup: {c['cpu_ns']}")
    procs = [q for q in lst["processes"] if q["pid"] == p.pid]
    check(len(procs) == 1, f"list: the workload is not listed: {lst['processes']}")
    q = procs[0]
    check(q["pages_moved"] > 0 and q["local_share"] >= 0.9, f"list process {q}")
    check({n["node"] for n in q["nodes"]} == {0, 1}, f"list process nodes {q['nodes']}")
    check(all(x["pid"] != po.pid for x in lst["processes"]), "the process of the cgroup that did not opt in is listed")
    g = promparse.get
    ps = g(fam, "numabalanced_page_size_bytes")
    m_moved = g(fam, "numabalanced_migration_bytes_total", cgroup="/nb-ctl", result="moved")
    check(m_moved == c["pages"]["moved"] * ps, f"metrics moved {m_moved} != list {c['pages']['moved']} pages")
    for r in ("busy", "gone", "refused"):
        check(g(fam, "numabalanced_migration_bytes_total", cgroup="/nb-ctl", result=r) == c["pages"][r] * ps,
              f"metrics {r}")
    check(g(fam, "numabalanced_processes", cgroup="/nb-ctl") == c["processes"], "metrics processes")
    # Pages moved, so move calls were timed: the histogram is well formed and not empty.
    _, csum, ccount = promparse.histogram(fam, "numabalanced_move_call_seconds")
    check(ccount > 0 and csum > 0, f"move-call histogram after moves: count {ccount} sum {csum}")
    _, _, tcount = promparse.histogram(fam, "numabalanced_tick_seconds")
    check(tcount == g(fam, "numabalanced_ticks_total"), f"tick histogram count {tcount} vs ticks_total")
    check(g(fam, "numabalanced_sampling_source_info", source=st["sampling_source"]) == 1, "metrics sampling source")
    check(g(fam, "numabalanced_cpu_seconds_total", cgroup="/nb-ctl", stage="migrate") > 0, "metrics migrate cpu")
    m_local = g(fam, "numabalanced_resident_bytes", cgroup="/nb-ctl", node="1")
    check(m_local == [n["bytes"] for n in c["nodes"] if n["node"] == 1][0], "metrics locality node 1 vs list")
    res["moved_pages"] = c["pages"]["moved"]
    res["cpu_ns"] = c["cpu_ns"]
    check_fleet_view(res)

    ex = ctl_json(env, "explain", str(p.pid))
    check(ex["watched"] is True and ex["mode"] == "balance" and ex["cgroup"] == "/nb-ctl", f"explain {ex}")
    check(ex["mems_allowed"] == "0-1" and ex["hot_node"] == 1, f"explain nodes {ex}")
    check(ex["reason"] is not None and ex["reason_text"] and "cooldown" in ex, f"explain reason {ex}")
    res["explain"] = ex
    ex = ctl_json(env, "explain", str(po.pid))
    check(ex["watched"] is False and ex["why"] == "not-opted-in" and ex["cgroup"] == "/nb-ctl-off",
          f"explain of the process not opted in: {ex}")

    # Another user: nothing of root's.
    nl = ctl_json(env, "list", user=True)
    check(nl["processes"] == [] and nl["cgroups"] == [], f"uid 65534 sees: {nl}")
    ne = ctl_json(env, "explain", str(p.pid), user=True, rc=4)
    check(ne.get("visible") is False and ne.get("why") == "not-visible" and "cgroup" not in ne,
          f"uid 65534 explain of root's process: {ne}")
    # ... and the same answer as for a pid that does not exist: nothing says it exists.
    nn = ctl_json(env, "explain", "2147483647", user=True, rc=4)
    ne.pop("pid")
    nn.pop("pid")
    check(ne == nn, f"uid 65534: explain of root's process {ne}, of no process {nn}")
    ns = ctl_json(env, "status", user=True)
    check(ns["requester_uid"] == 65534, "status as nobody")
    # status counts for it only what it may see: none of root's.
    check(ns["scope"] == "own" and ns["cgroups_watched"] == 0 and ns["processes_watched"] == 0 and
          ns["pages"]["moved"] == 0 and ns["cpu_ns"]["by_stage"]["total"] == 0, f"status as nobody: {ns}")

    for cmd in (["status"], ["list"], ["explain", str(p.pid)]):
        r = ctl(env, *cmd)
        check(r.returncode == 0 and r.stdout, f"numabalancectl {' '.join(cmd)}: {r.returncode} {r.stderr}")
    check("/nb-ctl" in ctl(env, "list").stdout, "list table lacks the cgroup")
    # top's one snapshot when stdout is not a terminal.
    r = ctl(env, "--delay", "0.5", "top")
    check(r.returncode == 0 and "/nb-ctl" in r.stdout and str(p.pid) in r.stdout and "\033[" not in r.stdout,
          f"top to a pipe: {r.returncode} {r.stdout!r} {r.stderr}")
    top_dead_daemon(env, res)
    check(not os.path.exists(SOCK), "the control socket was left behind")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", default=os.environ.get("NUMABALANCED_RESULTS", "/tmp"))
    a = ap.parse_args()
    env = scenario.Env(a.build, a.out)
    res = {"scenario": "ctl"}
    t0 = time.time()
    try:
        run(env, res)
        res["result"] = "pass"
    except Exception as e:  # Fail (a check, counted already), or a bug in the test
        res["result"] = "fail"
        res["error"] = f"{type(e).__name__}: {e}"
        res["daemon_log_tail"] = env.log()[-4000:]
        if not isinstance(e, Fail):
            nbtest.check(False, res["error"])
    finally:
        env.cleanup()
    res["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(res), flush=True)
    with open(os.path.join(a.out, "ctl.json"), "w") as f:
        json.dump(res, f, indent=1)
    nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
