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
5. Every exported function (not static, defined in a .c of daemon/, daemon/bpf/, lib/
   or ctl/; the BPF programs, *.bpf.c, aside) carries its file's name: it is the
   file's base name with '-' as '_' (proc-lines.c: proc_lines, proc_lines_*), so that
   grepping a prefix finds the file. main() is the one exception: a program's entry
   point has no other name.
6. No function of those .c files is longer than 80 lines, counted from the line of
   the body's opening brace to the line of its closing brace, both included.
7. lib/clock.h is the one clock reader: no other file of daemon/, daemon/bpf/, lib/
   or ctl/ calls clock_gettime(2) itself, so that each clock's unit and source is said
   once.
8. No include circle among daemon/'s modules: a module (NAME.c with NAME.h;
   manager-internal.h is the manager's) that includes another's header does not
   have its own header included back, however long the way round.
9. daemon/manager.c is the tick: at most 1,000 lines, and struct manager at most 35
   fields, so that what grows there finds a home of its own.
Rules 5 and 6 read what breaks them today from an allowlist (tests/unit/layout-names.allow,
tests/unit/layout-long.allow, one "PATH FUNCTION" a line) that may only shrink: the
test fails on a name not listed, and on a listed one that now keeps the rule or no
longer exists.
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


# Rule 5's exceptions, each with its reason.
NAME_EXCEPTIONS = {
    'main': "a program's entry point",
}
MAX_FUNCTION_LINES = 80


def blank_c(text):
    """text with comments, string and character literals and preprocessor lines
    blanked (newlines kept), so that a brace or a name in them counts for nothing."""
    pat = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
                     r'|^[ \t]*#(?:\\\n|[^\n])*', re.S | re.M)

    def blank(m):
        t = m.group(0)
        keep = t[0] + t[-1] if t[0] in '"\'' else ''
        body = re.sub(r'[^\n]', ' ', t[1:-1] if keep else t)
        return keep[:1] + body + keep[1:]
    return pat.sub(blank, text)


def function_name(head):
    """The name a top-level declaration head ending in a parameter list defines,
    or None (an initializer, a struct)."""
    h = head.rstrip()
    while h.endswith(')'):
        depth = 0
        for j in range(len(h) - 1, -1, -1):
            depth += {')': 1, '(': -1}.get(h[j], 0)
            if depth == 0:
                break
        m = re.search(r'(\w+)\s*$', h[:j])
        if not m or '=' in h[:j]:
            return None
        if m.group(1) != '__attribute__':
            return m.group(1)
        h = h[:m.start()].rstrip()
    return None


def c_functions(text):
    """The functions a C file defines at top level: dicts of name, static, first
    (the line of the body's opening brace) and last (its closing brace's)."""
    s = blank_c(text)
    out = []
    start = i = 0
    while i < len(s):
        if s[i] == ';':
            start = i + 1
        if s[i] != '{':
            i += 1
            continue
        depth, j = 0, i
        for j in range(i, len(s)):
            depth += {'{': 1, '}': -1}.get(s[j], 0)
            if depth == 0:
                break
        name = function_name(s[start:i])
        if name:
            out.append({'name': name, 'static': re.search(r'\bstatic\b', s[start:i]) is not None,
                        'first': s.count('\n', 0, i) + 1, 'last': s.count('\n', 0, j) + 1})
        i = start = j + 1
    return out


def c_sources(root):
    """(path, text) of each .c file rules 5 and 6 read."""
    for d in ('daemon', 'daemon/bpf', 'lib', 'ctl'):
        full = os.path.join(root, d)
        for f in sorted(os.listdir(full)) if os.path.isdir(full) else []:
            if f.endswith('.c') and not f.endswith('.bpf.c'):
                yield d + '/' + f, open(os.path.join(full, f), encoding='utf-8', errors='replace').read()


def names_off_file(root):
    """'PATH FUNCTION' for each exported function not carrying its file's name."""
    out = []
    for path, text in c_sources(root):
        base = os.path.basename(path)[:-2].replace('-', '_')
        for fn in c_functions(text):
            name = fn['name']
            if fn['static'] or name == base or name.startswith(base + '_') or name in NAME_EXCEPTIONS:
                continue
            out.append(path + ' ' + name)
    return sorted(set(out))


def long_functions(root):
    """'PATH FUNCTION' for each function longer than MAX_FUNCTION_LINES lines."""
    out = []
    for path, text in c_sources(root):
        for fn in c_functions(text):
            if fn['last'] - fn['first'] + 1 > MAX_FUNCTION_LINES:
                out.append(path + ' ' + fn['name'])
    return sorted(set(out))


def read_allowlist(path):
    if not os.path.exists(path):
        return []
    lines = (ln.strip() for ln in open(path, encoding='utf-8'))
    return [' '.join(ln.split()) for ln in lines if ln and not ln.startswith('#')]


