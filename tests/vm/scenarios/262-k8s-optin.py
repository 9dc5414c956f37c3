# SPDX-License-Identifier: GPL-2.0-or-later
"""A Kubernetes pod opted in by its annotation: the agent sets the xattr, the daemon balances it.

No cluster runs here, so the kubelet's part is played by hand: the cgroup tree the
kubelet makes with the systemd driver for a Burstable pod
(/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID>.slice/
cri-containerd-<ID>.scope, root's, as the kubelet leaves it), a container process in
the scope that is not root (uid 65534, as a container's user), 128 MiB first-touched
on node 0 with its thread on node 1; and the API server's part by a PodList file. The
agent (contrib/kubernetes/numabalanced-k8s-optin --once --pods-file) reads the pod's
annotation numabalanced.io/mode: balance and sets trusted.numabalanced on the pod's
cgroup; the daemon (under the unit with --shipped) makes the container's memory 95%
local within 120 s. With the annotation gone the agent removes the xattr it set, and
explain says the process is no longer opted in."""
import json
import os
import subprocess
import time

import shipped
from scenario import check, copy_for_any_user, fail, sh, sysctl_numa_balancing, wait_local

UID = "5f1e2d3c-0000-4000-8000-00000000c0de"
POD = f"/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID.replace('-', '_')}.slice"
SCOPE = POD + "/cri-containerd-" + "ab" * 32 + ".scope"
AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "contrib", "kubernetes",
                     "numabalanced-k8s-optin")


def pod_list(path, mode):
    meta = {"name": "db-0", "namespace": "default", "uid": UID}
    if mode:
        meta["annotations"] = {"numabalanced.io/mode": mode}
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "PodList",
                   "items": [{"metadata": meta, "spec": {"nodeName": "node-a"}, "status": {"qosClass": "Burstable"}}]},
                  f)


def agent(env, pods):
    r = subprocess.run(["python3", AGENT, "--once", "--pods-file", pods, "--cgroup-root", "/sys/fs/cgroup"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"the agent failed: {r.returncode} {r.stderr}")
    return r.stderr


def xattr(path):
    try:
        return os.getxattr(path, "trusted.numabalanced").decode()
    except OSError:
        return None


def run(env, res):
    sysctl_numa_balancing(0)
    for d in (POD.rsplit("/", 2)[0], POD.rsplit("/", 1)[0], POD, SCOPE):
        os.makedirs(d, exist_ok=True)
        env.cgroups.append(d)
    env.start_daemon()
    ready = os.path.join(shipped.tenant_tmp(), f"k8s-ready.{time.time_ns()}")

    def enter():
        with open(os.path.join(SCOPE, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    p = subprocess.Popen([*shipped.AS_TENANT, copy_for_any_user(env.workload), "128", "0", "1", "default", "1", ready],
                         preexec_fn=enter, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    env.procs.append(p)
    deadline = time.time() + 120
    while not os.path.exists(ready):
        if p.poll() is not None or time.time() >= deadline:
            fail(f"the container's workload did not start: {p.stderr.read().decode() if p.poll() is not None else ''}")
        time.sleep(0.2)
    check(os.stat(f"/proc/{p.pid}").st_uid == shipped.TENANT_UID, "the container's process is not the tenant's")

    pods = env.tmp_path("pods.json")
    pod_list(pods, "balance")
    agent(env, pods)
    res["xattr_after_annotation"] = xattr(POD)
    check(xattr(POD) == "balance", f"the agent did not opt the pod in: {xattr(POD)}")
    t = wait_local(env, p.pid, 0.95, 120)
    res["seconds_to_95pct_local"] = t
    check(t is not None, f"the pod's container not 95% local within 120 s: {env.show(p.pid)['local_share']}")
    ex = json.loads(sh(env.ctl, "explain", "--json", str(p.pid)).stdout)
    check(ex.get("watched") and ex.get("mode") == "balance", f"explain of the container's process: {ex}")

    pod_list(pods, None)
    agent(env, pods)
    res["xattr_after_removal"] = xattr(POD)
    check(xattr(POD) is None, f"the agent left its xattr after the annotation went: {xattr(POD)}")
    deadline = time.time() + 30
    while time.time() < deadline:
        ex = json.loads(sh(env.ctl, "explain", "--json", str(p.pid), check_rc=False).stdout)
        if not ex.get("watched"):
            break
        time.sleep(0.5)
    res["explain_after_removal"] = ex.get("why")
    check(not ex.get("watched"), f"the process is still watched once the annotation went: {ex}")
    env.stop_daemon()
