#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The sd_notify protocol of numabalanced, as systemd would see it, on a test
# NOTIFY_SOCKET: the daemon runs in the foreground (--dry-run: nothing is moved) with
# a watchdog; it gets SIGHUP with a good config, SIGHUP with a broken one, then
# SIGTERM. Expected, in this order (WATCHDOG=1 and STATUS=-only messages aside):
#   READY=1
#   RELOADING=1 + MONOTONIC_USEC (after the signal was sent), READY=1    good reload
#   RELOADING=1 + MONOTONIC_USEC, READY=1 + STATUS=Reload refused...     broken config
#   STOPPING=1
# A refused reload still ends with READY=1: systemd waits for it to end the reload,
# and the daemon goes on running on its previous configuration.
# Usage: test-lifecycle.py NUMABALANCED
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

exe = sys.argv[1]
tmp = nbtest.tmpdir('test-lifecycle-')
conf = os.path.join(tmp, 'numabalanced.conf')


def write_conf(text):
    # Replaced atomically, as an editor or a config manager would.
    with open(conf + '.new', 'w') as f:
        f.write(text)
    os.rename(conf + '.new', conf)


write_conf('[daemon]\ntick_ms = 200\n')
sock_path = os.path.join(tmp, 'notify')
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sock_path)
sock.settimeout(20)

messages = []    # (monotonic time received in usec, {field: value})


def receive_until(pred, what):
    """Reads messages until one satisfies pred; returns it."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536).decode()
        except socket.timeout:
            break
        fields = dict(line.split('=', 1) for line in data.split('\n') if '=' in line)
        messages.append((time.monotonic_ns() // 1000, fields))
        if pred(fields):
            return fields
    nbtest.fail('timed out waiting for ' + what)
    return None


env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC='400000')
env.pop('WATCHDOG_PID', None)
env.pop('JOURNAL_STREAM', None)
err_path = os.path.join(tmp, 'stderr')
with open(err_path, 'w') as err_file:
    # Its own control socket: the default one belongs to whichever daemon runs
    # alongside (test-main's, or the machine's).
    p = subprocess.Popen([exe, '--foreground', '--dry-run', '--config', conf,
                          '--control-socket', os.path.join(tmp, 'control')],
                         stderr=err_file, env=env)
try:
    receive_until(lambda f: f.get('READY') == '1', 'READY=1 at start')

    write_conf('[daemon]\ntick_ms = 300\nlog_level = debug\n')
    sent = time.monotonic_ns() // 1000
    p.send_signal(signal.SIGHUP)
    f = receive_until(lambda f: 'RELOADING' in f, 'RELOADING=1 (good config)')
    if f:
        check(f['RELOADING'] == '1', 'RELOADING=%r' % f['RELOADING'])
        check('MONOTONIC_USEC' in f and f['MONOTONIC_USEC'].isdigit() and int(f['MONOTONIC_USEC']) >= sent,
              'MONOTONIC_USEC %r, signal sent at %d' % (f.get('MONOTONIC_USEC'), sent))
    f = receive_until(lambda f: f.get('READY') == '1', 'READY=1 after the good reload')
    if f:
        check('refused' not in f.get('STATUS', ''), 'good reload: STATUS=%r' % f.get('STATUS'))

    write_conf('[daemon]\ntick_ms = fast\n')
    sent = time.monotonic_ns() // 1000
    p.send_signal(signal.SIGHUP)
    f = receive_until(lambda f: 'RELOADING' in f, 'RELOADING=1 (broken config)')
    if f:
        check(int(f.get('MONOTONIC_USEC', '0')) >= sent, 'MONOTONIC_USEC %r' % f.get('MONOTONIC_USEC'))
    f = receive_until(lambda f: f.get('READY') == '1', 'READY=1 after the refused reload')
    if f:
        check(f.get('STATUS', '').startswith('Reload refused'), 'refused reload: STATUS=%r' % f.get('STATUS'))

    # Still alive and ticking on the previous configuration.
    time.sleep(0.5)
    check(p.poll() is None, 'the daemon exited after a refused reload')
finally:
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        nbtest.fail('no exit within 20 s of SIGTERM')
receive_until(lambda f: f.get('STOPPING') == '1', 'STOPPING=1')
check(p.returncode == 0, 'exit status %r after SIGTERM' % p.returncode)

# The order, without watchdog pings and status-only updates.
seq = []
for _, f in messages:
    for k in ('READY', 'RELOADING', 'STOPPING'):
        if k in f:
            seq.append(k)
check(seq == ['READY', 'RELOADING', 'READY', 'RELOADING', 'READY', 'STOPPING'], 'order: %r' % seq)

# The watchdog: WATCHDOG=1 at half of WATCHDOG_USEC (400 ms), so well over 2 in the run.
n_watchdog = sum(1 for _, f in messages if f.get('WATCHDOG') == '1')
check(n_watchdog >= 2, 'only %d WATCHDOG=1' % n_watchdog)

with open(err_path) as f:
    err = f.read()
check(conf + ':2: [daemon] tick_ms: "fast" is not a number (accepted: 100..60000)' in err,
      'the refused reload does not say why: %r' % err)
check('Reload refused, keeping the running configuration' in err, 'no "Reload refused" in %r' % err)
if nbtest.failures():
    print(err, file=sys.stderr)
    print('messages: %r' % messages, file=sys.stderr)
nbtest.finish()
