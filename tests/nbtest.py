# SPDX-License-Identifier: GPL-2.0-or-later
"""The shared harness of numabalanced's Python tests (tests/unit, tests/vm).

    import nbtest
    from nbtest import check
    check(rc == 0, 'exit %d' % rc)       # prints FAIL and what differed when false
    nbtest.fail('no READY=1')            # a failure found by the test's own logic
    nbtest.require(d is not None, 'no reply')   # a check the rest cannot go on without
    d = nbtest.tmpdir()                  # removed at exit
    nbtest.skip('no BPF here')           # exit 77: meson's "skipped"
    nbtest.finish()                      # "N passed, N failed"; exit 1 if any failed

Exit status: 0 when every check passed, 1 when any failed (also when the test
skips after a failure: the failure is what counts), 77 for a skip.

Importing it from a test: the tests put their parent directory (tests/) on sys.path:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
"""
import atexit
import shutil
import sys
import tempfile

SKIP = 77       # meson (and automake) read this exit status as "skipped"

passed = 0
failed = 0


def check(cond, what):
    """Counts one check; a failed one prints FAIL and `what` (say what differed)."""
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print('FAIL: ' + what, flush=True)
    return bool(cond)


def fail(what):
    """One failed check: prints FAIL and `what`."""
    check(False, what)


def require(cond, what):
    """check(), and when it fails, finish() at once (exit 1): for a check that the
    rest of the test depends on. Enclosing finally: blocks still run."""
    if not check(cond, what):
        finish()
    return True


def failures():
    return failed


def skip(why):
    """Ends the test as skipped (exit 77), saying why; exit 1 instead when a check
    has already failed."""
    print('SKIP: ' + why, flush=True)
    if failed:
        finish()
    sys.exit(SKIP)


def tmpdir(prefix='nbtest-'):
    """A new temporary directory, removed when the test exits."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def finish():
    """The closing line, then exit: 1 if any check failed, else 0."""
    print('%d passed, %d failed' % (passed, failed), flush=True)
    sys.exit(1 if failed else 0)
