#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The metrics file of a hand-built manager state (test-report --metrics), parsed with
# the strict parser in promparse.py: every family, HELP/TYPE, the escaping of a
# hostile cgroup name, control characters in one (the text \\xNN), cgroup names that
# are not valid UTF-8 (the file must still be, or node_exporter drops it whole), its
# mode, and the values; skipped_bytes without its zero series, the counters with
# theirs. Also: the parser itself rejects what it must. That every family is
# documented: test-metrics-docs.py.
# Usage: test-metrics.py TEST-REPORT
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
import promparse  # noqa: E402
from nbtest import check  # noqa: E402

exe = sys.argv[1]
tmp = nbtest.tmpdir('test-metrics-')
path = os.path.join(tmp, 'numabalanced.prom')
r = subprocess.run([exe, '--metrics', path], capture_output=True, text=True)
check(r.returncode == 0, f'test-report --metrics: {r.returncode} {r.stderr}')
raw = open(path, 'rb').read()
try:
    text = raw.decode('utf-8', errors='strict')
except UnicodeDecodeError as e:
    nbtest.require(False, f'the metrics file is not valid UTF-8: {e}')
check(os.listdir(tmp) == ['numabalanced.prom'], f'temporary files left: {os.listdir(tmp)}')
check(oct(os.stat(path).st_mode & 0o777) == '0o644', 'metrics file mode: %o' % (os.stat(path).st_mode & 0o777))
try:
    fam = promparse.parse(text)
except ValueError as e:
    nbtest.require(False, f'metrics do not parse: {e}\n{text}')

for name, typ in [('numabalanced_resident_bytes', 'gauge'), ('numabalanced_local_bytes', 'gauge'),
                  ('numabalanced_migration_bytes_total', 'counter'), ('numabalanced_pages_total', 'counter'),
                  ('numabalanced_cpu_seconds_total', 'counter'), ('numabalanced_last_tick_seconds', 'gauge'),
                  ('numabalanced_tick_seconds', 'histogram'), ('numabalanced_move_call_seconds', 'histogram'),
                  ('numabalanced_sampling_source_info', 'gauge'), ('numabalanced_processes', 'gauge'),
                  ('numabalanced_skipped_bytes', 'gauge'), ('numabalanced_ticks_total', 'counter'),
                  ('numabalanced_growth_scans_total', 'counter'),
                  ('numabalanced_react_scans_total', 'counter'),
                  ('numabalanced_quarantines_total', 'counter'),
                  ('numabalanced_reads_deferred_total', 'counter'),
                  ('numabalanced_build_info', 'gauge'), ('numabalanced_kernel_numa_balancing', 'gauge'),
                  ('numabalanced_config_last_reload_successful', 'gauge'),
                  ('numabalanced_sampled_scans_total', 'counter'),
                  ('numabalanced_sampling_chain_info', 'gauge'), ('numabalanced_page_samples_total', 'counter'),
                  ('numabalanced_page_samples_dropped_total', 'counter'),
                  ('numabalanced_promoted_bytes_total', 'counter'),
                  ('numabalanced_sampling_refused_total', 'counter'),
                  ('numabalanced_walk_cpu_seconds_total', 'counter'),
                  ('numabalanced_daemon_cpu_seconds_total', 'counter'),
                  ('numabalanced_startup_cpu_seconds', 'gauge'),
                  ('numabalanced_unattributed_cpu_seconds_total', 'counter'),
                  ('numabalanced_metrics_cgroups_hidden', 'gauge')]:
    check(name in fam and fam[name]['type'] == typ, f'{name} missing or not a {typ}')

