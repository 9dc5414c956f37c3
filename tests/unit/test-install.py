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
library, no test programs).
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
    for page in ("man8/numabalanced.8", "man5/numabalanced.conf.5", "man1/numabalancectl.1"):
        check(filecmp.cmp(dest + p(mandir) + "/" + page, os.path.join(src, "man", os.path.basename(page)),
                          shallow=False), f"{page} differs from man/{os.path.basename(page)}")

    for f, source in shipped_docs.items():
        check(filecmp.cmp(dest + f, os.path.join(src, source), shallow=False), f"{f} differs from {source}")

    check_autopkgtest(src, set(shipped_docs))

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
