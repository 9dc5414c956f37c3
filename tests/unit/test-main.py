#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# numabalanced's own behaviour that needs no root: --check-config (exit status and
# the exact messages), the refusal to start when service_cpus names no online CPU,
# and kernel_numa_balancing=disable against a fake /proc (set to 0 while running,
# restored at exit, and restored by the next start after a SIGKILL).
# Usage: test-main.py NUMABALANCED TESTS_DATA_DIR
import os
import resource
import signal
import socket
import subprocess
import time
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

exe, data = sys.argv[1], sys.argv[2]


tmp = nbtest.tmpdir('test-main-')
# The state directory (where the operator's kernel.numa_balancing is saved), as systemd
# passes it from RuntimeDirectory=: not /run/numabalanced, which may not be ours.
state = os.path.join(tmp, 'run')
os.environ['RUNTIME_DIRECTORY'] = state


def run(*args, timeout=20):
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr



def conf(name, text):
    path = os.path.join(tmp, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


# --- --check-config ------------------------------------------------------------
good = conf('good.conf', '[daemon]\ntick_ms = 500\n[select]\ncgroups = /a.slice=advise\n')
rc, out, err = run('--check-config', good)
check(rc == 0, '--check-config good: exit %d, stderr %r' % (rc, err))
check(out == 'configuration OK\n', '--check-config good: stdout %r' % out)

rc, out, err = run('--check-config=' + good)
check(rc == 0 and out == 'configuration OK\n', '--check-config=FILE: exit %d, stdout %r' % (rc, out))

rc, out, err = run('--config', good, '--check-config')
check(rc == 0 and out == 'configuration OK\n', '--config FILE --check-config: exit %d, stdout %r' % (rc, out))

bad = conf('bad.conf', '[daemon]\ntick_ms = 10ms\nservice_cpu = 0\n[decide]\nmove_shared = maybe\n[nope]\n')
rc, out, err = run('--check-config', bad)
check(rc == 1, '--check-config bad: exit %d' % rc)
check('configuration OK' not in out, '--check-config bad: stdout %r' % out)
expected = [
    bad + ':2: [daemon] tick_ms: "10ms" has junk after the number (accepted: 100..60000)',
    bad + ':3: [daemon] service_cpu: unknown key (accepted: service_cpus, tick_ms, scan_min_ms, '
    'scan_max_ms, log_level, kernel_numa_balancing)',
    bad + ':5: [decide] move_shared: "maybe" is not a boolean (accepted: yes, no, true, false, on, off, 1, 0)',
    bad + ':6: [nope]: unknown section (accepted: [daemon], [select], [sample], [decide], [migrate], [report])',
]
check(err.splitlines() == expected, '--check-config bad: stderr\n%s\nexpected\n%s' % (err, '\n'.join(expected)))

missing = os.path.join(tmp, 'missing.conf')
rc, out, err = run('--check-config', missing)
check(rc == 1, '--check-config missing named file: exit %d' % rc)
check(err == missing + ': No such file or directory\n', '--check-config missing: stderr %r' % err)

# The daemon itself refuses a bad file before doing anything.
rc, out, err = run('--config', bad, '--once', '--dry-run')
check(rc == 6, 'start with a bad config: exit %d, expected 6 (not configured)' % rc)
check(expected[0] in err and 'has 4 errors' in err, 'start with a bad config: stderr %r' % err)
rc, out, err = run('--config', missing, '--once', '--dry-run')
check(rc == 6 and 'No such file or directory' in err, 'start with a missing named config: exit %d, %r' % (rc, err))

# --- --check-config-of PID: the file a running daemon reads (ExecReload=) -----------
# The daemon runs with --config running.conf; the check reads that path from its
# command line, so a broken edit of that file (not of the default) fails the check.
running = conf('running.conf', '[select]\ncgroup_root = %s\n[sample]\nsource = proc\npmu = off\n' % tmp)
d = subprocess.Popen([exe, '--foreground', '--dry-run', '--control-socket=', '--config', running],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    time.sleep(0.5)
    rc, out, err = run('--check-config-of', str(d.pid))
    check(rc == 0 and out == 'configuration OK\n', '--check-config-of a running daemon: exit %d, %r %r' % (rc, out, err))
    with open(running, 'a') as f:
        f.write('[daemon]\nno_such_key = 1\n')
    rc, out, err = run('--check-config-of', str(d.pid))
    check(rc == 1 and running + ':7: [daemon] no_such_key: unknown key' in err,
          '--check-config-of after a broken edit: exit %d, %r' % (rc, err))
finally:
    d.terminate()
    d.wait(20)
rc, out, err = run('--check-config-of', str(os.getpid()))
check(rc == 1 and 'does not run as a numabalanced daemon' in err, '--check-config-of another process: %d %r' % (rc, err))
rc, out, err = run('--check-config-of', 'x1')
check(rc == 1 and 'not a process id' in err, '--check-config-of x1: %d %r' % (rc, err))

# --- FILE.d: the files of the directory, read after FILE -----------------------------
# --check-config FILE covers FILE.d; a bad file there is refused as the main file is,
# at its own FILE:LINE; a daemon's reload reads the directory again and refuses it.
dgood = conf('dropins.conf', '[select]\ncgroup_root = %s\n[sample]\nsource = proc\npmu = off\n' % tmp)
os.mkdir(dgood + '.d')
conf('dropins.conf.d/10-db.conf', '[select]\ncgroups = /db.slice=balance\ncgroups = /db2.slice=balance\n')
conf('dropins.conf.d/10-db.conf.dpkg-old', '[nope]\n')
rc, out, err = run('--check-config', dgood)
check(rc == 0 and out == dgood + '.d: 1 file read\nconfiguration OK\n', '--check-config with FILE.d: %d %r %r' % (rc, out, err))
err_path = os.path.join(tmp, 'dropins.stderr')
with open(err_path, 'w') as err_file:
    d = subprocess.Popen([exe, '--foreground', '--dry-run', '--control-socket=', '--config', dgood],
                         stdout=subprocess.DEVNULL, stderr=err_file)
try:
    time.sleep(0.5)
    bad_dropin = conf('dropins.conf.d/20-bad.conf', '[select]\n\ncgroups = /db.slice=advise\n')
    rc, out, err = run('--check-config-of', str(d.pid))
    expected_dropin = (bad_dropin + ':3: [select] cgroups: "/db.slice=advise": the path is already named at ' +
                       dgood + '.d/10-db.conf:2 (accepted: one rule per cgroup, in all the files)\n')
    check(rc == 1 and err == expected_dropin, '--check-config-of, a bad file in FILE.d: exit %d, %r' % (rc, err))
    d.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    check(d.poll() is None, 'the daemon exited on a reload refused for a file of FILE.d')
finally:
    d.terminate()
    d.wait(20)
with open(err_path) as f:
    derr = f.read()
check('Read %s and 1 file of %s.d' % (dgood, dgood) in derr, 'the files read are not logged: %r' % derr)
check(expected_dropin in derr and 'Reload refused, keeping the running configuration' in derr,
      'reload with a bad file in FILE.d: %r' % derr)
# The directory's files are root's (or the reading user's), writable by their owner only.
os.unlink(bad_dropin)
os.chmod(dgood + '.d/10-db.conf', 0o666)
rc, out, err = run('--check-config', dgood)
check(rc == 1 and err == dgood + '.d/10-db.conf: writable by others (mode 0666; accepted: owned by root, writable '
      'by its owner only)\n', '--check-config, a world-writable file in FILE.d: %d %r' % (rc, err))

# --- service CPUs ----------------------------------------------------------------
sys_cpus = os.path.join(data, 'sys-cpus')
offline = conf('offline.conf', '[daemon]\nservice_cpus = 8-9\n')
rc, out, err = run('--config', offline, '--sys-root', sys_cpus, '--once', '--dry-run')
check(rc == 1, 'service_cpus offline: exit %d' % rc)
check('service_cpus=8-9 names no online CPU (online: 0-3), refusing to start' in err,
      'service_cpus offline: stderr %r' % err)
check('Running on service CPUs' not in err, 'service_cpus offline: it pinned anyway: %r' % err)

# --- usage ---------------------------------------------------------------------------
rc, out, err = run('--log-level', 'loud', '--check-config', good)
check(rc == 1 and 'unknown level "loud"' in err, '--log-level loud: exit %d, %r' % (rc, err))
rc, out, err = run('--version')
check(rc == 0 and out.startswith('numabalanced '), '--version: %d %r' % (rc, out))
rc, out, err = run('--bogus')
check(rc == 1, '--bogus: exit %d' % rc)

# --- kernel.numa_balancing against a fake /proc -----------------------------------------
proc = os.path.join(tmp, 'proc')
os.makedirs(os.path.join(proc, 'sys', 'kernel'))
knb = os.path.join(proc, 'sys', 'kernel', 'numa_balancing')


def knb_value():
    with open(knb) as f:
        return f.read().strip()


with open(knb, 'w') as f:
    f.write('1\n')
leave = conf('leave.conf', '[daemon]\nkernel_numa_balancing = leave\n')
rc, out, err = run('--config', leave, '--proc-root', proc, '--once')
check(rc == 0, 'leave: exit %d, %r' % (rc, err))
check('kernel.numa_balancing=1: the kernel\'s own NUMA balancing is on' in err, 'leave: no warning in %r' % err)
check(knb_value() == '1', 'leave: changed to %r' % knb_value())

disable = conf('disable.conf', '[daemon]\nkernel_numa_balancing = disable\n')
saved = os.path.join(state, 'kernel.numa_balancing')
sock_path = os.path.join(tmp, 'notify')
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sock_path)
sock.settimeout(20)
env = dict(os.environ, NOTIFY_SOCKET=sock_path)
# Started with a soft limit of 64 open files (a shell's 1024 is as wrong): the daemon
# raises it to the hard limit, since it holds a pidfd per balanced process.
nofile_hard = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 4096)


