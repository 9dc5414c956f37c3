#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""numabalancectl show on a stored process (tests/data/proc/root/263) as a machine
with 64 KiB base pages would show it: sysconf(_SC_PAGESIZE) is 65536
(pagesize-preload.c) and numa_maps counts in 64 KiB pages. The page counts of the
whole process and of each node are its bytes over the base page size, as
docs/show-json.md says, not over 4096; the text output names the unit it counts in.

Usage: test-show.py NUMABALANCECTL PRELOAD_SO TEST_DATA_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

ctl, preload, data = sys.argv[1:4]
PAGE = 65536

# Pid 263 with a numa_maps of 64 KiB pages: 8 on node 0 (heap), 24 on node 1 (anon),
# and one 512 MiB huge page on node 1 (arm64's PMD size with 64 KiB pages).
root = nbtest.tmpdir('test-show-')
shutil.copytree(os.path.join(data, 'proc', 'root', '263'), os.path.join(root, '263'))
with open(os.path.join(root, '263', 'numa_maps'), 'w') as f:
    f.write('aaaac0000000 default heap anon=8 dirty=8 active=0 N0=8 kernelpagesize_kB=64\n'
            'ffff80000000 default anon=24 dirty=24 active=0 N1=24 kernelpagesize_kB=64\n'
            'ffffa0000000 default file=/anon_hugepage\\040(deleted) huge anon=1 dirty=1 N1=1 '
            'kernelpagesize_kB=524288\n')
env = dict(os.environ, LD_PRELOAD=preload, NUMABALANCED_TEST_PAGE_SIZE=str(PAGE),
           # An ASan build: the preloaded library comes before the sanitizer's runtime.
           ASAN_OPTIONS=os.environ.get('ASAN_OPTIONS', '') + ':verify_asan_link_order=0')


def show(*args, sys_tree='2n2c'):
    return subprocess.run([ctl, '--proc-root', root, '--sys-root', os.path.join(data, 'sys', sys_tree), *args],
                          capture_output=True, text=True, env=env, timeout=60)


r = show('--json', 'show', '263')
check(r.returncode == 0, f'show --json: exit {r.returncode}: {r.stderr}')
got = json.loads(r.stdout) if r.returncode == 0 else {}
huge = 512 << 20
want_bytes = {0: 8 * PAGE, 1: 24 * PAGE + huge}
check(got.get('total_bytes') == sum(want_bytes.values()), f'total_bytes: {got.get("total_bytes")}')
check(got.get('total_pages') == sum(want_bytes.values()) // PAGE,
      f'total_pages is total_bytes over 64 KiB ({sum(want_bytes.values()) // PAGE}): {got.get("total_pages")}')
for n in got.get('nodes', []):
    check(n['pages'] == want_bytes.get(n['node'], 0) // PAGE and n['bytes'] == want_bytes.get(n['node'], 0),
          f'node {n["node"]}: {want_bytes.get(n["node"], 0) // PAGE} pages of 64 KiB: {n}')
check(len(got.get('nodes', [])) == 2, f'two nodes listed: {got.get("nodes")}')
vmas = {v['start']: v for v in got.get('vmas', [])}
check(vmas.get('0xffff80000000', {}).get('pages') == 24 and vmas['0xffff80000000'].get('bytes') == 24 * PAGE,
      f'the anon VMA: 24 pages, {24 * PAGE} bytes: {vmas.get("0xffff80000000")}')

r = show('show', '263')
check(r.returncode == 0, f'show: exit {r.returncode}: {r.stderr}')
check(re.search(r'^\s*node\s+pages\(64K\)\s', r.stdout, re.M) is not None,
      f'the node table counts pages(64K):\n{r.stdout}')
check(re.search(r'^\s*0\s+8\s+512\.0 KiB\s', r.stdout, re.M) is not None, f'node 0: 8 pages, 512 KiB:\n{r.stdout}')
check(re.search(rf'^\s*1\s+{(24 * PAGE + huge) // PAGE}\s', r.stdout, re.M) is not None,
      f'node 1: {(24 * PAGE + huge) // PAGE} pages:\n{r.stdout}')

