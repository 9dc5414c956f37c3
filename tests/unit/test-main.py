#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# numabalanced's own behaviour that needs no root: --check-config (exit status and
# the exact messages), the refusal to start when service_cpus names no online CPU,
# and kernel_numa_balancing=disable against a fake /proc (set to 0 while running,
# restored at exit, and restored by the next start after a SIGKILL); --restore-affinity
# on this test's own threads.
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
os.mkdir(os.path.join(tmp, 'a.slice'))  # the rule's cgroup: one that matches nothing is named (below)
good = conf('good.conf', '[daemon]\ntick_ms = 500\n[select]\ncgroup_root = %s\ncgroups = /a.slice=advise\n' % tmp)
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
check(rc == 0 and out.startswith('1 drop-in file read\n') and out.endswith('configuration OK\n'),
      '--check-config with FILE.d: %d %r %r' % (rc, out, err))
# A rule that matches no cgroup is valid, and named (a unit's path guessed wrong).
check('[select] cgroups = /db.slice=balance: matches no cgroup under %s now' % tmp in out,
      '--check-config: a rule matching nothing not named: %r' % out)
os.mkdir(os.path.join(tmp, 'db.slice'))
rc, out, err = run('--check-config', dgood)
check(rc == 0 and '/db.slice=balance' not in out and '/db2.slice=balance: matches no cgroup' in out,
      '--check-config: /db.slice exists now: %r' % out)
os.rmdir(os.path.join(tmp, 'db.slice'))

# --print-config: every value with the FILE:LINE that set it, or "default".
rc, out, err = run('--print-config', dgood)
check(rc == 0 and 'source = proc  # %s:4\n' % dgood in out and 'tick_ms = 1000  # default\n' in out and
      'cgroups = /db2.slice=balance  # %s.d/10-db.conf:3\n' % dgood in out,
      '--print-config: %d %r %r' % (rc, out, err))
rc, out, err = run('--print-config', bad)
check(rc == 1 and out == '' and err, '--print-config of a bad file: %d %r %r' % (rc, out, err))
err_path = os.path.join(tmp, 'dropins.stderr')
with open(err_path, 'w') as err_file:
    d = subprocess.Popen([exe, '--foreground', '--dry-run', '--control-socket=', '--config', dgood],
                         stdout=subprocess.DEVNULL, stderr=err_file)
try:
    time.sleep(0.5)
    # (A later file naming /db.slice again replaces 10-db.conf's rule; twice in one file
    # is the error.)
    bad_dropin = conf('dropins.conf.d/20-bad.conf', '[select]\n\ncgroups = /db.slice=advise\ncgroups = /db.slice=off\n')
    rc, out, err = run('--check-config-of', str(d.pid))
    expected_dropin = (bad_dropin + ':4: [select] cgroups: "/db.slice=off": the path is already named at ' +
                       bad_dropin + ':3 (accepted: one rule per cgroup in a file; a later file replaces it)\n')
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


# --- --restore-affinity: what ExecStopPost= and the package's prerm run ---------------
# The test's own main thread narrowed to one CPU as a daemon killed before its undo
# leaves it, with a thread it created since (which inherited the narrowed mask), and
# the state file that daemon wrote: --restore-affinity gives both their mask back and
# exits 0, touching nothing else; a file it must not trust changes no mask, is kept
# aside and, when it could not be read, makes it exit 1 saying so.
def task_start(tid):
    with open(f'/proc/{os.getpid()}/task/{tid}/stat') as f:
        text = f.read()
    return int(text[text.rindex(')') + 2:].split()[19])     # field 22, starttime


def cpus(mask):
    return ','.join(str(c) for c in sorted(mask))


def restore(rdir):
    r = subprocess.run([exe, '--restore-affinity'], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, RUNTIME_DIRECTORY=rdir))
    return r.returncode, r.stdout, r.stderr


def refused(rdir):
    return sorted(f for f in os.listdir(rdir) if f.startswith('affinity.refused-'))


rdir = os.path.join(tmp, 'restore')
rc, out, err = restore(rdir)
check(rc == 0 and 'no state file' in out, f'--restore-affinity without a state directory: {rc} {out!r} {err!r}')
check(not os.path.exists(rdir), '--restore-affinity made the state directory')