def against_allowlist(found, allowed):
    """(what breaks the rule and is not listed, what is listed and no longer breaks it)."""
    return sorted(set(found) - set(allowed)), sorted(set(allowed) - set(found))


def check_allowlisted(what, found, allow_file):
    new, stale = against_allowlist(found, read_allowlist(allow_file))
    name = os.path.basename(allow_file)
    check(not new, what + ': ' + ', '.join(new))
    check(not stale, name + ' may only shrink: take off ' + ', '.join(stale) +
          ' (it keeps the rule now, or is gone)')


def scratch_sources():
    """A tree whose .c files break rules 4 and 5 in every way the checkers must see."""
    t = tempfile.mkdtemp(prefix='test-layout-')
    for d in ('daemon/bpf', 'lib', 'ctl'):
        os.makedirs(os.path.join(t, d), exist_ok=True)
    body = lambda n: '{\n' + '        x++;\n' * (n - 2) + '}\n'
    files = {
        'daemon/a-b.c': ('/* { int c_in_comment(void) { */\n'
                         'static const char *s = "{ int c_in_string(void) {";\n'
                         '#define NOT_A_BODY(x) { x }\n'
                         'struct st { int x; };\n'
                         'static const struct st v[] = { { 1 } };\n'
                         'int a_b(void) ' + body(3) +
                         'int a_b_ok(void) ' + body(80) +
                         'static int helper(void) ' + body(81) +
                         'int a_bad(int x,\n          int y) ' + body(3) +
                         'void __attribute__((noinline)) c_d(void) ' + body(3) +
                         'int main(void) ' + body(3)),
        'daemon/bpf/p.bpf.c': 'int q(void) ' + body(90),
        'daemon/bpf/p-loader.c': 'int p_new(void) ' + body(3),
        'lib/x.c': 'int x(void) ' + body(3) + 'int xy(void) ' + body(3),
        'ctl/t.c': 'const char *top_name(void) ' + body(3),
    }
    for f, text in files.items():
        with open(os.path.join(t, f), 'w') as out:
            out.write(text)
    return t


def check_name_and_length_rules(root):
    t = scratch_sources()
    check(names_off_file(t) == ['ctl/t.c top_name', 'daemon/a-b.c a_bad', 'daemon/a-b.c c_d',
                                'daemon/bpf/p-loader.c p_new', 'lib/x.c xy'],
          'the checker finds the exported names that do not carry their file\'s name: %s' % names_off_file(t))
    check(long_functions(t) == ['daemon/a-b.c helper'],
          'the checker finds the function of 81 lines, not the one of 80: %s' % long_functions(t))
    check(against_allowlist(['a f', 'b g'], ['b g', 'c h']) == (['a f'], ['c h']),
          'the allowlist check finds a name not listed and a listed one that keeps the rule')
    shutil.rmtree(t)

    check_allowlisted('every exported function carries its file\'s name: not',
                      names_off_file(root), os.path.join(root, 'tests/unit/layout-names.allow'))
    check_allowlisted('no function is longer than %d lines: longer are' % MAX_FUNCTION_LINES,
                      long_functions(root), os.path.join(root, 'tests/unit/layout-long.allow'))


def clock_readers(root):
    """'PATH:LINE' of each clock_gettime call outside lib/clock.h."""
    out = []
    for d in SOURCE_DIRS:
        full = os.path.join(root, d)
        for f in sorted(os.listdir(full)) if os.path.isdir(full) else []:
            path = d + '/' + f
            if not f.endswith(('.c', '.h')) or path == 'lib/clock.h':
                continue
            text = code_only(open(os.path.join(full, f), encoding='utf-8', errors='replace').read())
            for n, line in enumerate(text.split('\n'), 1):
                if re.search(r'\bclock_gettime\s*\(', line):
                    out.append('%s:%d' % (path, n))
    return out


MANAGER_MAX_LINES = 1000
MANAGER_MAX_FIELDS = 35


def module_of(f):
    m = f.rsplit('.', 1)[0]
    return 'manager' if m == 'manager-internal' else m


def include_circles(root):
    """The circles of daemon/'s module include graph, each as a sorted list."""
    full = os.path.join(root, 'daemon')
    headers = {f for f in os.listdir(full) if f.endswith('.h')}
    edges = {}
    for f in sorted(os.listdir(full)):
        if not f.endswith(('.c', '.h')):
            continue
        text = code_only_keep_includes(open(os.path.join(full, f), encoding='utf-8', errors='replace').read())
        for inc in re.findall(r'^\s*#\s*include\s+"([^"/]+)"', text, re.M):
            if inc in headers and module_of(inc) != module_of(f):
                edges.setdefault(module_of(f), set()).add(module_of(inc))
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def code_only_keep_includes(text):
    """text without its comments (an #include in a comment is not one)."""
    return re.sub(r'/\*.*?\*/|//[^\n]*', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)


