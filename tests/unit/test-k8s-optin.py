#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Kubernetes opt-in agent (contrib/kubernetes/numabalanced-k8s-optin) on a fake
cgroup tree, without a cluster: pods of every QoS class under the kubelet's systemd
driver layout and one under the cgroupfs driver's, a PodList JSON with valid, invalid
and missing annotations, a UID with '..' in it and a pod cgroup that is a symlink out
of the tree. The agent runs once (--pods-file, --xattr user.numabalanced), the xattrs
are read back as a user would (os.getxattr), the annotations change, it runs again:
what it set follows the annotations, what an operator set is never changed nor
removed. Its functions (pod JSON -> cgroup path and mode) are also called directly.

    test-k8s-optin.py SOURCE_ROOT [BUILD_DIR]

The tree needs a file system with user xattrs: the temporary directory, else
BUILD_DIR, /var/tmp or /dev/shm; skipped (77) when none has them.
"""
import atexit
import importlib.machinery
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

XATTR = "user.numabalanced"
MARKER = XATTR + "-k8s-optin"

# One pod each: (UID, QoS class, layout). The UIDs are the API's form, with '-'.
PODS = {
    "guaranteed": ("0a1b2c3d-0000-4000-8000-000000000001", "Guaranteed", "systemd"),
    "burstable": ("0a1b2c3d-0000-4000-8000-000000000002", "Burstable", "systemd"),
    "besteffort": ("0a1b2c3d-0000-4000-8000-000000000003", "BestEffort", "systemd"),
    "cgroupfs": ("0a1b2c3d-0000-4000-8000-000000000004", "Burstable", "cgroupfs"),
    "operator": ("0a1b2c3d-0000-4000-8000-000000000005", "Burstable", "systemd"),
    "overwritten": ("0a1b2c3d-0000-4000-8000-000000000006", "Burstable", "systemd"),
    "operator-first": ("0a1b2c3d-0000-4000-8000-000000000007", "Burstable", "systemd"),
    "invalid": ("0a1b2c3d-0000-4000-8000-000000000008", "Burstable", "systemd"),
    "none": ("0a1b2c3d-0000-4000-8000-000000000009", "Burstable", "systemd"),
    "goes-invalid": ("0a1b2c3d-0000-4000-8000-00000000000a", "Burstable", "systemd"),
    "symlink": ("0a1b2c3d-0000-4000-8000-00000000000b", "BestEffort", "systemd"),
    "not-started": ("0a1b2c3d-0000-4000-8000-00000000000c", "Burstable", "systemd"),
}


def load_agent(root):
    """The agent as a module (its file has no .py suffix), no bytecode left behind."""
    path = os.path.join(root, "contrib", "kubernetes", "numabalanced-k8s-optin")
    sys.dont_write_bytecode = True
    loader = importlib.machinery.SourceFileLoader("k8s_optin", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("k8s_optin", loader))
    loader.exec_module(module)
    return path, module


def xattr_dir(build_dir):
    """A new directory on a file system that takes user xattrs, or None."""
    bases = [tempfile.gettempdir(), build_dir, "/var/tmp", "/dev/shm"]
    for base in [b for b in bases if b and os.path.isdir(b)]:
        d = tempfile.mkdtemp(prefix="nbtest-k8s-", dir=base)
        try:
            os.setxattr(d, "user.nbtest", b"1")
            os.removexattr(d, "user.nbtest")
        except OSError as e:
            print(f"{base}: no user xattrs ({e.strerror}), trying another directory")
            shutil.rmtree(d, True)
            continue
        atexit.register(shutil.rmtree, d, True)
        return d
    return None


def pod_dir(root, name):
    """The pod's cgroup directory in the kubelet's layout for it."""
    uid, qos, layout = PODS[name]
    level = {"Guaranteed": "", "Burstable": "burstable", "BestEffort": "besteffort"}[qos]
    if layout == "cgroupfs":
        return os.path.join(root, "kubepods", level, "pod" + uid)
    parent = os.path.join(root, "kubepods.slice", f"kubepods-{level}.slice" if level else "")
    prefix = f"kubepods-{level}-" if level else "kubepods-"
    return os.path.join(parent, f"{prefix}pod{uid.replace('-', '_')}.slice")


def make_tree(work):
    """The cgroup root, with every pod's directory but the symlink's (a link to a
    directory outside the root) and the pod not started yet (none). Returns the
    root and that outside directory."""
    root, outside = os.path.join(work, "cgroup"), os.path.join(work, "outside")
    os.makedirs(outside)
    for name in PODS:
        if name not in ("symlink", "not-started"):
            os.makedirs(pod_dir(root, name))
    os.symlink(outside, pod_dir(root, "symlink"))
    os.setxattr(pod_dir(root, "operator"), XATTR, b"advise")
    os.setxattr(pod_dir(root, "operator-first"), XATTR, b"off")
    return root, outside


def pod_json(name, mode, uid=None):
    """A pod of the API's PodList; mode None: no annotation at all."""
    p_uid, qos, _ = PODS.get(name, (None, "Burstable", None))
    meta = {"name": name, "namespace": "default", "uid": uid or p_uid}
    if mode is not None:
        meta["annotations"] = {"numabalanced.io/mode": mode, "other.example/key": "x"}
    return {"metadata": meta, "spec": {"nodeName": "node-a"}, "status": {"qosClass": qos}}


