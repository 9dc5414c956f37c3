#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Every metric the daemon can write is documented, and every metric the docs name is
one it writes.

    test-metrics-docs.py SOURCE_ROOT TEST-REPORT

What the daemon writes: the families of a real metrics file (test-report --metrics,
as test-metrics.py makes it, parsed with promparse.py), which must be exactly the
names of the C string literals of daemon/ and lib/ that start with numabalanced_ (so
that a family the test state does not reach is not missed, and a name the regex
misses is caught by the file). Where it is documented: the "## Metrics" section of
docs/ctl-json.md, which lists every family, says which are histograms, and says that
names ending in _total are counters and the rest gauges. Every other numabalanced_*
name in docs/, man/, README.md and contrib/README.md must be a written metric too.
Each checker is first shown failing on a fake name, so that none passes by finding
nothing.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
import promparse  # noqa: E402
from nbtest import check  # noqa: E402

# A metric name as the docs write it: lowercase after the prefix, so that
# numabalanced_VERSION_ARCH.deb (README.md) is not one.
DOC_NAME = re.compile(r'\bnumabalanced_[a-z][a-z0-9_]*\b')
# A C comment or string literal; comments are skipped, so a name in one is not taken.
C_TOKEN = re.compile(r'/\*.*?\*/|//[^\n]*|"((?:\\.|[^"\\\n])*)"', re.S)
HIST_SUFFIX = re.compile(r'_(bucket|sum|count)$')


def source_names(text, where):
    """The numabalanced_* names the C string literals of text start with. A literal
    that starts with the prefix but no whole name (built with %s) fails: the check
    could not see that name."""
    out = set()
    for m in C_TOKEN.finditer(text):
        lit = m.group(1)
        if lit is None or not lit.startswith('numabalanced_'):
            continue
        name = re.match(r'numabalanced_[a-z0-9_]*', lit).group(0)
        if name.endswith('_') or lit[len(name):len(name) + 1] not in ('', '{', ' ', '\\'):
            raise ValueError(f'{where}: a metric name not written whole in one literal: "{lit}"')
        out.add(name)
    return out


def metrics_section(doc):
    """The "## Metrics" section of docs/ctl-json.md."""
    m = re.search(r'^## Metrics\n(.*?)(?=^## |\Z)', doc, re.M | re.S)
    if not m:
        raise ValueError('docs/ctl-json.md has no "## Metrics" section')
    return m.group(1)


def known(name, written, histograms):
    """name is a written family, or a series of a written histogram."""
    return name in written or HIST_SUFFIX.sub('', name) in histograms


def undocumented(written, documented):
    return sorted(written - documented)


def stale(named, written, histograms):
    return sorted(n for n in named if not known(n, written, histograms))


def wrong_type(families, histograms_documented):
    """Families whose TYPE is not the one the docs' rule gives them: counter for
    *_total, histogram for those the docs call one, gauge for the rest."""
    out = []
    for name, fam in families.items():
        want = 'counter' if name.endswith('_total') else 'histogram' if name in histograms_documented else 'gauge'
        if fam['type'] != want:
            out.append(f'{name}: {fam["type"]}, the docs say {want}')
    return sorted(out)


def documented_histograms(section):
    """The names the section calls a histogram: `NAME` (a histogram ...)."""
    return set(re.findall(r'`(numabalanced_[a-z0-9_]+)` \(a histogram', section))


