#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The tree's layout holds what docs/ARCHITECTURE.md promises a newcomer.

    test-layout.py SOURCE_ROOT

1. Every module of the daemon (daemon/NAME.c, main.c included) has a unit test of its
   own: tests/unit/test-NAME.c or tests/unit/test-NAME.py. The BPF programs and their
   loaders (daemon/bpf/) are tested in the VM suite (tests/vm/test-bpf.py) and are not
   counted here.
2. Every file of daemon/, daemon/bpf/, lib/ and ctl/ (sources, headers and meson.build
   files aside; vmlinux is generated) is named in docs/ARCHITECTURE.md, by its path
   or its file name, so that the map covers the whole tree.
3. struct manager (daemon/manager-internal.h) is seen by daemon/manager.c and its test
   only: every other step takes what it uses.
4. Each guarded part of a process record (struct proc_rec, daemon/proc-records.h) has
   one writer (RECORD_WRITERS): an assignment to it (=, op=, ++, --, its address
   taken) anywhere else in daemon/ fails (lib/ and ctl/ cannot include a daemon
   header). The tests set them up freely.
Each check runs first on a scratch tree that breaks it, so that none can pass by
finding nothing.
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

SOURCE_DIRS = ['daemon', 'daemon/bpf', 'lib', 'ctl']
# A part of struct proc_rec -> the one file that writes it: the scan schedule (struct
# scan_schedule), what its moves did (struct proc_moves).
RECORD_WRITERS = {'sched': 'daemon/scan.c', 'moved': 'daemon/jobs.c'}
NOT_NAMED = {'meson.build', 'vmlinux'}


def modules_without_test(root):
    out = []
    for f in sorted(os.listdir(os.path.join(root, 'daemon'))):
        if not f.endswith('.c'):
            continue
        name = f[:-2]
        if not any(os.path.exists(os.path.join(root, 'tests', 'unit', 'test-' + name + ext)) for ext in ('.c', '.py')):
            out.append('daemon/' + f)
    return out


def files_not_in_architecture(root):
    text = open(os.path.join(root, 'docs', 'ARCHITECTURE.md'), encoding='utf-8').read()
    out = []
    for d in SOURCE_DIRS:
        full = os.path.join(root, d)
        for f in sorted(os.listdir(full)):
            if f in NOT_NAMED or os.path.isdir(os.path.join(full, f)):
                continue
            if not re.search(r'(?<![\w.-])' + re.escape(f) + r'(?![\w-])', text):
                out.append(d + '/' + f)
    return out


def manager_internal_users(root):
    out = []
    for d in SOURCE_DIRS + ['tests/unit', 'tests/vm', 'tests/fuzz']:
        full = os.path.join(root, d)
        if not os.path.isdir(full):
            continue
        for f in sorted(os.listdir(full)):
            if not f.endswith(('.c', '.h')):
                continue
            path = d + '/' + f
            if path in ('daemon/manager.c', 'daemon/manager-internal.h', 'tests/unit/test-manager.c'):
                continue
            if '"manager-internal.h"' in open(os.path.join(full, f), encoding='utf-8', errors='replace').read():
                out.append(path)
    return out


def code_only(text):
    """text with its comments and string literals blanked, lines kept."""
    def blank(m):
        return re.sub(r'[^\n]', ' ', m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)


def record_write_re(part):
    """A write to ->part or .part, or to anything inside it: an assignment, ++ or --
    on either side, or its address taken (a pointer that could write it)."""
    lvalue = r'(?:\.|->)\s*' + part + r'\b(?:\s*(?:\.|->)\s*\w+|\s*\[[^]\n]*\])*'
    return re.compile(r'(?<![&\w)\]])&(?![&=])\s*[\w.\[\]>-]*?' + lvalue + '|'
                      r'(?:\+\+|--)\s*[\w.\[\]>-]*?' + lvalue + '|' +
                      lvalue + r'\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)')


def foreign_record_writers(root):
    out = []
    for d in ('daemon', 'daemon/bpf'):    # lib/ and ctl/ cannot see a daemon header
        full = os.path.join(root, d)
        for f in sorted(os.listdir(full)):
            if not f.endswith(('.c', '.h')):
                continue
            path = d + '/' + f
            text = code_only(open(os.path.join(full, f), encoding='utf-8', errors='replace').read())
            for part, owner in sorted(RECORD_WRITERS.items()):
                if path == owner:
                    continue
                for n, line in enumerate(text.split('\n'), 1):
                    if record_write_re(part).search(line):
                        out.append('%s:%d (%s, %s\'s)' % (path, n, part, owner))
    return out


def scratch_tree():
    t = tempfile.mkdtemp(prefix='test-layout-')
    for d in SOURCE_DIRS + ['tests/unit', 'docs']:
        os.makedirs(os.path.join(t, d), exist_ok=True)
    for f in ('daemon/a.c', 'daemon/b.c', 'tests/unit/test-a.py', 'lib/x.h', 'daemon/bpf/meson.build'):
        open(os.path.join(t, f), 'w').close()
    with open(os.path.join(t, 'daemon/b.c'), 'w') as f:
        f.write('#include "manager-internal.h"\n')
    with open(os.path.join(t, 'daemon/a.c'), 'w') as f:
        f.write('/* p->sched.next_scan_ms = 0; */\n'
                'if (p->sched.next_scan_ms == now && q->moved.stop_ms >= 1) x = "p->moved.n_hist++";\n'
                'p->sched.next_scan_ms = now;\n'
                'p->moved.pages[c] += n;\n'
                '++q->moved.n_hist;\n'
                'h = &p->moved;\n'
                'pl->moves[k] = m; s.moved = 1;\n')
    with open(os.path.join(t, 'docs/ARCHITECTURE.md'), 'w') as f:
        f.write('a.c: the first; b.c: the second; not x.hh\n')
    return t


def main():
    root = sys.argv[1]
    t = scratch_tree()
    check(modules_without_test(t) == ['daemon/b.c'], 'the checker finds a module without a test')
    check(files_not_in_architecture(t) == ['lib/x.h'], 'the checker finds a file the map does not name')
    check(manager_internal_users(t) == ['daemon/b.c'], 'the checker finds a module that sees struct manager')
    found = foreign_record_writers(t)
    check(found == ['daemon/a.c:4 (moved, daemon/jobs.c\'s)', 'daemon/a.c:5 (moved, daemon/jobs.c\'s)',
                    'daemon/a.c:6 (moved, daemon/jobs.c\'s)', 'daemon/a.c:7 (moved, daemon/jobs.c\'s)',
                    'daemon/a.c:3 (sched, daemon/scan.c\'s)'],
          'the checker finds the writes of a record part outside its owner, and only those: ' + ', '.join(found))
    shutil.rmtree(t)

    missing = modules_without_test(root)
    check(not missing, 'every daemon module has its own unit test: missing for ' + ', '.join(missing))
    unnamed = files_not_in_architecture(root)
    check(not unnamed, 'docs/ARCHITECTURE.md names every file: it does not name ' + ', '.join(unnamed))
    users = manager_internal_users(root)
    check(not users, 'only manager.c and its test see struct manager: also ' + ', '.join(users))
    writers = foreign_record_writers(root)
    check(not writers, 'each part of a process record has one writer: also written at ' + ', '.join(writers))
    return nbtest.finish()


if __name__ == '__main__':
    sys.exit(main())