hostile = '/user.slice/x"y\\z\nw'
g = promparse.get
check(g(fam, 'numabalanced_resident_bytes', cgroup='/a.slice', node='0') == 1000, 'locality node 0')
check(g(fam, 'numabalanced_resident_bytes', cgroup='/a.slice', node='1') == 3000 + 8192, 'locality node 1')
check(g(fam, 'numabalanced_resident_bytes', cgroup=hostile, node='0') == 4096, 'hostile cgroup label round trip')
check(g(fam, 'numabalanced_pages_total', cgroup='/a.slice', result='moved') == 100, 'moved')
check(g(fam, 'numabalanced_pages_total', cgroup='/a.slice', result='busy') == 3, 'busy')
check(g(fam, 'numabalanced_pages_total', cgroup='/a.slice', result='gone') == 2, 'gone')
check(g(fam, 'numabalanced_pages_total', cgroup='/a.slice', result='refused') == 1, 'refused')
check(g(fam, 'numabalanced_pages_total', cgroup='/gone.slice', result='moved') == 7, 'counters of an inactive cgroup kept')
# Bytes, the base unit: each result's pages times the base page size.
PS = os.sysconf('SC_PAGESIZE')
for r, n in (('moved', 100), ('busy', 3), ('gone', 2), ('refused', 1)):
    check(g(fam, 'numabalanced_migration_bytes_total', cgroup='/a.slice', result=r) == n * PS, f'{r} bytes')
check(g(fam, 'numabalanced_migration_bytes_total', cgroup='/gone.slice', result='moved') == 7 * PS,
      'bytes of an inactive cgroup kept')
check('Deprecated' in text.split('# HELP numabalanced_pages_total ', 1)[1].split('\n', 1)[0],
      'pages_total says it is deprecated')
check(abs(g(fam, 'numabalanced_cpu_seconds_total', cgroup='/a.slice', stage='read') - 1.5) < 1e-9, 'cpu read')
check(abs(g(fam, 'numabalanced_cpu_seconds_total', cgroup='/a.slice', stage='migrate') - 3e-6) < 1e-12, 'cpu migrate')
# All of the daemon's CPU time has an owner: the walk, the bookkeeping and the report
# of each cgroup, the walk of subtrees that did not opt in, the start, the rest.
for stage, v in (('walk', 400e-9), ('bookkeeping', 500e-9), ('report', 600e-9)):
    check(abs(g(fam, 'numabalanced_cpu_seconds_total', cgroup='/a.slice', stage=stage) - v) < 1e-12, f'cpu {stage}')
check(abs(g(fam, 'numabalanced_walk_cpu_seconds_total', subtree='/user.slice') - 7e-6) < 1e-12,
      'walk of a subtree not opted in')
check(abs(g(fam, 'numabalanced_startup_cpu_seconds') - 0.002) < 1e-12, 'startup cpu')
check(abs(g(fam, 'numabalanced_unattributed_cpu_seconds_total') - 0.005) < 1e-12, 'unattributed cpu')
check(g(fam, 'numabalanced_daemon_cpu_seconds_total') > 0, 'daemon cpu')
check(abs(g(fam, 'numabalanced_last_tick_seconds') - 0.001234567) < 1e-12, 'tick duration')
# The families renamed in 0.2 are written under their old names too, for one release:
# the same series, HELP saying "Deprecated" (issue 46).
for old, new, relabel in [('numabalanced_locality_bytes', 'numabalanced_resident_bytes', None),
                          ('numabalanced_moved_bytes_total', 'numabalanced_migration_bytes_total', None),
                          ('numabalanced_tick_duration_seconds', 'numabalanced_last_tick_seconds', None),
                          ('numabalanced_threads_restored_total', 'numabalanced_threads_given_back_total',
                           ('why', 'reason')),
                          ('numabalanced_damon_reads_skipped_total', 'numabalanced_damon_reads_dropped_total', None)]:
    check(old in fam and new in fam, f'{old} and {new} not both written')
    if old not in fam or new not in fam:
        continue
    check(fam[old]['help'].startswith('Deprecated'), f'{old}: HELP does not say deprecated: {fam[old]["help"]}')
    if old == 'numabalanced_damon_reads_skipped_total':
        renamed = {tuple(sorted((k, v.replace('_', '-')) for k, v in key)): val
                   for key, val in fam[old]['samples'].items()}
    else:
        renamed = {tuple(sorted((relabel[1] if relabel and k == relabel[0] else k, v) for k, v in key)): val
                   for key, val in fam[old]['samples'].items()}
    want = {tuple(sorted(key)): val for key, val in fam[new]['samples'].items()}
    check(renamed == want, f'{old} is not {new}: {renamed} {want}')
