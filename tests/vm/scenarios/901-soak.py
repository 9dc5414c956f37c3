# SPDX-License-Identifier: GPL-2.0-or-later
"""Soak (a benchmark, not in CI): MINUTES of churn and reloads; no leak, no death.

Soak (issue 7, a benchmark: not in CI): MINUTES of churn in an opted-in cgroup
(three misplaced 64 MiB workloads, one replaced every 20 s, each new one on the
other node; 30 short-lived processes every 20 s) with a SIGHUP reload every minute
(rate_limit_mb_s alternating 1024/512, so that each reload changes something).
Every 10 s: the daemon's RSS, open fds and threads. At the end: the series, the log
lines that look like trouble (grouped, numbers masked), and how many workloads got
95% local within their 20 s. Fails if the daemon dies or stops answering, if its fds
grow, or if its RSS in the last tenth is more than 25% above the second tenth.

    tests/vm/vmrun --timeout 4500 2n2c tests/vm/engine.py --build BUILD soak:60"""
import json
import os
import re
import signal
import subprocess
import time

from scenario import check, local_share_direct, sh, sysctl_numa_balancing


def proc_rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def tenth_medians(samples, key):
    """The medians of key over the second and the last tenth of the samples (the first
    tenth is start-up: BPF loaded, first scans)."""
    tenth = max(1, len(samples) // 10)
    second = sorted(x[key] for x in samples[tenth:2 * tenth]) or [0]
    last = sorted(x[key] for x in samples[-tenth:]) or [0]
    return second[len(second) // 2], last[len(last) // 2]


def soak_verdict(samples):
    """What the soak holds against the daemon, from its samples: a leak shows as a level
    that rises and stays, so the last tenth is compared with the second, by medians.
    Not the extremes: the daemon holds one pidfd per watched process and scans in bursts,
    so fds and RSS follow the churn from one sample to the next (the first soak failed
    on a single sample of 30 fds, 22 before and after, under a max - min rule)."""
    problems = []
    f2, f9 = tenth_medians(samples, "fds")
    r2, r9 = tenth_medians(samples, "rss_kb")
    if f9 > f2 + 2:
        problems.append(f"open fds grew: median {f2} in the second tenth, {f9} in the last")
    if r9 > 1.25 * r2:
        problems.append(f"RSS grew: median {r2} kB in the second tenth, {r9} kB in the last")
    return problems


def trouble_lines(log):
    """The log lines that look like trouble, numbers masked, with how often each came."""
    trouble = {}
    for line in log.splitlines():
        # (refused=N of the batch lines is a count, not trouble)
        if re.search(r"(?i)error|fail|warn|cannot|refus(?!ed=)|denied|lost", line):
            key = re.sub(r"\d+", "N", line.split(None, 1)[1] if " " in line.strip() else line)[:200]
            trouble[key] = trouble.get(key, 0) + 1
    return trouble


def run(env, res, minutes=60):
    sysctl_numa_balancing(0)
    minutes = float(minutes)
    cg = env.cgroup("nb-soak", "balance")
    conf_extra = "[select]\nmin_rss = 0\n[migrate]\nrate_limit_mb_s = {}\n"
    env.start_daemon(extra_conf=conf_extra.format(1024))
    conf = env.conf
    base = open(conf).read()
    dpid = env.daemon.pid
    work, fixed, started, samples, reloads = [], 0, 0, [], 0
    t0 = time.time()
    end = t0 + minutes * 60
    next_churn = next_sample = t0
    next_reload = t0 + 60
    node = 0
    while time.time() < end:
        now = time.time()
        if now >= next_churn:
            if len(work) >= 3:
                p, start, born = work.pop(0)
                try:
                    fixed += local_share_direct(p.pid) >= 0.95
                except OSError:
                    pass
                p.kill()
                p.wait()
                env.procs.remove(p)
            p, start, _ = env.start_workload(cg, 64, node, 1 - node)
            work.append((p, start, now))
            started += 1
            node = 1 - node
            subprocess.run(["sh", "-c", f"echo $$ > {cg}/cgroup.procs; for i in $(seq 30); do /bin/true & done; wait"])
            next_churn = now + 20
        if now >= next_reload:
            reloads += 1
            with open(conf, "w") as f:
                f.write(base.replace("rate_limit_mb_s = 1024", f"rate_limit_mb_s = {512 if reloads % 2 else 1024}"))
            env.daemon.send_signal(signal.SIGHUP)
            next_reload = now + 60
        if now >= next_sample:
            check(env.daemon.poll() is None, f"the daemon died after {now - t0:.0f} s: {env.log()[-2000:]}")
            st = json.loads(sh(env.ctl, "status", "--json").stdout)
            samples.append({"t": round(now - t0), "rss_kb": proc_rss_kb(dpid),
                            "fds": len(os.listdir(f"/proc/{dpid}/fd")),
                            "threads": len(os.listdir(f"/proc/{dpid}/task")), "ticks": st.get("ticks")})
            next_sample = now + 10
        time.sleep(0.5)
    log = env.log()
    env.stop_daemon()
    rss2, rss9 = tenth_medians(samples, "rss_kb")
    res.update({
        "minutes": minutes, "kernel": os.uname().release,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)),
        "command": f"tests/vm/vmrun --timeout 4500 2n2c tests/vm/engine.py --build BUILD soak:{minutes:g}",
        "workloads_started": started, "workloads_95pct_local_when_replaced": fixed,
        "workloads_replaced": started - len(work), "reloads": reloads,
        "rss_kb_second_tenth_median": rss2, "rss_kb_last_tenth_median": rss9,
        "rss_kb_max": max(x["rss_kb"] for x in samples), "fds_min": min(x["fds"] for x in samples),
        "fds_max": max(x["fds"] for x in samples), "threads_max": max(x["threads"] for x in samples),
        "log_lines": len(log.splitlines()), "trouble_lines": trouble_lines(log), "samples": samples,
    })
    problems = soak_verdict(samples)
    res["fds_second_tenth_median"], res["fds_last_tenth_median"] = tenth_medians(samples, "fds")
    check(not problems, "; ".join(problems))
