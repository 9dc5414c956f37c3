# SPDX-License-Identifier: GPL-2.0-or-later
"""A strict parser of the Prometheus text exposition format (version 0.0.4), for
the tests of numabalanced's metrics file. Stricter than Prometheus itself where the
format leaves room: every family has HELP and TYPE before its samples, a family's
samples are contiguous, no series appears twice, label values use only the three
escapes the format defines, counters are named *_total and never negative.

    families = parse(text)   # {name: {"help": str, "type": str, "samples": {labels: value}}}
    labels is a tuple of (name, value) pairs sorted by name.
Raises ValueError("line N: ...") on the first problem."""
import math
import re

NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*')
LABEL = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*')
FLOAT = re.compile(r'[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$')
TYPES = {'counter', 'gauge', 'histogram', 'summary', 'untyped'}


def _value(s, where):
    if s in ('NaN', '+Inf', '-Inf', 'Inf'):
        return float(s.replace('Inf', 'inf').replace('NaN', 'nan'))
    if not FLOAT.match(s):
        raise ValueError(f'{where}: bad value {s!r}')
    return float(s)


def _labels(s, i, where):
    """Parses {a="x",b="y"} starting at s[i] == '{'; returns (labels, index after '}')."""
    out = {}
    i += 1
    while True:
        if i < len(s) and s[i] == '}':
            return out, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise ValueError(f'{where}: bad label name at column {i}')
        name = m.group(0)
        i = m.end()
        if s[i:i + 2] != '="':
            raise ValueError(f'{where}: expected =" after label {name}')
        i += 2
        val = []
        while True:
            if i >= len(s):
                raise ValueError(f'{where}: unterminated label value')
            c = s[i]
            if c == '"':
                i += 1
                break
            if c == '\\':
                nxt = s[i + 1:i + 2]
                if nxt == '\\':
                    val.append('\\')
                elif nxt == '"':
                    val.append('"')
                elif nxt == 'n':
                    val.append('\n')
                else:
                    raise ValueError(f'{where}: bad escape \\{nxt} in label {name}')
                i += 2
                continue
            if c == '\n':
                raise ValueError(f'{where}: raw newline in label value')
            val.append(c)
            i += 1
        if name in out:
            raise ValueError(f'{where}: label {name} twice')
        out[name] = ''.join(val)
        if i < len(s) and s[i] == ',':
            i += 1
            if i < len(s) and s[i] == '}':
                return out, i + 1  # a trailing comma is allowed by the format
            continue
        if i < len(s) and s[i] == '}':
            return out, i + 1
        raise ValueError(f'{where}: expected , or }} after label {name}')


def parse(text):
    if text and not text.endswith('\n'):
        raise ValueError('the file does not end with a newline')
    families = {}
    done = set()       # families whose samples are over
    current = None
    for n, line in enumerate(text.split('\n')[:-1], 1):
        where = f'line {n}'
        if line == '':
            continue
        if line.startswith('#'):
            parts = line.split(' ', 3)
            if len(parts) >= 3 and parts[1] in ('HELP', 'TYPE'):
                name = parts[2]
                if not NAME.fullmatch(name):
                    raise ValueError(f'{where}: bad metric name {name!r}')
                fam = families.setdefault(name, {'help': None, 'type': None, 'samples': {}})
                if fam['samples']:
                    raise ValueError(f'{where}: {parts[1]} for {name} after its samples')
                rest = parts[3] if len(parts) > 3 else ''
                if parts[1] == 'HELP':
                    if fam['help'] is not None:
                        raise ValueError(f'{where}: second HELP for {name}')
                    if re.search(r'\\[^\\n]', rest) or rest.endswith('\\'):
                        raise ValueError(f'{where}: bad escape in HELP of {name}')
                    fam['help'] = rest
                else:
                    if fam['type'] is not None:
                        raise ValueError(f'{where}: second TYPE for {name}')
                    if rest not in TYPES:
                        raise ValueError(f'{where}: unknown type {rest!r}')
                    fam['type'] = rest
            continue
        m = NAME.match(line)
        if not m:
            raise ValueError(f'{where}: bad metric name')
        name = m.group(0)
        i = m.end()
        labels = {}
        if i < len(line) and line[i] == '{':
            labels, i = _labels(line, i, where)
        if i >= len(line) or line[i] != ' ':
            raise ValueError(f'{where}: expected a space before the value')
        fields = line[i + 1:].split(' ')
        if len(fields) not in (1, 2) or '' in fields:
            raise ValueError(f'{where}: expected a value and an optional timestamp')
        value = _value(fields[0], where)
        if len(fields) == 2 and not re.fullmatch(r'-?[0-9]+', fields[1]):
            raise ValueError(f'{where}: bad timestamp')
        name, labels = _histogram_sample(families, name, labels, where)
        fam = families.get(name)
        if fam is None or fam['type'] is None or fam['help'] is None:
            raise ValueError(f'{where}: sample of {name} without HELP and TYPE before it')
        if name in done:
            raise ValueError(f'{where}: samples of {name} are not contiguous')
        if current is not None and current != name:
            done.add(current)
        current = name
        key = tuple(sorted(labels.items()))
        if key in fam['samples']:
            raise ValueError(f'{where}: series {name}{dict(key)} twice')
        if fam['type'] == 'counter':
            if not name.endswith('_total'):
                raise ValueError(f'{where}: counter {name} not named *_total')
            if math.isnan(value) or value < 0:
                raise ValueError(f'{where}: counter {name} is {value}')
        fam['samples'][key] = value
    return families


def _histogram_sample(families, name, labels, where):
    """A histogram's _bucket, _sum or _count sample belongs to its family: returns the
    family's name and the labels with '__name__' (the full sample name) added."""
    if name in families:
        return name, labels
    for suffix in ('_bucket', '_sum', '_count'):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and families.get(base, {}).get('type') == 'histogram':
            if (suffix == '_bucket') != ('le' in labels):
                raise ValueError(f'{where}: {name}: le on a bucket, and only on one')
            return base, {**labels, '__name__': name}
    return name, labels


def histogram(families, name, **labels):
    """One series of a histogram family, checked as the format says: buckets in
    increasing le, cumulative, the last +Inf and equal to _count. Returns
    ([(le, count)...], sum, count); ValueError if it is not well formed."""
    fam = families[name]
    if fam['type'] != 'histogram':
        raise ValueError(f'{name} is a {fam["type"]}, not a histogram')
    want = set(labels.items())
    buckets, total, count = [], None, None
    for key, v in fam['samples'].items():
        d = dict(key)
        full = d.pop('__name__')
        le = d.pop('le', None)
        if set(d.items()) != want:
            continue
        if full == name + '_bucket':
            buckets.append((_value(le, f'{name} le'), v))
        elif full == name + '_sum':
            total = v
        else:
            count = v
    buckets.sort()
    if total is None or count is None or not buckets:
        raise ValueError(f'{name}: buckets, _sum or _count missing')
    if buckets[-1][0] != math.inf or buckets[-1][1] != count:
        raise ValueError(f'{name}: the +Inf bucket is not _count ({buckets[-1]} vs {count})')
    if any(b[1] < a[1] for a, b in zip(buckets, buckets[1:])):
        raise ValueError(f'{name}: buckets not cumulative: {buckets}')
    if count < 0 or total < 0 or math.isnan(total):
        raise ValueError(f'{name}: count {count}, sum {total}')
    return buckets, total, count


def get(families, name, **labels):
    """The value of one series, or KeyError."""
    return families[name]['samples'][tuple(sorted(labels.items()))]
