#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The man pages render without a single warning.

    test-man.py PAGE...

Each page is rendered by groff with every warning on (groff -man -ww -z) and by man
itself (man --warnings -l -Tutf8), as an operator's `man` would; any output on
stderr is a failure (both exit 0 on warnings, so stderr is what counts). The
rendered text must also hold the page's NAME line. Skipped (77) without groff/man.
"""
import os
import shutil
import subprocess
import sys

SKIP = 77


def main():
    pages = sys.argv[1:]
    if not pages:
        print("usage: test-man.py PAGE...", file=sys.stderr)
        return 2
    groff, man = shutil.which("groff"), shutil.which("man")
    if not groff or not man:
        print("SKIP: groff or man not installed (Debian: groff-base, man-db)")
        return SKIP
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    env.pop("MANROFFOPT", None)
    failures = 0
    for page in pages:
        name = os.path.basename(page).rsplit(".", 1)[0]
        for cmd in ([groff, "-man", "-ww", "-z", "-Tutf8", page],
                    [man, "--warnings", "-l", "-Tutf8", page]):
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if r.returncode != 0 or r.stderr.strip():
                print(f"FAIL: {' '.join(cmd)} (exit {r.returncode}):\n{r.stderr}")
                failures += 1
            elif cmd[0] == man:
                text = subprocess.run(["col", "-b"], input=r.stdout, capture_output=True, text=True).stdout \
                    if shutil.which("col") else r.stdout
                if f"{name} -" not in text and f"{name} \u2010" not in text:
                    print(f"FAIL: {page}: no \"{name} - ...\" NAME line in the rendered page")
                    failures += 1
                else:
                    print(f"ok: {page} renders without warnings ({len(text.splitlines())} lines)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
