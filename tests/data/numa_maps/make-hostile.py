#!/usr/bin/env python3
# Writes the hand-made hostile-*.txt fixtures (run from this directory). The expected
# values are in tests/unit/test-numa_maps.c; change both together.
import os

def w(name, data):
    with open(name, 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode())

def pol(prefix, nodes_from, step, end_cut):
    """A policy of exactly 63 characters: prefix, then ids from nodes_from by step,
    then end_cut appended, cut at 63 like mpol_to_str's 64-byte buffer."""
    s, n = prefix, nodes_from
    while len(s) < 80:
        s += ('' if s.endswith(':') else ',') + str(n)
        n += step
    return s

def cut(s):
    assert len(s) >= 63, s
    return s[:63]

lines = []
# 1: a cut in the middle of a number: the last element is dropped.
p1 = cut(pol('bind:', 0, 4, ''))
assert p1.endswith(',8'), p1   # the real list goes on ",80,84"
lines.append('7f0000001000 ' + p1 + ' anon=1 dirty=1 N0=1 kernelpagesize_kB=4')
# 2: a cut right after '-': the range start is kept.
p2 = cut('interleave:1-2,5-6,9-10,13-14,17-18,21-22,25-26,29-30,33-34,37-38')
assert p2.endswith('-'), p2
lines.append('7f0000002000 ' + p2 + ' anon=2 N1=2 kernelpagesize_kB=4')
# 3: a cut inside a range end ("..,40-4"): the start is kept.
p3 = cut('prefer (many)=static:0,2,4,6,8,10,12,14,16,18,20,22,24,26,28-450')
assert p3.endswith('28-45'), p3
lines.append('7f0000003000 ' + p3 + ' N0=3 kernelpagesize_kB=4')
# 4: weighted interleave, cut after a comma.
p4 = cut('weighted interleave=relative:1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31')
assert p4.endswith(','), p4
lines.append('7f0000004000 ' + p4 + ' N3=4 kernelpagesize_kB=4')
# 5: 62 characters: not cut.
p5 = 'bind:0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,400'
p5 = p5[:62]
assert len(p5) == 62 and p5.endswith('40')
lines.append('7f0000005000 ' + p5 + ' N2=5 kernelpagesize_kB=4')
# 6: 64 characters: no kernel writes that: a bad line.
lines.append('7f0000006000 ' + pol('bind:', 0, 3, '')[:64] + ' N0=6 kernelpagesize_kB=4')
# 7: 63 characters, no pages: the line ends after the policy.
lines.append('7f0000007000 ' + p1)
w('hostile-truncated.txt', '\n'.join(lines) + '\n')
print('\n'.join(repr(l[:90]) for l in lines))

w('hostile-weighted.txt',
  '7f1000000000 weighted interleave:0-3 anon=8 dirty=8 N0=2 N1=2 N2=2 N3=2 kernelpagesize_kB=4\n'
  '7f1000010000 weighted interleave=static:0,2 file=/dev/shm/w\\040x N0=1 N2=3 kernelpagesize_kB=4\n'
  '7f1000020000 weighted interleave=relative|balancing:1-2\n'
  '7f1000030000 weighted  interleave:0-3 N0=1 kernelpagesize_kB=4\n'   # two spaces: bad
  '7f1000040000 weighted interleave:0-3\n'
  '7f1000050000 prefer (many)=balancing:2-3 N3=7 kernelpagesize_kB=4\n'
  '7f1000060000 prefer (many) N0=1\n')                                # no list, bad? no: valid mode without list

w('hostile-unknown-tokens.txt',
  '7f2000000000 default anon=1 dirty=1 memtier=3 N0=1 kernelpagesize_kB=4 future_flag\n'
  '7f2000001000 bind:0 file=/x zswap=12 N0=2 kernelpagesize_kB=4 mthp_kB=64\n'
  '7f2000002000 default Nfoo=1 N0=3 kernelpagesize_kB=4\n'
  '7f2000003000 default anon=1 ~junk N0=1 kernelpagesize_kB=4\n'       # junk token: bad
  '7f2000004000 default anon=1 N0=4 kernelpagesize_kB=4 x=\n'
  '7f2000005000 local stack huge anon=5 N1=5 kernelpagesize_kB=2048\n')