def self_checks():
    """Each checker fails on what it must find."""
    w, h = {'numabalanced_a_total', 'numabalanced_h_seconds'}, {'numabalanced_h_seconds'}
    check(undocumented(w | {'numabalanced_fake_total'}, w) == ['numabalanced_fake_total'],
          'an undocumented metric is not found')
    check(stale({'numabalanced_gone_total', 'numabalanced_h_seconds_bucket'}, w, h) == ['numabalanced_gone_total'],
          'a documented metric the daemon does not write is not found (or a histogram series is)')
    fams = {'numabalanced_x': {'type': 'counter'}, 'numabalanced_y_total': {'type': 'counter'},
            'numabalanced_h_seconds': {'type': 'gauge'}}
    check(len(wrong_type(fams, h)) == 2, f'wrong types not found: {wrong_type(fams, h)}')
    c = ('/* "numabalanced_in_comment" */ metric_head(f, "numabalanced_a_total", "counter", "Of numabalanced_no.");\n'
         'fputs("numabalanced_b{cgroup=\\"", f); fprintf(f, "numabalanced_c %d\\n", 1);')
    check(source_names(c, 'fake') == {'numabalanced_a_total', 'numabalanced_b', 'numabalanced_c'},
          f'names in C literals: {source_names(c, "fake")}')
    for bad in ('fprintf(f, "numabalanced_%s_total 1\\n", x);', 'fputs("numabalanced_" "x", f);'):
        try:
            source_names(bad, 'fake')
            nbtest.fail(f'a name built at run time was not refused: {bad}')
        except ValueError:
            check(True, 'a name built at run time refused')
    sec = metrics_section('## Metrics\n`numabalanced_a_total`, `numabalanced_h_seconds` (a histogram of x)\n## Next\n'
                          '`numabalanced_not_here`\n')
    check(set(DOC_NAME.findall(sec)) == w and documented_histograms(sec) == h, f'the docs section: {sec!r}')


def main():
    root, exe = sys.argv[1], sys.argv[2]
    self_checks()

    tmp = nbtest.tmpdir('test-metrics-docs-')
    path = os.path.join(tmp, 'numabalanced.prom')
    r = subprocess.run([exe, '--metrics', path], capture_output=True, text=True)
    nbtest.require(r.returncode == 0, f'test-report --metrics: {r.returncode} {r.stderr}')
    try:
        families = promparse.parse(open(path, encoding='utf-8').read())
    except ValueError as e:
        nbtest.require(False, f'the metrics file does not parse: {e}')
    in_file = set(families)

    in_source = set()
    for d in ('daemon', 'daemon/bpf', 'lib'):
        for f in sorted(os.listdir(os.path.join(root, d))):
            if f.endswith('.c'):
                try:
                    in_source |= source_names(open(os.path.join(root, d, f), encoding='utf-8').read(), f'{d}/{f}')
                except ValueError as e:
                    nbtest.fail(str(e))
    check(len(in_file) >= 40, f'too few families in the metrics file: {sorted(in_file)}')
    check(in_file <= in_source, f'families in the file not found in the C sources: {sorted(in_file - in_source)}')
    check(in_source <= in_file, f'names in the C sources that test-report --metrics does not write (make its state '
                                f'reach them, or they are not metrics): {sorted(in_source - in_file)}')
    written = in_file | in_source
    histograms = {n for n, fam in families.items() if fam['type'] == 'histogram'}

    section = metrics_section(open(os.path.join(root, 'docs', 'ctl-json.md'), encoding='utf-8').read())
    documented = set(DOC_NAME.findall(section))
    missing = undocumented(written, documented)
    check(not missing, f'metrics not documented in docs/ctl-json.md "## Metrics": {missing}')
    check(not stale(documented, written, histograms),
          f'docs/ctl-json.md "## Metrics" names metrics the daemon does not write: '
          f'{stale(documented, written, histograms)}')
    hist_doc = documented_histograms(section)
    check(hist_doc == histograms, f'histograms the docs call one {sorted(hist_doc)}, written {sorted(histograms)}')
    check('`_total` are counters' in section, 'the docs no longer say which metrics are counters')
    check(not wrong_type(families, hist_doc), f'types against the docs: {wrong_type(families, hist_doc)}')

    others = [os.path.join(root, 'README.md'), os.path.join(root, 'contrib', 'README.md')]
    for d in ('docs', 'man'):
        others += [os.path.join(root, d, f) for f in sorted(os.listdir(os.path.join(root, d)))
                   if f.endswith('.md') or re.search(r'\.[0-9]$', f)]
    for p in others:
        bad = stale(set(DOC_NAME.findall(open(p, encoding='utf-8').read())), written, histograms)
        check(not bad, f'{os.path.relpath(p, root)} names metrics the daemon does not write: {bad}')
    print(f'{len(written)} metric families written, {len(documented)} named in docs/ctl-json.md; '
          f'{len(others)} other pages checked')
    return nbtest.finish()


if __name__ == '__main__':
    sys.exit(main())
