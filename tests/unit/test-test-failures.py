#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/test-failures: what the last lines of a failed run say.

    test-test-failures.py SOURCE_ROOT

A CI page may show only the end of a run, where scripts/test prints each failed test
with the lines that say why. For a failed engine scenario those are its error and the
gist of the kernel evidence it kept: a soft lockup with the frames of the stuck task's
own stack (not the watchdog interrupt's, not the unreliable "?" ones), and the threads
found running or in uninterruptible sleep; for a thread running in the kernel (no
stack of its own), where its CPU was from the SysRq backtrace, and each node's free
memory. A meson log with one failed and one passed
test is made in a scratch directory and the script's output checked line by line.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

KERNEL_LOG = """[  285.224550] watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [rebind:572]
[  285.224600] Modules linked in: virtio_net
[  285.224601] CPU: 3 UID: 0 PID: 572 Comm: rebind Not tainted 6.12.95
[  285.224603] Call Trace:
[  285.224604]  <IRQ>
[  285.224605]  ? watchdog_timer_fn+0x21b/0x2a0
[  285.224606]  __hrtimer_run_queues+0x10f/0x2a0
[  285.224607]  </IRQ>
[  285.224608]  <TASK>
[  285.224609]  ? smp_call_function_many_cond+0x11b/0x4f0
[  285.224610]  on_each_cpu_cond_mask+0x24/0x40
[  285.224611]  flush_tlb_mm_range+0x1a0/0x1c0
[  285.224612]  </TASK>
[  285.300000] virtio_net virtio0: an unrelated line"""
STACKS = """572/572 rebind R cpu 3 +0u +100s ticks/s 0: 
572/573 rebind D cpu 2 +0u +0s ticks/s migration_entry_wait_on_locked: [<0>] migration_entry_wait_on_locked+0x1/0x2
361/361 numabalanced S cpu 0 +3u +2s ticks/s do_epoll_wait: [<0>] do_epoll_wait+0x694/0x7d0
memory: node0 free 900 MiB
running tasks' kernel stacks (SysRq l):
[  123.800001] NMI backtrace for cpu 3
[  123.800002] CPU: 3 PID: 572 Comm: rebind Not tainted 6.1.0-56-amd64 #1  Debian 6.1.158-1
[  123.800003] RIP: 0010:clear_page_erms+0x7/0x10
[  123.800004] Code: 48 89 f8 c3 cc
[  123.800005] Call Trace:
[  123.800006]  <NMI>
[  123.800007]  nmi_cpu_backtrace+0x10a/0x130
[  123.800008]  </NMI>
[  123.800009]  <TASK>
[  123.800010]  get_page_from_freelist+0x2f4/0x1210
[  123.800011]  __alloc_pages+0x1a4/0x330
[  123.800012]  </TASK>
[  123.800013] Sending NMI from CPU 3 to CPUs 0-2:
[  123.800014] NMI backtrace for cpu 0 skipped: idling at default_idle+0xb/0x10"""


def testlog(path):
    scenario = {"scenario": "stale-mbind", "result": "fail", "error": "rebind did not write X.bound",
                "kernel_log": KERNEL_LOG, "kernel_stacks": STACKS}
    out = "engine: stale-mbind: starting\nFAIL: rebind did not write X.bound\n" + json.dumps(scenario) + "\n"
    tests = [{"name": "numabalanced:vm / kernel-6.12", "result": "FAIL", "duration": 475.2, "stdout": out},
             {"name": "numabalanced:vm / kernel-5.10", "result": "OK", "duration": 300, "stdout": "FAIL: not me"}]
    os.makedirs(os.path.join(path, "meson-logs"))
    with open(os.path.join(path, "meson-logs", "testlog.json"), "w") as f:
        for t in tests:
            f.write(json.dumps(t) + "\n")


def main(root):
    with tempfile.TemporaryDirectory() as d:
        testlog(d)
        r = subprocess.run([sys.executable, os.path.join(root, "scripts", "test-failures"), d],
                           capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"exit status 0: {r.returncode} {r.stderr}")
    lines = [l.strip() for l in r.stdout.splitlines() if l.strip()]
    check(lines[:2] == ["==== failed tests", "numabalanced:vm / kernel-6.12: FAIL after 475 s"],
          f"the failed test, and only it, with its time: {lines[:2]}")
    check("scenario stale-mbind: rebind did not write X.bound" in lines, f"the scenario's error: {lines}")
    lockup = [l for l in lines if l.startswith("kernel: ")]
    check(lockup == ["kernel: watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [rebind:572] @ "
                     "on_each_cpu_cond_mask+0x24/0x40 < flush_tlb_mm_range+0x1a0/0x1c0"],
          f"the lockup with the task's own frames: {lockup}")
    threads = [l for l in lines if l.startswith("thread: ")]
    check([t.split()[1] for t in threads] == ["572/572", "572/573"],
          f"the running and the uninterruptible threads, not the sleeping one: {threads}")
    where = [l for l in lines if l.startswith("cpu ")]
    check(where == ["cpu 3: rebind: clear_page_erms+0x7/0x10 < get_page_from_freelist+0x2f4/0x1210 < "
                    "__alloc_pages+0x1a4/0x330"],
          f"where the running thread (no stack of its own) was, from the SysRq backtrace of its CPU: {where}")
    check(lines.index(where[0]) == lines.index(threads[0]) + 1, f"right below that thread: {lines}")
    check("memory: node0 free 900 MiB" in lines, f"each node's free memory: {lines}")
    check(not any("not me" in l for l in lines), "a passed test's output is not shown")
    nbtest.finish()


if __name__ == "__main__":
    main(sys.argv[1])
