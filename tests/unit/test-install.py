#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""meson install into a temporary DESTDIR installs exactly what a distribution
would ship, and a second install keeps an operator's numabalanced.conf.

    test-install.py MESON BUILD_DIR SOURCE_DIR PREFIX BINDIR SBINDIR SYSCONFDIR MANDIR UNITDIR DATADIR

The directories are meson's (absolute, or relative to PREFIX) and the unit
directory as systemd/meson.build computed it. Expected: numabalancectl in bindir,
numabalanced in sbindir, numabalanced.service in the unit directory (ExecStart
naming the installed numabalanced), the three man pages in mandir, and
numabalanced.conf in sysconfdir (the shipped file) and the empty directory
numabalanced.conf.d beside it; README.md and docs/*.md in DATADIR/doc/numabalanced
(docs/ below it), contrib/README.md and the Prometheus and Grafana files in its
examples/; nothing else (no static
library, no test programs). The unit's ExecStopPost= runs the installed
numabalanced --restore-affinity, and debian/'s prerm and postrm give the threads'
affinities back before anything is deleted (run with sh, their paths replaced).
"""
import filecmp
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402


def install(meson, build, destdir):
    r = subprocess.run([meson, "install", "-C", build, "--no-rebuild", "--destdir", destdir],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"meson install --destdir {destdir} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout + r.stderr


def tree(root):
    out = set()
    for d, _, files in os.walk(root):
        for f in files:
            out.add("/" + os.path.relpath(os.path.join(d, f), root))
    return out


def check_autopkgtest(src, doc_files):
    """debian/tests: every test named in its control file is an executable shell
    script that sh parses, needs root and a machine of its own (the daemon needs the
    cgroup tree, CPU affinity, sysctls), depends on the package; and the doc files the
    script looks for are ones this install ships."""
    tests_dir = os.path.join(src, "debian", "tests")
    stanzas = [dict(re.findall(r"^([A-Za-z-]+):\s*(.*(?:\n\s+.*)*)", block, re.M))
               for block in re.split(r"\n\s*\n", re.sub(r"^#.*\n", "", open(os.path.join(tests_dir, "control")).read(),
                                                      flags=re.M)) if block.strip()]
    check(stanzas, "debian/tests/control has no stanza")
    for st in stanzas:
        restrictions = re.split(r"[\s,]+", st.get("Restrictions", ""))
        check("needs-root" in restrictions and "isolation-machine" in restrictions,
              f"debian/tests/control: {st.get('Tests')}: Restrictions {restrictions}")
        check(re.search(r"\bnumabalanced\b", st.get("Depends", "")), f"debian/tests/control: {st.get('Tests')} "
              "does not depend on the package")
        for name in st.get("Tests", "").split():
            script = os.path.join(tests_dir, name)
            check(os.access(script, os.X_OK), f"debian/tests/{name} is not an executable file")
            r = subprocess.run(["sh", "-n", script], capture_output=True, text=True)
            check(r.returncode == 0, f"sh -n debian/tests/{name}: {r.stderr}")
            text = open(script).read()
            for f in re.findall(r"\b((?:docs|examples)/[\w./-]+)", text):
                check(f"/{f}" in {d.split("/doc/numabalanced", 1)[1] for d in doc_files},
                      f"debian/tests/{name} looks for {f}, which the install does not ship")
    print(f"ok: debian/tests: {', '.join(st.get('Tests', '') for st in stanzas)}")


def run_script(src, name, arg, replace):
    """debian/numabalanced.NAME run with sh and ARG, its paths replaced (REPLACE: {line: new line})."""
    text = open(os.path.join(src, "debian", "numabalanced." + name)).read()
    for old, new in replace.items():
        check(f"\n{old}\n" in text, f"debian/numabalanced.{name} has no line {old!r}")
        text = text.replace(f"\n{old}\n", f"\n{new}\n")
    script = os.path.join(nbtest.tmpdir("test-install-script-"), name)
    with open(script, "w") as f:
        f.write(text)
    return subprocess.run(["sh", script, arg], capture_output=True, text=True)


def check_maintainer_scripts(src):
    """The package gives the threads' CPU affinities back before anything is deleted:
    the prerm runs numabalanced --restore-affinity on removal, after debhelper's stop
    and whatever it exits with; the postrm's purge deletes /run/numabalanced but a state
    file (or a refused copy) that still names a thread."""
    prerm = open(os.path.join(src, "debian", "numabalanced.prerm")).read()
    check(0 <= prerm.find("#DEBHELPER#") < prerm.find("--restore-affinity"),
          "debian/numabalanced.prerm: --restore-affinity not after #DEBHELPER# (the unit's stop)")
    tmp = nbtest.tmpdir("test-install-maint-")
    calls = os.path.join(tmp, "calls")
    for status in (0, 1):
        fake = os.path.join(tmp, f"numabalanced-{status}")
        with open(fake, "w") as f:
            f.write(f"#!/bin/sh\necho \"$*\" >> {calls}\nexit {status}\n")
        os.chmod(fake, 0o755)
        for arg, called in (("remove", True), ("upgrade", False), ("deconfigure", False)):
            if os.path.exists(calls):
                os.unlink(calls)
            r = run_script(src, "prerm", arg, {"exe=/usr/sbin/numabalanced": f"exe={fake}"})
            got = open(calls).read() if os.path.exists(calls) else ""
            check(r.returncode == 0, f"prerm {arg} (restore exits {status}): exit {r.returncode} {r.stderr!r}")
            check(got == ("--restore-affinity\n" if called else ""), f"prerm {arg}: ran {got!r}")
            if called and status:
                check("/run/numabalanced/affinity" in r.stderr, f"prerm {arg}: a failed restore not said: {r.stderr!r}")

    def run_dir(files):
        d = os.path.join(tmp, "run")
        if os.path.exists(d):
            subprocess.run(["rm", "-rf", d], check=True)
        os.mkdir(d)
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        return d

    header = "numabalanced-affinity 2\nboot 1c7a97c5-98a3-450c-a081-45f69f1f5764\n"
    record = "1234 5678 1234 5678 0-3 0-1 0\n"
    d = run_dir({"affinity": header, "control": "", "affinity.refused-20260101T000000.000000Z": "junk\n"})
    r = run_script(src, "postrm", "remove", {"dir=/run/numabalanced": f"dir={d}"})
    check(r.returncode == 0 and sorted(os.listdir(d)) == ["affinity", "affinity.refused-20260101T000000.000000Z",
                                                           "control"], f"postrm remove deleted: {os.listdir(d)}")
    d = run_dir({"affinity": header, "control": ""})
    r = run_script(src, "postrm", "purge", {"dir=/run/numabalanced": f"dir={d}"})
    check(r.returncode == 0 and not os.path.exists(d), f"postrm purge, threads given back: {r.returncode} "
          f"{os.listdir(d) if os.path.exists(d) else ''} {r.stderr!r}")
    refused = "affinity.refused-20260101T000000.000000Z"
    d = run_dir({"affinity": header + record, "control": "", refused: "numabalanced-affinity 1\n" + record,
                 "affinity.XXXXXX": header})
    r = run_script(src, "postrm", "purge", {"dir=/run/numabalanced": f"dir={d}"})
    check(r.returncode == 0 and sorted(os.listdir(d)) == ["affinity", refused],
          f"postrm purge with threads not given back: kept {os.listdir(d)}, expected the state file and its refused copy")
    check(os.path.join(d, "affinity") in r.stderr and os.path.join(d, refused) in r.stderr,
          f"postrm purge: what it kept is not said: {r.stderr!r}")
    if not nbtest.failures():
        print("ok: prerm restores the affinities on removal; postrm purge keeps a state file naming a thread")


def main():
    if len(sys.argv) != 11:
        print(__doc__, file=sys.stderr)
        return 2
    meson, build, src, prefix, bindir, sbindir, sysconfdir, mandir, unitdir, datadir = sys.argv[1:]
    p = lambda d: os.path.normpath(os.path.join(prefix, d))  # noqa: E731 (absolute stays absolute)
    expected = {
        p(bindir) + "/numabalancectl",
        p(sbindir) + "/numabalanced",
        os.path.normpath(unitdir) + "/numabalanced.service",
        p(mandir) + "/man8/numabalanced.8",
        p(mandir) + "/man1/numabalancectl.1",
        p(mandir) + "/man5/numabalanced.conf.5",
        p(sysconfdir) + "/numabalanced.conf",
        p(datadir) + "/bash-completion/completions/numabalanced",
        p(datadir) + "/bash-completion/completions/numabalancectl",
    }
    # The documentation and contrib/'s fleet files, under the package's doc directory,
    # in the sources' tree: every docs/*.md and every file of contrib/prometheus and
    # contrib/grafana, found in the sources (a new one is expected without a word here).
    doc = p(datadir) + "/doc/numabalanced"
    shipped_docs = {os.path.join(doc, "README.md"): "README.md",
                    os.path.join(doc, "examples", "README.md"): os.path.join("contrib", "README.md")}
    for f in sorted(os.listdir(os.path.join(src, "docs"))):
        if f.endswith(".md"):
            shipped_docs[doc + "/docs/" + f] = "docs/" + f
    for sub in ("prometheus", "grafana"):
        for f in sorted(os.listdir(os.path.join(src, "contrib", sub))):
            shipped_docs[doc + "/examples/" + sub + "/" + f] = "contrib/" + sub + "/" + f
    check(os.path.join(doc, "docs/ctl-json.md") in shipped_docs and os.path.join(doc, "docs/OPT-IN.md") in shipped_docs,
          "docs/ctl-json.md or docs/OPT-IN.md not found in the sources")
    expected |= set(shipped_docs)
    conf = p(sysconfdir) + "/numabalanced.conf"
    confd = p(sysconfdir) + "/numabalanced.conf.d"

    dest = nbtest.tmpdir("test-install-")
    install(meson, build, dest)
    got = tree(dest)
    for f in sorted(expected | got):
        check(f in got, f"not installed: {f}")
        check(f in expected, f"installed but not expected: {f}")
    if nbtest.failures():
        nbtest.finish()
    print("ok: installed exactly:\n  " + "\n  ".join(sorted(got)))

    # The directory of the services' opt-in files: there, empty, owned by its owner
    # alone (the daemon refuses one others may write).
    check(os.path.isdir(dest + confd) and not os.listdir(dest + confd), f"{confd} is not an empty directory")
    check(os.stat(dest + confd).st_mode & 0o022 == 0, f"{confd} is writable by group or others")
    for f in (p(bindir) + "/numabalancectl", p(sbindir) + "/numabalanced"):
        check(os.access(dest + f, os.X_OK), f"{f} is not executable")
    check(filecmp.cmp(dest + conf, os.path.join(src, "conf", "numabalanced.conf"), shallow=False),
          f"{conf} differs from conf/numabalanced.conf")
    unit = open(dest + os.path.normpath(unitdir) + "/numabalanced.service").read()
    check(f"\nExecStart={p(sbindir)}/numabalanced\n" in unit,
          f"the installed unit's ExecStart does not name {p(sbindir)}/numabalanced")
    check(f"\nExecStopPost={p(sbindir)}/numabalanced --restore-affinity\n" in unit,
          f"the installed unit's ExecStopPost does not run {p(sbindir)}/numabalanced --restore-affinity")
    for page in ("man8/numabalanced.8", "man5/numabalanced.conf.5", "man1/numabalancectl.1"):
        check(filecmp.cmp(dest + p(mandir) + "/" + page, os.path.join(src, "man", os.path.basename(page)),
                          shallow=False), f"{page} differs from man/{os.path.basename(page)}")

    for f, source in shipped_docs.items():
        check(filecmp.cmp(dest + f, os.path.join(src, source), shallow=False), f"{f} differs from {source}")

    check_autopkgtest(src, set(shipped_docs))
    check_maintainer_scripts(src)

    # An operator's edits survive a reinstall (and an upgrade).
    edited = "# edited by the operator\n[daemon]\ntick_ms = 2000\n"
    with open(dest + conf, "w") as f:
        f.write(edited)
    install(meson, build, dest)
    if check(open(dest + conf).read() == edited, f"a second install replaced the edited {conf}"):
        print(f"ok: a second install kept the edited {conf}")
    check(tree(dest) == expected, f"after the second install: {sorted(tree(dest) ^ expected)}")
    nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