original = os.sched_getaffinity(0)
if len(original) < 2:
    print('skip: --restore-affinity on a narrowed thread needs 2 CPUs in this process\'s affinity')
else:
    import fcntl
    import threading
    with open('/proc/sys/kernel/random/boot_id') as f:
        boot = f.read().strip()
    placed = {min(original)}
    pid = os.getpid()
    os.mkdir(rdir, 0o755)
    state_file = os.path.join(rdir, 'affinity')

    def narrowed_state(boot_id=boot, mode=0o600):
        """The main thread narrowed, and the state file saying so."""
        os.sched_setaffinity(0, placed)
        text = (f'numabalanced-affinity 2\nboot {boot_id}\n'
                f'{pid} {task_start(pid)} {pid} {task_start(pid)} {cpus(original)} {cpus(placed)} 0\n')
        fd = os.open(state_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, text.encode())
        os.close(fd)
        os.chmod(state_file, mode)
        return text

    narrowed_state()
    ev = threading.Event()
    child = threading.Thread(target=ev.wait)
    child.start()
    try:
        check(os.sched_getaffinity(child.native_id) == placed, 'the new thread did not inherit the narrowed mask')
        rc, out, err = restore(rdir)
        check(rc == 0, f'--restore-affinity: exit {rc}, {out!r} {err!r}')
        check(os.sched_getaffinity(0) == original,
              f'--restore-affinity: the narrowed thread has {cpus(os.sched_getaffinity(0))}, not {cpus(original)}')
        check(os.sched_getaffinity(child.native_id) == original,
              '--restore-affinity: the thread it created since still has '
              f'{cpus(os.sched_getaffinity(child.native_id))}, not {cpus(original)}')
        check('2 thread(s) given their original affinity back' in out, f'--restore-affinity said {out!r}')
        with open(state_file) as f:
            check(f.read() == f'numabalanced-affinity 3\nboot {boot}\n', 'the state file was not emptied')
        check(sorted(os.listdir(rdir)) == ['affinity'], f'--restore-affinity left {os.listdir(rdir)}')
    finally:
        ev.set()
        child.join()

    # A file others may write: not trusted, kept aside, the thread left as it is, exit 1.
    text = narrowed_state(mode=0o666)
    rc, out, err = restore(rdir)
    check(rc == 1 and 'could not be read' in err, f'--restore-affinity on a file others may write: {rc} {err!r}')
    check(os.sched_getaffinity(0) == placed, '--restore-affinity acted on a file others may write')
    kept = refused(rdir)
    check(len(kept) == 1 and open(os.path.join(rdir, kept[0])).read() == text and kept[0] in err,
          f'the refused file is not kept aside and named: {kept} {err!r}')
    for f in kept:
        os.unlink(os.path.join(rdir, f))

    # Written during another boot: not acted on, kept aside, exit 0.
    text = narrowed_state(boot_id='00000000-1111-2222-3333-444444444444')
    rc, out, err = restore(rdir)
    check(rc == 0 and os.sched_getaffinity(0) == placed and 'another boot' in err,
          f'--restore-affinity on another boot\'s file: {rc} {cpus(os.sched_getaffinity(0))} {err!r}')
    kept = refused(rdir)
    check(len(kept) == 1 and open(os.path.join(rdir, kept[0])).read() == text, f'not kept aside: {kept}')
    for f in kept:
        os.unlink(os.path.join(rdir, f))

    # A running daemon holds the directory: it is its file, nothing is done.
    narrowed_state()
    lock = os.open(rdir, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    rc, out, err = restore(rdir)
    os.close(lock)
    check(rc == 0 and 'a running numabalanced holds' in out and os.sched_getaffinity(0) == placed,
          f'--restore-affinity beside a running daemon: {rc} {out!r} {cpus(os.sched_getaffinity(0))}')
    rc, out, err = restore(rdir)
    check(rc == 0 and os.sched_getaffinity(0) == original, f'--restore-affinity once it is gone: {rc} {out!r}')
    os.sched_setaffinity(0, original)

nbtest.finish()