# Histograms (test-report: ticks of 3 ms, 7 ms, 40 s; move calls of 1, 1 ms and 200 us),
# well formed (promparse.histogram: cumulative, +Inf == _count).
try:
    ticks, tsum, tcount = promparse.histogram(fam, 'numabalanced_tick_seconds')
    calls, csum, ccount = promparse.histogram(fam, 'numabalanced_move_call_seconds')
except (ValueError, KeyError) as e:
    nbtest.require(False, f'a histogram is not well formed: {e}')
tb = dict(ticks)
check(tcount == 3 and abs(tsum - 40.010) < 1e-9, f'tick histogram count {tcount} sum {tsum}')
check(tb[0.005] == 1 and tb[0.01] == 2 and tb[30] == 2 and tb[float('inf')] == 3, f'tick buckets {ticks}')
check(min(tb) <= 0.005 and max(b for b in tb if b != float('inf')) >= 30, 'tick buckets from 5 ms to 30 s')
cb = dict(calls)
check(ccount == 3 and abs(csum - 0.0022) < 1e-12, f'move-call histogram count {ccount} sum {csum}')
check(cb[0.0001] == 0 and cb[0.00025] == 1 and cb[0.0005] == 1 and cb[0.001] == 3, f'move-call buckets {calls}')
check(len(fam['numabalanced_build_info']['samples']) == 1 and
      list(fam['numabalanced_build_info']['samples'].values()) == [1] and
      dict(next(iter(fam['numabalanced_build_info']['samples']))).get('version'), 'build_info with its version')
check(g(fam, 'numabalanced_kernel_numa_balancing') == 0, 'kernel_numa_balancing')
check(g(fam, 'numabalanced_page_size_bytes') == os.sysconf('SC_PAGESIZE'), 'page size')
check(g(fam, 'numabalanced_sampling_source_info', source='proc') == 1, 'sampling source')
check(g(fam, 'numabalanced_sampling_chain_info', chain='proc') == 1, 'sampling chain')
check(g(fam, 'numabalanced_processes', cgroup='/a.slice') == 2, 'processes')
# The mode of each selected cgroup, for rules that keep to balance mode.
check(fam['numabalanced_cgroup_info']['type'] == 'gauge', 'cgroup_info: a gauge')
check(g(fam, 'numabalanced_cgroup_info', cgroup='/a.slice', mode='balance') == 1, 'cgroup_info of /a.slice: balance')
check(g(fam, 'numabalanced_cgroup_info', cgroup=hostile, mode='advise') == 1, 'cgroup_info of an advise cgroup')
check(not any(dict(s).get('cgroup') == '/gone.slice' for s in fam['numabalanced_cgroup_info']['samples']),
      'an inactive cgroup has no cgroup_info')
check(g(fam, 'numabalanced_skipped_bytes', cgroup='/a.slice', reason='shared') == 8192, 'skipped shared')
# skipped_bytes (a gauge) has only the reasons with bytes: /a.slice its one, the other
# selected cgroups none, where 22 zero series a cgroup were written before.
skipped = fam['numabalanced_skipped_bytes']['samples']
check(list(skipped) == [(('cgroup', '/a.slice'), ('reason', 'shared'))],
      f'skipped_bytes series other than /a.slice shared: {sorted(skipped.items())}')
