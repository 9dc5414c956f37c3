#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The man pages render without a single warning.

    test-man.py PAGE...

Each page is rendered by groff with every warning on (groff -man -ww -z) and by man
itself (man --warnings -l -Tutf8), as an operator's `man` would; any output on
stderr is a failure (both exit 0 on warnings, so stderr is what counts). The
rendered text must also hold the page's NAME line. Each page's .TH section is its
file's suffix, and a command every user may run (numabalancectl, installed in bindir)
is in section 1, the daemon in 8: `man numabalancectl` must find it where users look.
Skipped (77) without groff/man.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402


# The section each page belongs in: the command users run in 1, the daemon in 8.
SECTIONS = {"numabalancectl": "1", "numabalanced": "8", "numabalanced.conf": "5"}


def check_section(page):
    name, suffix = os.path.basename(page).rsplit(".", 1)
    th = next((line.split() for line in open(page) if line.startswith(".TH ")), [])
    check(len(th) > 2 and th[2] == suffix, f"{page}: .TH says section {th[2:3]}, the file name {suffix}")
    check(SECTIONS.get(name, suffix) == suffix, f"{page}: belongs in section {SECTIONS.get(name)}, not {suffix}")


def main():
    pages = sys.argv[1:]
    if not pages:
        print("usage: test-man.py PAGE...", file=sys.stderr)
        return 2
    for page in pages:
        check_section(page)
    groff, man = shutil.which("groff"), shutil.which("man")
    if not groff or not man:
        nbtest.skip("groff or man not installed (Debian: groff-base, man-db)")
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    env.pop("MANROFFOPT", None)
    for page in pages:
        name = os.path.basename(page).rsplit(".", 1)[0]
        for cmd in ([groff, "-man", "-ww", "-z", "-Tutf8", page],
                    [man, "--warnings", "-l", "-Tutf8", page]):
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if not check(r.returncode == 0 and not r.stderr.strip(),
                         f"{' '.join(cmd)} (exit {r.returncode}):\n{r.stderr}"):
                continue
            if cmd[0] == man:
                text = subprocess.run(["col", "-b"], input=r.stdout, capture_output=True, text=True).stdout \
                    if shutil.which("col") else r.stdout
                if check(f"{name} -" in text or f"{name} \u2010" in text,
                         f"{page}: no \"{name} - ...\" NAME line in the rendered page"):
                    print(f"ok: {page} renders without warnings ({len(text.splitlines())} lines)")
    nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