def manager_size(root):
    """(lines of daemon/manager.c, fields of struct manager)."""
    lines = open(os.path.join(root, 'daemon/manager.c'), encoding='utf-8').read().count('\n')
    text = code_only(open(os.path.join(root, 'daemon/manager-internal.h'), encoding='utf-8').read())
    m = re.search(r'^struct manager \{(.*?)^\};', text, re.S | re.M)
    body = m.group(1) if m else ''
    # Nested struct and union bodies are one field each: their braces' insides go.
    while re.search(r'\{[^{}]*\}', body):
        body = re.sub(r'\{[^{}]*\}', '', body)
    fields = 0
    for decl in body.split(';'):
        decl = re.sub(r'\([^()]*\)\s*\([^()]*\)', 'F', decl.strip())  # function pointers
        if decl:
            fields += decl.count(',') + 1
    return lines, fields


def scratch_modules():
    """A daemon/ with two include circles and a manager over its bounds."""
    t = tempfile.mkdtemp(prefix='test-layout-')
    os.makedirs(os.path.join(t, 'daemon'))
    with open(os.path.join(t, 'daemon/a.h'), 'w') as f:
        f.write('/* #include "b.h" in a comment is none */\n#include "c.h"\n')
    with open(os.path.join(t, 'daemon/c.h'), 'w') as f:
        f.write('#include "a.h"\n')
    with open(os.path.join(t, 'daemon/b.h'), 'w') as f:
        f.write('#include "manager-internal.h"\n')
    with open(os.path.join(t, 'daemon/manager-internal.h'), 'w') as f:
        f.write('struct manager {\n int a, b; /* c; */\n struct { int x; int y; } in;\n'
                ' void (*hook)(void *u, int v);\n};\n')
    with open(os.path.join(t, 'daemon/manager.c'), 'w') as f:
        f.write('#include "manager-internal.h"\n#include "b.h"\n' + 'x\n' * 1000)
    return t


def scratch_tree():
    t = tempfile.mkdtemp(prefix='test-layout-')
    for d in SOURCE_DIRS + ['tests/unit', 'docs']:
        os.makedirs(os.path.join(t, d), exist_ok=True)
    for f in ('daemon/a.c', 'daemon/b.c', 'tests/unit/test-a.py', 'lib/x.h', 'daemon/bpf/meson.build'):
        open(os.path.join(t, f), 'w').close()
    with open(os.path.join(t, 'daemon/b.c'), 'w') as f:
        f.write('#include "manager-internal.h"\n/* not clock_gettime(2) here */\n'
                'int f(void) { return clock_gettime (CLOCK_MONOTONIC, &ts); }\n')
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
    check(clock_readers(t) == ['daemon/b.c:3'], 'the checker finds a clock read outside lib/clock.h: %s' % clock_readers(t))
    shutil.rmtree(t)
    t = scratch_modules()
    check(include_circles(t) == [['a', 'c'], ['b', 'manager']],
          'the checker finds the include circles, and only those: %s' % include_circles(t))
    check(manager_size(t) == (1002, 4), 'the checker counts manager.c\'s lines and fields: %s' % (manager_size(t),))
    shutil.rmtree(t)

    missing = modules_without_test(root)
    check(not missing, 'every daemon module has its own unit test: missing for ' + ', '.join(missing))
    unnamed = files_not_in_architecture(root)
    check(not unnamed, 'docs/ARCHITECTURE.md names every file: it does not name ' + ', '.join(unnamed))
    users = manager_internal_users(root)
    check(not users, 'only manager.c and its test see struct manager: also ' + ', '.join(users))
    writers = foreign_record_writers(root)
    check(not writers, 'each part of a process record has one writer: also written at ' + ', '.join(writers))
    check_name_and_length_rules(root)
    circles = include_circles(root)
    check(not circles, 'no include circle among daemon/\'s modules: ' + '; '.join(' <-> '.join(c) for c in circles))
    lines, fields = manager_size(root)
    check(lines <= MANAGER_MAX_LINES and fields <= MANAGER_MAX_FIELDS,
          'daemon/manager.c is the tick: %d lines (at most %d), struct manager %d fields (at most %d)' %
          (lines, MANAGER_MAX_LINES, fields, MANAGER_MAX_FIELDS))
    clocks = clock_readers(root)
    check(not clocks, 'lib/clock.h is the one clock reader: clock_gettime also called at ' + ', '.join(clocks))
    return nbtest.finish()


if __name__ == '__main__':
    sys.exit(main())
