#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Every Markdown file that a doc or source file names is in the repository.

    test-doc-links.py SOURCE_ROOT

A reader has only what the repository holds: a comment or a doc that sends them to a
file the repository does not have is a dead end. Every text file under SOURCE_ROOT is
read (not .git, .venv, build directories, nor the stored inputs under tests/data and
tests/fuzz/corpus other than their Markdown files), and every name ending in ".md" is
looked up:
  - a name with a slash (docs/TESTING.md, ../../README.md) from the repository's top
    or from the naming file's directory;
  - a bare name beside the naming file, at the top, or in docs/.
A name inside a URL (after "://") is not looked up; an absolute path never counts.
Each name that is not found is listed as FILE:LINE: NAME. A scratch tree with one good
and one dead reference checks the checker first, so that it cannot pass by finding
nothing.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

EXT = '.' + 'md'    # spelled apart, so that this file names no Markdown file itself
NAME = re.compile(r'(?<![\w./-])([\w./-]*[\w-]' + re.escape(EXT) + r')(?![\w-])')
SKIP_DIRS = {'.git', '.venv', '__pycache__', 'node_modules'}
DATA_DIRS = (os.path.join('tests', 'data'), os.path.join('tests', 'fuzz', 'corpus'))
MAX_SIZE = 4 << 20


def is_build_dir(path, root):
    """A meson build directory anywhere, or a top-level build* one (.gitignore's
    /build*/: scripts/build-deb's build-deb holds the unpacked package, whose
    md5sums name the installed docs)."""
    top = os.path.dirname(os.path.abspath(path)) == os.path.abspath(root)
    return os.path.isdir(os.path.join(path, 'meson-private')) or (top and os.path.basename(path).startswith('build'))


def text_files(root):
    """(relative path, text) of every file worth reading under root."""
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs
                         if x not in SKIP_DIRS and not is_build_dir(os.path.join(d, x), root))
        rel_dir = os.path.relpath(d, root)
        in_data = any(rel_dir == p or rel_dir.startswith(p + os.sep) for p in DATA_DIRS)
        for f in sorted(files):
            if in_data and not f.endswith(EXT):
                continue
            path = os.path.join(d, f)
            try:
                if os.path.islink(path) or os.path.getsize(path) > MAX_SIZE:
                    continue
                with open(path, 'rb') as fh:
                    data = fh.read()
            except OSError:
                continue
            if b'\0' in data:
                continue
            yield os.path.relpath(path, root), data.decode('utf-8', errors='replace')


def exists(root, naming_file, name):
    if name.startswith('/'):
        return False
    here = os.path.dirname(os.path.join(root, naming_file))
    if '/' in name:
        places = [os.path.join(root, name), os.path.join(here, name)]
    else:
        places = [os.path.join(here, name), os.path.join(root, name),
                  os.path.join(root, 'docs', name)]
    return any(os.path.isfile(os.path.normpath(p)) for p in places)


def dead_names(root):
    """[(file, line, name)] for each name not found, and the number of files read."""
    out, n_files = [], 0
    for rel, text in text_files(root):
        n_files += 1
        # man pages write a hyphen as "\-".
        text = text.replace('\\-', '-')
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in NAME.finditer(line):
                if line[:m.start()].endswith(':'):
                    continue            # a URL: https://host/x.md
                if not exists(root, rel, m.group(1)):
                    out.append((rel, lineno, m.group(1)))
    return out, n_files


def self_test():
    """A scratch tree: one reference that resolves, one bare and one pathed that do
    not, one in a URL; the checker must report exactly the two dead ones."""
    t = nbtest.tmpdir()
    os.makedirs(os.path.join(t, 'docs'))
    os.makedirs(os.path.join(t, 'src'))
    with open(os.path.join(t, 'docs', 'GOOD' + EXT), 'w') as f:
        f.write('# good\n')
    with open(os.path.join(t, 'src', 'a.c'), 'w') as f:
        f.write('/* see docs/GOOD%s and GOOD%s */\n' % (EXT, EXT))
        f.write('/* see GONE%s, https://example.org/X%s */\n' % (EXT, EXT))
        f.write('/* and docs/GONE%s */\n' % EXT)
    dead, n = dead_names(t)
    check(n == 2, 'self-test: read %d files in the scratch tree, expected 2' % n)
    want = [('src/a.c', 2, 'GONE' + EXT), ('src/a.c', 3, 'docs/GONE' + EXT)]
    check(dead == want, 'self-test: found %r, expected %r' % (dead, want))


def main():
    if len(sys.argv) != 2:
        print('usage: test-doc-links.py SOURCE_ROOT', file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    self_test()
    dead, n_files = dead_names(root)
    check(os.path.isfile(os.path.join(root, 'docs', 'ARCHITECTURE' + EXT)),
          '%s is not the source tree (no docs/ARCHITECTURE%s)' % (root, EXT))
    check(n_files >= 50, 'only %d files read under %s' % (n_files, root))
    for f, line, name in dead:
        print('%s:%d: %s: no such file in the repository' % (f, line, name))
    check(not dead, '%d name(s) of Markdown files that the repository does not hold (listed above)'
          % len(dead))
    nbtest.finish()


if __name__ == '__main__':
    sys.exit(main())