def low_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, nofile_hard))


def nofile_limits(pid):
    with open(f'/proc/{pid}/limits') as f:
        for line in f:
            if line.startswith('Max open files'):
                return [int(v) for v in line.split()[3:5]]
    return None


def start_disable():
    """The daemon with kernel_numa_balancing = disable, once it said READY=1."""
    # Its own control socket: the default one may belong to a daemon already running.
    p = subprocess.Popen([exe, '--foreground', '--config', disable, '--proc-root', proc,
                          '--control-socket', os.path.join(tmp, 'control')],
                         stderr=subprocess.PIPE, text=True, env=env, preexec_fn=low_nofile)
    try:
        while True:
            msg = sock.recv(4096).decode()
            if 'READY=1' in msg.split('\n'):
                return p
    except BaseException:
        p.kill()
        raise


def saved_value():
    try:
        with open(saved) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


p = start_disable()
try:
    check(knb_value() == '0', 'disable: while running, %r' % knb_value())
    check(nofile_limits(p.pid) == [nofile_hard, nofile_hard],
          f'open file limit not raised to the hard limit {nofile_hard}: {nofile_limits(p.pid)}')
    check(saved_value() == '1', 'disable: the value found is not saved in %s: %r' % (state, saved_value()))
finally:
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=20)[1]
check(p.returncode == 0, 'disable: exit %d, %r' % (p.returncode, err))
check(knb_value() == '1', 'disable: not restored at exit: %r' % knb_value())
check('Set kernel.numa_balancing=0 (was 1)' in err and 'Restored kernel.numa_balancing=1' in err,
      'disable: messages %r' % err)