def round1_pods():
    modes = {"guaranteed": "place", "burstable": "balance", "besteffort": "advise", "cgroupfs": "balance",
             "operator": None, "overwritten": "balance", "operator-first": "balance", "invalid": "Balance",
             "none": None, "goes-invalid": "balance", "symlink": "balance", "not-started": "balance"}
    pods = [pod_json(n, m) for n, m in modes.items()]
    # UIDs with path tricks: refused before any path is made from them.
    pods.append(pod_json("dotdot", "balance", uid="../../outside"))
    pods.append(pod_json("upper", "balance", uid=PODS["burstable"][0].upper()))
    return pods


def round2_pods():
    modes = {"guaranteed": None, "burstable": "", "besteffort": "off", "cgroupfs": "balance",
             "operator": None, "overwritten": None, "operator-first": None, "invalid": "Balance",
             "none": None, "goes-invalid": "balance\n", "symlink": "balance"}
    return [pod_json(n, m) for n, m in modes.items()]


def run_agent(agent, root, pods, work, *extra):
    """One round of the agent on the pods: (exit status, stderr)."""
    path = os.path.join(work, "pods.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "PodList", "items": pods}, f)
    r = subprocess.run([sys.executable, agent, "--once", "--pods-file", path, "--cgroup-root", root,
                        "--xattr", XATTR, *extra], capture_output=True, text=True, timeout=60)
    print(r.stderr, end="")
    return r.returncode, r.stderr


def get(path, name=XATTR):
    """The xattr's value as text, or None: what getfattr would show."""
    try:
        return os.getxattr(path, name, follow_symlinks=False).decode()
    except OSError:
        return None


def expect(root, want, when):
    """Each pod's xattr and the agent's record of it, as expected."""
    for name, (value, ours) in want.items():
        d = pod_dir(root, name)
        check(get(d) == value, f"{when}: pod {name}: {XATTR} is {get(d)!r}, expected {value!r}")
        record = value if ours else None
        check(get(d, MARKER) == record, f"{when}: pod {name}: record {get(d, MARKER)!r}, expected {record!r}")


def check_rounds(agent, root, outside, work):
    rc, err = run_agent(agent, root, round1_pods(), work)
    check(rc == 0, f"round 1: exit {rc}")
    expect(root, {"guaranteed": ("place", True), "burstable": ("balance", True), "besteffort": ("advise", True),
                  "cgroupfs": ("balance", True), "operator": ("advise", False), "overwritten": ("balance", True),
                  "operator-first": ("off", False), "invalid": (None, False), "none": (None, False),
                  "goes-invalid": ("balance", True)}, "round 1")
    check(os.listxattr(outside) == [], f"round 1: the symlink's target outside the root got {os.listxattr(outside)}")
    check("'Balance'" in err and "invalid value" in err, "round 1: the invalid value is not logged")
    check("'../../outside'" in err and "not a UUID" in err, "round 1: the UID with '..' is not logged as refused")
    check("left alone" in err, "round 1: the operator's own value, kept, is not logged")

    # Between the rounds an operator sets their own value over one the agent set.
    os.setxattr(pod_dir(root, "overwritten"), XATTR, b"off")
    rc, err = run_agent(agent, root, round2_pods(), work)
    check(rc == 0, f"round 2: exit {rc}")
    expect(root, {"guaranteed": (None, False), "burstable": (None, False), "besteffort": ("off", True),
                  "cgroupfs": ("balance", True), "operator": ("advise", False), "overwritten": ("off", False),
                  "operator-first": ("off", False), "invalid": (None, False), "none": (None, False),
                  "goes-invalid": (None, False)}, "round 2")
    check(os.listxattr(outside) == [], "round 2: the symlink's target outside the root got an xattr")

    rc, err = run_agent(agent, root, round2_pods(), work)
    check(rc == 0 and "INFO" not in err, f"round 3, the same pods again: exit {rc}, and it changed something")


def check_functions(m, root):
    """pod_target() and its parts on pods the API should never send, and would."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        t = m.pod_target(pod_json("burstable", "balance"), fd)
        check(t.path == ("kubepods.slice", "kubepods-burstable.slice",
                         "kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000002.slice") and t.mode == "balance",
              f"burstable pod: {t}")
        t = m.pod_target(pod_json("cgroupfs", "advise"), fd)
        check(t.path == ("kubepods", "burstable", "pod" + PODS["cgroupfs"][0]) and t.mode == "advise",
              f"the cgroupfs driver's pod: {t}")
        t = m.pod_target(pod_json("guaranteed", "place"), fd)
        check(t.path is not None and t.path[1].startswith("kubepods-pod"), f"guaranteed pod: {t}")
        check(m.pod_target(pod_json("symlink", "balance"), fd).path is None, "a symlinked pod cgroup was followed")
        check(m.pod_target(pod_json("not-started", "balance"), fd).path is None, "a pod without a cgroup got a path")
        for bad in (["a list"], {"metadata": "x"}, {"metadata": {"uid": 5}}, {},
                    pod_json("burstable", "balance", uid="0a1b2c3d-0000-4000-8000-00000000000/"),
                    pod_json("burstable", "balance", uid=PODS["burstable"][0] + "\n")):
            t = m.pod_target(bad, fd)
            check(t.path is None and t.problem, f"pod {bad!r}: not refused: {t}")
        weird = pod_json("burstable", "balance")
        weird["status"]["qosClass"] = "Platinum"
        check(m.pod_target(weird, fd).path is None, "an unknown QoS class was given a path")
        for value in (5, ["balance"], "balance ", "BALANCE", "on"):
            t = m.pod_target(pod_json("burstable", value), fd)
            check(t.mode is None and "invalid" in t.problem, f"annotation {value!r}: {t}")
    finally:
        os.close(fd)


class FakeApi:
    """The agent's API client with its one request answered from pages here: the
    pagination and the bound on pods, without a server."""

    def __init__(self, m, pages):
        self.api = object.__new__(m.ApiServer)
        self.api.get = self.get
        self.pages, self.asked = pages, []

    def get(self, path):
        self.asked.append(path)
        return self.pages[len(self.asked) - 1]


def check_api_pages(m):
    """node_pods() follows "continue" across pages, asks for its node only, from the
    watch cache, and stops one pod past max_pods (so that the round can say there
    were more)."""
    pods = [pod_json("burstable", "balance") for _ in range(5)]
    pages = [{"items": pods[:2], "metadata": {"continue": "t1"}},
             {"items": pods[2:4], "metadata": {"continue": "t2"}}, {"items": pods[4:], "metadata": {}}]
    fake = FakeApi(m, pages)
    got = fake.api.node_pods("node-a", 100)
    check(len(got) == 5 and len(fake.asked) == 3, f"3 pages of 5 pods: {len(got)} pods in {len(fake.asked)} requests")
    check(all("fieldSelector=spec.nodeName%3Dnode-a" in a for a in fake.asked), f"not this node's pods: {fake.asked}")
    check("continue=t2" in fake.asked[2], f"the third request does not continue the second: {fake.asked[2]}")
    # The first from the watch cache; a continued list must not name a version.
    check("resourceVersion=0" in fake.asked[0] and not any("resourceVersion" in a for a in fake.asked[1:]),
          f"resourceVersion: {fake.asked}")
    fake = FakeApi(m, pages)
    got = fake.api.node_pods("node-a", 2)
    check(len(got) == 3 and len(fake.asked) == 2, f"max_pods 2: {len(got)} pods in {len(fake.asked)} requests")


def check_said_once(m, root):
    """A long-running agent says a pod's problem once while it lasts, and again when
    it comes back after it was gone."""
    class Count(logging.Handler):
        def __init__(self):
            super().__init__()
            self.n = 0

        def emit(self, record):
            self.n += record.levelno == logging.WARNING

    count = Count()
    m.log.addHandler(count)
    m.log.setLevel(logging.WARNING)
    agent = m.Agent(m.parse_args(["--pods-file", "-", "--cgroup-root", root, "--xattr", XATTR]))
    for mode in ("Balance", "Balance", "Balance", None, "Balance"):
        agent.round([pod_json("invalid", mode)])
    m.log.removeHandler(count)
    check(count.n == 2, f"an invalid annotation over 5 rounds, gone in the 4th: {count.n} warnings, expected 2")


def check_refusals(agent, root, work):
    """Usage errors, a file that is no PodList, and the bound on pods."""
    r = subprocess.run([sys.executable, agent, "--once", "--pods-file", "x", "--xattr", "user.other"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2, f"--xattr user.other: exit {r.returncode}, expected 2 (the daemon reads no such xattr)")
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write('{"kind": "Pod"}')
    r = subprocess.run([sys.executable, agent, "--once", "--pods-file", bad, "--cgroup-root", root,
                        "--xattr", XATTR], capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "not a PodList" in r.stderr, f"not a PodList: exit {r.returncode}, {r.stderr!r}")
    rc, err = run_agent(agent, root, round2_pods(), work, "--max-pods", "2")
    check(rc == 0 and "more than --max-pods 2" in err, f"--max-pods 2 with 11 pods: exit {rc}, not said")


def main():
    root_src = sys.argv[1]
    build_dir = sys.argv[2] if len(sys.argv) > 2 else None
    agent, module = load_agent(root_src)
    work = xattr_dir(build_dir)
    if work is None:
        nbtest.skip("no directory on a file system with user xattrs: "
                    "tried the temporary directory, the build directory, /var/tmp and /dev/shm")
    print(f"fake cgroup tree in {work}")
    root, outside = make_tree(work)
    check_functions(module, root)
    check_api_pages(module)
    check_said_once(module, root)
    check_rounds(agent, root, outside, work)
    check_refusals(agent, root, work)
    return nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
