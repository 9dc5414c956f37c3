# SPDX-License-Identifier: GPL-2.0-or-later
"""Idle means idle: no BPF link or perf event until a process is watched, none after.

The daemon's BPF links (fdinfo with link_type:) and perf events (anon_inode:[perf_event])
counted from /proc/PID/fd: none with nothing opted in (a busy process in a cgroup
that did not opt in beside it); with one opted-in process in a cgroup whose cpuset is
one CPU, the scheduler program attached and page-sampling events ([sample] pmu =
page-faults: the software event stands in for the PMU, the same per-cgroup path) on
that CPU only, one event; none again once that process has exited."""
import os
import re
import time

from scenario import check, sys_list, sysctl_numa_balancing, wait_log


def held(pid):
    """(BPF links, perf events) among pid's open descriptors."""
    links = events = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            info = open(f"/proc/{pid}/fdinfo/{fd}").read()
        except OSError:
            continue   # closed meanwhile
        links += "link_type:" in info
        events += target == "anon_inode:[perf_event]"
    return links, events


def settle(env, want, timeout=30):
    """Polls held() until want(links, events) (ticks are 500 ms); returns the last count."""
    deadline = time.time() + timeout
    while True:
        now = held(env.daemon.pid)
        if want(*now) or time.time() >= deadline:
            return now
        time.sleep(0.25)


def run(env, res):
    sysctl_numa_balancing(0)
    cpu = sys_list("/sys/devices/system/node/node1/cpulist")[-1]   # the workload runs on node 1
    n_cpus = os.cpu_count()
    outside = env.cgroup("nb-quiet-off")                      # no opt-in
    env.start_workload(outside, 64, 0, 1)
    env.start_daemon(extra_conf="[select]\nmin_rss = 0\n[sample]\nsource = bpf\npmu = page-faults\n")
    wait_log(env, "Sampling chain: page faults")
    # Several ticks and walks with nothing opted in: nothing may appear at any of them.
    seen = set()
    t0 = time.time()
    while time.time() - t0 < 5:
        seen.add(held(env.daemon.pid))
        time.sleep(0.25)
    res["idle"] = sorted(seen)
    check(seen == {(0, 0)}, f"with nothing opted in the daemon held (links, perf events) {sorted(seen)}")

    cg = env.cgroup("nb-quiet", "balance", cpus=str(cpu))
    p, _, _ = env.start_workload(cg, 64, 1, 1)   # touches and runs on node 1: its cpuset allows no other
    links, events = settle(env, lambda l, e: l >= 1 and e >= 1)
    res["watching"] = [links, events]
    # The scheduler program's link, and (kernels 5.15+) one link per perf event.
    check(links >= 1, f"one opted-in process, but no BPF link: {links}")
    check(events == 1, f"a cgroup whose cpuset is CPU {cpu} of {n_cpus}: {events} perf events, expected 1")
    m = re.findall(r"cgroup=/nb-quiet: (\d+) page sampling events, on CPUs (\S+)", env.log())
    check(m and m[-1] == ("1", str(cpu)), f"the events are not said to be on CPU {cpu} only: {m}")
    # Stays so over ticks (nothing opened per tick or per scan).
    time.sleep(3)
    check(held(env.daemon.pid) == (links, events), f"the count changed: {held(env.daemon.pid)}")

    p.kill()
    p.wait()
    after = settle(env, lambda l, e: l == 0 and e == 0)
    res["after_exit"] = list(after)
    check(after == (0, 0), f"after the last opted-in process exited the daemon still held {after}")
    # The daemon closes the links and events first, then says so: in one CI run (6.12)
    # the count read 0 before the line had reached the log.
    wait_log(env, "Detached the samplers", 30)
    env.stop_daemon()