# Memory tiers: on 2n2c no tier and nothing slow; on 2n1m-tiered (node 2 in the
# kernel's memory_tier8, DRAM in memory_tier4) node 2 is slow, in JSON and in text.
check(all(n.get('tier', 0) is None and n.get('slow') is False for n in got.get('nodes', [])),
      f'2n2c: no tier, nothing slow: {got.get("nodes")}')
check(re.search(r'\stier$', r.stdout, re.M) is not None, f'the node table has a tier column:\n{r.stdout}')
r = show('--json', 'show', '263', sys_tree='2n1m-tiered')
check(r.returncode == 0, f'show --json on 2n1m-tiered: exit {r.returncode}: {r.stderr}')
tiers = {n['node']: (n.get('tier'), n.get('slow')) for n in (json.loads(r.stdout) if r.returncode == 0 else {}).get('nodes', [])}
check(tiers == {0: (4, False), 1: (4, False), 2: (8, True)}, f'2n1m-tiered: node 2 in tier 8, slow: {tiers}')
r = show('show', '263', sys_tree='2n1m-tiered')
check(re.search(r'^\s*2\s+0\s.*\s8 slow$', r.stdout, re.M) is not None, f'node 2: tier 8 slow:\n{r.stdout}')
r = show('show', '263', sys_tree='2n1m')
check(re.search(r'^\s*2\s+0\s.*\sslow$', r.stdout, re.M) is not None and
      re.search(r'^\s*0\s+8\s.*\s-$', r.stdout, re.M) is not None,
      f'2n1m without kernel tiers: node 2 slow by the default rule, node 0 not:\n{r.stdout}')

# A file name with non-ASCII, a right-to-left override (U+202E) and C1 CSI: under a
# UTF-8 locale, é passes and the other two are escaped; under the C locale (an 8-bit
# terminal would take the 0xa9 of é as text and 0x9b of U+00DB as CSI), every byte
# of 0x80 or more is escaped. --json is JSON-escaped whatever the locale.
odd = nbtest.tmpdir('test-show-odd-')
shutil.copytree(os.path.join(data, 'proc', 'root', '263'), os.path.join(odd, '263'))
with open(os.path.join(odd, '263', 'numa_maps'), 'wb') as f:
    f.write(b'aaaac0000000 default file=/tmp/caf\xc3\xa9\xe2\x80\xaegpj.exe\xc2\x9b2J anon=8 dirty=8 active=0 '
            b'N0=8 kernelpagesize_kB=64\n')


def show_odd(locale, *args):
    e = dict(env, LC_ALL=locale)
    return subprocess.run([ctl, '--proc-root', odd, '--sys-root', os.path.join(data, 'sys', '2n2c'), *args],
                          capture_output=True, env=e, timeout=60)


r = show_odd('C.UTF-8', 'show', '263')
check(r.returncode == 0 and b'/tmp/caf\xc3\xa9\\xe2\\x80\\xaegpj.exe\\xc2\\x9b2J' in r.stdout,
      f'UTF-8 locale: e-acute passes, U+202E and U+009B escaped: {r.stdout!r}')
r = show_odd('C', 'show', '263')
check(r.returncode == 0 and b'/tmp/caf\\xc3\\xa9\\xe2\\x80\\xaegpj.exe\\xc2\\x9b2J' in r.stdout and
      not any(b >= 0x80 for b in r.stdout), f'C locale: every byte of 0x80 or more escaped: {r.stdout!r}')
r = show_odd('C', '--json', 'show', '263')
check(r.returncode == 0 and '/tmp/caf\u00e9\u202egpj.exe\u009b2J' in
      [v.get('path') for v in json.loads(r.stdout).get('vmas', [])],
      f'--json: the name as it is, JSON-escaped: {r.stdout[:400]!r}')

nbtest.finish()