# A counter keeps its zero series (rate() and increase() would miss the first
# increment of one that appeared non-zero): the hostile cgroup's busy bytes are 0.
check(g(fam, 'numabalanced_migration_bytes_total', cgroup=hostile, result='busy') == 0, 'zero counter series kept')
# Paths that were not valid UTF-8: each bad byte is U+FFFD; of the two that become the
# same label, neither is shown: the path that was U+FFFD already (valid) is kept.
check(g(fam, 'numabalanced_migration_bytes_total', cgroup='/user.slice/odd\ufffd', result='moved') == 33 * PS,
      'the valid path is kept over the ones made the same')
check(g(fam, 'numabalanced_migration_bytes_total', cgroup='/user.slice/\ufffd\ufffdetc', result='moved') == 44 * PS,
      'an overlong sequence: two U+FFFD')
# Control characters in a path (C1 CSI as UTF-8, ESC, a tab): the label shows them as
# the text \xNN, as the log does; none reaches a reader of the file.
check(g(fam, 'numabalanced_migration_bytes_total', cgroup='/user.slice/c1\\xc2\\x9b2J\\x1b[0m\\x09',
        result='moved') == 55 * PS, 'controls in a label: the text \\xNN')
check(not any(0x7f <= ord(ch) <= 0x9f or (ord(ch) < 0x20 and ch != '\n') for ch in text),
      'no control character in the file')
check(g(fam, 'numabalanced_metrics_cgroups_hidden') == 2, 'hidden cgroups counted')
check(fam['numabalanced_metrics_cgroups_hidden']['type'] == 'gauge', 'hidden cgroups: a gauge')
check(('numabalanced_processes', (('cgroup', '/gone.slice'),)) not in
      [(k, s) for k in fam for s in fam[k]['samples']], 'an inactive cgroup has no processes gauge')

# The parser is strict.
bad = [
    'x 1\n',                                                  # no HELP/TYPE
    '# HELP x h\n# TYPE x gauge\nx{a="\\t"} 1\n',             # bad escape
    '# HELP x h\n# TYPE x gauge\nx{a="b"} 1\nx{a="b"} 2\n',   # duplicate series
    '# HELP x h\n# TYPE x gauge\nx 1',                        # no final newline
    '# HELP x h\n# TYPE x counter\nx 1\n',                    # counter not *_total
    '# HELP x_total h\n# TYPE x_total counter\nx_total -1\n',
    '# HELP x h\n# TYPE x gauge\nx one\n',
    '# HELP x h\n# TYPE x gauge\n# HELP y h\n# TYPE y gauge\nx 1\ny 1\nx{a="1"} 1\n',  # not contiguous
    '# HELP x h\n# TYPE x gauge\nx{a="b} 1\n',
    '# HELP x h\n# TYPE x gauge\nx{0a="b"} 1\n',
    '# HELP x h\n# TYPE x gaug\nx 1\n',
    '# HELP x h\n# TYPE x histogram\nx_bucket 1\n',             # a bucket without le
    '# HELP x h\n# TYPE x histogram\nx_sum{le="1"} 1\n',         # le off a bucket
    '# HELP x h\n# TYPE x gauge\nx_bucket{le="1"} 1\n',          # not a histogram
]
for b in bad:
    try:
        promparse.parse(b)
        nbtest.fail(f'the parser accepted {b!r}')
    except ValueError:
        check(True, 'the parser refused it')

# The histogram check refuses what is not well formed.
HIST = '# HELP h x\n# TYPE h histogram\n'
for b in ['h_bucket{le="1"} 2\nh_bucket{le="2"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 2\n',  # not cumulative
          'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n',                  # +Inf != count
          'h_bucket{le="1"} 1\nh_sum 1\nh_count 1\n',                                          # no +Inf
          'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\nh_count 1\n']:                           # no _sum
    try:
        promparse.histogram(promparse.parse(HIST + b), 'h')
        nbtest.fail(f'the histogram check accepted {b!r}')
    except ValueError:
        check(True, 'the histogram check refused it')
promparse.histogram(promparse.parse(HIST + 'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'), 'h')

nbtest.finish()