check(saved_value() is None, 'disable: the saved value outlived the exit: %r' % saved_value())

# Killed (SIGKILL: the watchdog's last resort, the OOM killer) while it holds the
# sysctl at 0: the next start finds the operator's 1 saved and restores it at its exit,
# rather than take the 0 as the operator's value for good.
p = start_disable()
p.kill()
p.communicate(timeout=20)
check(knb_value() == '0' and saved_value() == '1', 'SIGKILL: sysctl %r, saved %r' % (knb_value(), saved_value()))
p = start_disable()
p.send_signal(signal.SIGTERM)
err = p.communicate(timeout=20)[1]
check(p.returncode == 0 and knb_value() == '1', 'restart after SIGKILL: exit %d, sysctl %r, %r' %
      (p.returncode, knb_value(), err))
check('was left by a numabalanced that did not exit cleanly; the value it found, 1' in err,
      'restart after SIGKILL: messages %r' % err)
check(saved_value() is None, 'restart after SIGKILL: the saved value outlived the exit')

# --dry-run changes no sysctl.
rc, out, err = run('--config', disable, '--proc-root', proc, '--once', '--dry-run')
check(rc == 0 and knb_value() == '1' and 'dry run, not setting it to 0' in err, 'disable --dry-run: %d %r' % (rc, err))

nbtest.finish()
