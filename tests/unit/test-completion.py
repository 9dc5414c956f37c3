#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bash completion (contrib/bash-completion/): what a user's Tab offers, with the
bash-completion framework loaded as an interactive shell has it. Skipped (77) without
bash-completion (Debian: bash-completion; scripts/setup installs it).

    test-completion.py SOURCE_ROOT
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

FRAMEWORK = "/usr/share/bash-completion/bash_completion"


def complete(root, words, cword, env=None):
    """COMPREPLY for the command line words, the cursor on word cword."""
    prog = words[0]
    script = os.path.join(root, "contrib", "bash-completion", prog)
    line = " ".join(words)
    quoted = " ".join("'%s'" % w for w in words)
    sh = (f"source {FRAMEWORK}; source {script}; COMP_WORDS=({quoted}); COMP_CWORD={cword}; "
          f"COMP_LINE='{line}'; COMP_POINT={len(line)}; _{prog}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = subprocess.run(["bash", "-c", sh], capture_output=True, text=True, timeout=30,
                       env={**os.environ, **(env or {})})
    check(r.returncode == 0, f"{line!r}: bash failed: {r.stderr}")
    return [x for x in r.stdout.split("\n") if x]


def check_cgroups(root):
    """list and explain take cgroup paths from the tree's root, and pids; explain only
    one of them."""
    me = str(os.getpid())
    with tempfile.TemporaryDirectory() as tree:
        for d in ("system.slice/db.service", "system.slice/web.service", "user.slice", "sys odd"):
            os.makedirs(os.path.join(tree, d))
        open(os.path.join(tree, "system.slice", "cgroup.procs"), "w").close()
        env = {"NUMABALANCECTL_CGROUP_ROOT": tree}
        got = complete(root, ["numabalancectl", "list", "/"], 2, env)
        check(set(got) == {"/system.slice", "/user.slice", "/sys odd"}, f"numabalancectl list /<Tab>: {got}")
        got = complete(root, ["numabalancectl", "explain", "/system.slice/"], 2, env)
        check(set(got) == {"/system.slice/db.service", "/system.slice/web.service"},
              f"numabalancectl explain /system.slice/<Tab>: {got} (no files, only cgroups)")
        got = complete(root, ["numabalancectl", "list", "/system.slice/db.service", "--json", ""], 4, env)
        check(me in got, f"numabalancectl list CGROUP <Tab>: no pids after a cgroup ({len(got)} offered)")
        got = complete(root, ["numabalancectl", "list", me, "/u"], 3, env)
        check(got == ["/user.slice"], f"numabalancectl list PID /u<Tab>: {got}")
        got = complete(root, ["numabalancectl", "explain", "/user.slice", ""], 3, env)
        check(got == [], f"numabalancectl explain CGROUP <Tab>: explain takes one, yet {len(got)} offered")
        got = complete(root, ["numabalancectl", "--delay", "2", "explain", ""], 4, env)
        check(me in got, f"numabalancectl --delay 2 explain <Tab>: an option's value taken for an argument")


def main():
    root = sys.argv[1]
    if not os.path.exists(FRAMEWORK):
        nbtest.skip("bash-completion not installed")
    got = complete(root, ["numabalancectl", ""], 1)
    check(set(got) == {"show", "status", "list", "explain", "top"}, f"numabalancectl <Tab>: {got}")
    got = complete(root, ["numabalancectl", "--sort", ""], 2)
    check(set(got) == {"moved", "misplaced", "local", "refused", "pid"}, f"numabalancectl --sort <Tab>: {got}")
    got = complete(root, ["numabalancectl", "top", "--sort", "mi"], 3)
    check(got == ["misplaced"], f"numabalancectl top --sort mi<Tab>: {got}")
    got = complete(root, ["numabalancectl", "ex"], 1)
    check(got == ["explain"], f"numabalancectl ex<Tab>: {got}")
    got = complete(root, ["numabalancectl", "--js"], 1)
    check(got == ["--json"], f"numabalancectl --js<Tab>: {got}")
    got = complete(root, ["numabalancectl", "explain", ""], 2)
    check(str(os.getpid()) in got, f"numabalancectl explain <Tab> does not offer this process's pid ({len(got)} offered)")
    check_cgroups(root)
    got = complete(root, ["numabalancectl", "status", ""], 2)
    check(got == [], f"numabalancectl status <Tab> offers {got}")
    got = complete(root, ["numabalanced", "--log-level", ""], 2)
    check(set(got) == {"err", "warning", "notice", "info", "debug"}, f"numabalanced --log-level <Tab>: {got}")
    got = complete(root, ["numabalanced", "--ch"], 1)
    check(got == ["--check-config", "--check-config-of"], f"numabalanced --ch<Tab>: {got}")
    got = complete(root, ["numabalanced", "--re"], 1)
    check(got == ["--restore-affinity"], f"numabalanced --re<Tab>: {got}")
    return nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
