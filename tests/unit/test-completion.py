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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

FRAMEWORK = "/usr/share/bash-completion/bash_completion"


def complete(root, words, cword):
    """COMPREPLY for the command line words, the cursor on word cword."""
    prog = words[0]
    script = os.path.join(root, "contrib", "bash-completion", prog)
    line = " ".join(words)
    quoted = " ".join("'%s'" % w for w in words)
    sh = (f"source {FRAMEWORK}; source {script}; COMP_WORDS=({quoted}); COMP_CWORD={cword}; "
          f"COMP_LINE='{line}'; COMP_POINT={len(line)}; _{prog}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = subprocess.run(["bash", "-c", sh], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"{line!r}: bash failed: {r.stderr}")
    return [x for x in r.stdout.split("\n") if x]


def main():
    root = sys.argv[1]
    if not os.path.exists(FRAMEWORK):
        nbtest.skip("bash-completion not installed")
    got = complete(root, ["numabalancectl", ""], 1)
    check(set(got) == {"show", "status", "list", "explain", "top"}, f"numabalancectl <Tab>: {got}")
    got = complete(root, ["numabalancectl", "--sort", ""], 2)
    check(set(got) == {"moved", "local", "refused", "pid"}, f"numabalancectl --sort <Tab>: {got}")
    got = complete(root, ["numabalancectl", "ex"], 1)
    check(got == ["explain"], f"numabalancectl ex<Tab>: {got}")
    got = complete(root, ["numabalancectl", "--js"], 1)
    check(got == ["--json"], f"numabalancectl --js<Tab>: {got}")
    got = complete(root, ["numabalancectl", "explain", ""], 2)
    check(str(os.getpid()) in got, f"numabalancectl explain <Tab> does not offer this process's pid ({len(got)} offered)")
    got = complete(root, ["numabalancectl", "status", ""], 2)
    check(got == [], f"numabalancectl status <Tab> offers {got}")
    got = complete(root, ["numabalanced", "--log-level", ""], 2)
    check(set(got) == {"err", "warning", "notice", "info", "debug"}, f"numabalanced --log-level <Tab>: {got}")
    got = complete(root, ["numabalanced", "--ch"], 1)
    check(got == ["--check-config", "--check-config-of"], f"numabalanced --ch<Tab>: {got}")
    return nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