bad = [
    '7f3000000000 default anon=1 N0=1 kernelpagesize_kB=4',           # 1 good
    '7f3000001000 default N0=abc kernelpagesize_kB=4',                 # 2 bad
    '7f3000002000 default N99999=1 kernelpagesize_kB=4',               # 3 bad: node id
    '7f3000003000 default N0=1 N0=2 kernelpagesize_kB=4',              # 4 bad: duplicate
    '7f3000004000 default N-1=5 kernelpagesize_kB=4',                  # 5 bad
    '7f3000005000 default N0= kernelpagesize_kB=4',                    # 6 bad
    '7f3000006000 default N=5 kernelpagesize_kB=4',                    # 7 bad
    '7f3000007000 default N0=18446744073709551616 kernelpagesize_kB=4',  # 8 bad: overflow
    '7f3000008000 default N0=18446744073709551615 N1=1 kernelpagesize_kB=4',  # 9 bad: sum
    'zzzz default N0=1',                                               # 10 bad: start
    '0x7f3000 default N0=1',                                           # 11 bad: start
    '17f30000000000000 default N0=1',                                  # 12 bad: 17 hex digits
    '7f300000a000 default anon=abc N0=1',                              # 13 bad
    '7f300000b000 default N0=1 kernelpagesize_kB=0',                   # 14 bad
    '7f300000c000 default  N0=1',                                      # 15 bad: two spaces
    '7f300000d000 default N0=1 ',                                      # 16 bad: trailing space
    '7f300000e000 default file=/a file=/b N0=1',                       # 17 bad
    '7f300000f000 default heap stack N0=1',                            # 18 bad
    '7f3000010000 local:0 N0=1',                                       # 19 bad
    '7f3000011000 bind=bogus:1 N0=1',                                  # 20 bad
    '7f3000012000 bind: N0=1',                                         # 21 bad
    '7f3000013000 unknown',                                            # 22 bad
    '7f3000014000 bind=static|relative:1',                             # 23 bad
    '7f3000015000 N0=1',                                               # 24 bad: no policy
    '7f3000016000',                                                    # 25 bad
    '',                                                                # 26 bad: empty line inside
    '7f3000017000 default anon=1 anon=2 N0=1',                         # 27 bad: duplicate
    '7f3000018000 default huge huge',                                  # 28 bad
    '7f3000019000 bind:3-1',                                           # 29 bad
    '7f300001a000 default N0=1\tkernelpagesize_kB=4',                  # 30 bad: tab
    '7f300001b000 default anon=-1 N0=1',                               # 31 bad
    '7f300001c000 default N0=+1',                                      # 32 bad
    '7f300001d000 default N1024=1',                                    # 33 bad
    '7f300001e000 bind:0 N0=7 kernelpagesize_kB=4',                    # 34 good
    '7f300001f000 default N0=1\r',                                     # 35 bad: CR
    '7f3000020000 prefer:1 N1=9 kernelpagesize_kB=4',                  # 36 good
]
w('hostile-bad-tokens.txt', '\n'.join(bad) + '\n')

w('hostile-huge-numbers.txt',
  'ffffffffffffffff bind:1023 anon=18446744073709551615 N1023=18446744073709551615 kernelpagesize_kB=18446744073709551615\n'
  '0 default N0=9223372036854775808 N1=9223372036854775807 kernelpagesize_kB=1\n'
  '00000000000000001 default N0=1\n'      # 17 digits even if the value fits: bad
  'FFFF0000 interleave:0-1023 N0=0 kernelpagesize_kB=4\n')

w('hostile-no-newline.txt',
  '7f4000000000 default anon=1 N0=1 kernelpagesize_kB=4\n'
  '7f4000001000 bind:1 anon=2 N1=2 kernelpagesize_kB=4')

junk = bytes(range(256))
w('hostile-binary.txt',
  b'7f5000000000 default N0=1 kernelpagesize_kB=4\n' +
  junk.replace(b'\n', b'') + b'\n' +
  b'7f5000001000 default file=/\xff\xfe\x80 N1=2 kernelpagesize_kB=4\n' +
  b'7f5000002000 default N0=1\x00 kernelpagesize_kB=4\n' +
  b'\x00\x00\x00\n' +
  b'7f5000003000 bind:0\x00 N0=3\n' +
  b'7f5000004000 interleave:0-1 N0=2 N1=2 kernelpagesize_kB=4\n\n\n\n')

longpath = '/' + 'a' * 4000 + '\\040' + 'b' * 90
longjunk = 'x' * 200000
many = ' '.join('N%d=1' % i for i in range(1024))
w('hostile-long-lines.txt',
  '7f6000000000 default file=' + longpath + ' mapped=1 N0=1 kernelpagesize_kB=4\n' +
  '7f6000001000 ' + longjunk + '\n' +
  '7f6000002000 interleave:0-1023 anon=1024 ' + many + ' kernelpagesize_kB=4\n' +
  '7f6000003000 default ' + ' '.join(['future=1'] * 5000) + ' N0=5 kernelpagesize_kB=4\n')

w('hostile-empty.txt', '')

w('hostile-path-traps.txt',
  '7f7000000000 default file=/tmp/x\\040N0\\075999 mapped=4 N1=4 kernelpagesize_kB=4\n'
  '7f7000001000 default file=N0=999 mapped=1 N0=1 kernelpagesize_kB=4\n'
  '7f7000002000 default file=/a\\b\\\\c huge N0=2 kernelpagesize_kB=2048\n'
  '7f7000003000 default file= N0=3 kernelpagesize_kB=4\n'
  '7f7000004000 default file=/x\\040(deleted) heap N0=1\n')           # file and heap: bad
