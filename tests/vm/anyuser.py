# SPDX-License-Identifier: GPL-2.0-or-later
"""What a test runs as another user runs from a copy in the guest, never from the checkout.

    from anyuser import copy_for_any_user      # (scenario.py re-exports it)
    sleepers = copy_for_any_user(os.path.join(env.build, "tests", "vm", "sleepers"))
    subprocess.run(["setpriv", "--reuid=1000", ..., sleepers, ...])

    dump=$(python3 tests/vm/anyuser.py "$build/tests/vm/select-dump")    # from sh

The checkout, and the build directory in it, may sit below a directory other users
cannot enter: a clone in /root, or in a directory made by mktemp -d (mode 0700). A
program that uid 1000 or nobody runs (or that such a process runs or reads in turn)
is therefore copied first into a fresh directory under the guest's /run (a tmpfs,
mode 0755 on both kinds of guest), the directory mode 0755 and the file 0755, and
run from there. vmrun closes the checkout to every user but root in the guest (mode
0700, docs/TESTING.md), so that a test which reaches into it as another user fails in
every run, not only in a clone under /root.

The copies stay until the guest powers off (its /run goes with it). Within one
process each file is copied once.
"""
import os
import shutil
import sys
import tempfile

BASE = "/run"
_copies = {}


def copy_for_any_user(path):
    """A copy of the file at path that every user of the guest can read and execute:
    BASE/nb-anyuser-XXXX/NAME, the directory and the file mode 0755. Fails (OSError)
    when a directory above the copy does not let every user through."""
    src = os.path.realpath(path)
    if src in _copies:
        return _copies[src]
    d = tempfile.mkdtemp(prefix="nb-anyuser-", dir=BASE)
    os.chmod(d, 0o755)
    dst = os.path.join(d, os.path.basename(src))
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o755)
    # Every directory from / down to the copy must be searchable by every user.
    p = d
    while True:
        if not os.stat(p).st_mode & 0o001:
            raise OSError(f"{p} is not searchable by other users: {dst} would not be reachable")
        if p == "/":
            break
        p = os.path.dirname(p)
    _copies[src] = dst
    return dst


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: anyuser.py FILE   (prints the path of a copy every user can run)")
    print(copy_for_any_user(sys.argv[1]))
