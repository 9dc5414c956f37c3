#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""contrib/kubernetes/: every YAML document of its *.yaml files validates against the
Kubernetes OpenAPI schemas (kubernetes-validate, strict: an unknown field fails too),
for Kubernetes 1.30 and the newest release the pinned package bundles, with no
network; a deliberately broken copy fails the same check. The DaemonSet gives the
daemon what it needs (the host's PID namespace and cgroup namespace, /sys, the cgroup
tree, bpffs, its state directory, the drop-in as a root-owned file, no CPU limit), its
liveness probe is a numabalancectl command that exists, the agent's flags are ones it
takes, the RBAC reads pods and nothing else; and the ConfigMap's drop-in passes
`numabalanced --check-config` beside the shipped numabalanced.conf (that part is
skipped, saying so, without NUMABALANCED).

    test-k8s-manifests.py SOURCE_ROOT [NUMABALANCED]

kubernetes-validate lives in the project's .venv/ (scripts/setup installs it): run
under another Python, the test runs itself again with .venv/bin/python3. Skipped (77)
when neither has it.
"""
import copy
import glob
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import nbtest  # noqa: E402
from nbtest import check  # noqa: E402

FLOOR_VERSION = "1.30"          # the oldest release the manifests are checked against
REEXEC = "NBTEST_K8S_VENV"      # set when the test runs itself again under .venv/
PLACEHOLDER = re.compile(r"^registry\.example/numabalanced:VERSION$")


def import_validator(root):
    """kubernetes_validate and yaml, running this test again under .venv/'s Python
    when this one lacks them; None when neither has them."""
    try:
        import kubernetes_validate
        import yaml
        return kubernetes_validate, yaml
    except ImportError:
        pass
    venv_python = os.path.join(root, ".venv", "bin", "python3")
    if not os.environ.get(REEXEC) and os.access(venv_python, os.X_OK):
        os.environ[REEXEC] = "1"
        os.execv(venv_python, [venv_python, os.path.abspath(__file__), *sys.argv[1:]])
    return None


def load_docs(yaml, path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def schema_errors(kv, yaml, path, version):
    """What the schemas of that Kubernetes release say against the file's documents
    (strict: unknown fields are errors); a kind with no schema is one too."""
    errors = []
    try:
        docs = load_docs(yaml, path)
    except yaml.YAMLError as e:
        return [f"{path}: not YAML: {e}"]
    for d in docs:
        what = f"{os.path.basename(path)}: {d.get('kind')}/{d.get('metadata', {}).get('name')} ({version})"
        try:
            kv.validate(d, version, strict=True)
        except kv.ValidationError as e:
            errors.append(f"{what}: {'.'.join(str(p) for p in e.path)}: {e.message}")
        except kv.SchemaNotFoundError as e:
            errors.append(f"{what}: {e.message}")
    return errors


def check_schemas(kv, yaml, files, work):
    """Each file validates; a broken copy of the DaemonSet's file does not, for each
    way of breaking it (a misspelt field, a wrong type, a required field gone)."""
    versions = [FLOOR_VERSION, kv.utils.latest_version()]
    for path in files:
        for v in versions:
            errors = schema_errors(kv, yaml, path, v)
            check(not errors, "\n  ".join([f"{path} does not validate against Kubernetes {v}:"] + errors))
        print(f"{os.path.basename(path)}: {len(load_docs(yaml, path))} documents valid against "
              f"Kubernetes {' and '.join(versions)}")
    main = os.path.join(os.path.dirname(files[0]), "numabalanced.yaml")
    text = open(main).read()
    breakages = {"misspelt field": ("hostPID: true", "hostPid: true"),
                 "wrong type": ("terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: thirty"),
                 "required field gone": ("      containers:\n", "      initContainers:\n")}
    for what, (good, bad) in breakages.items():
        check(good in text, f"the broken copy ({what}): {good!r} not in {main}")
        broken = os.path.join(work, "broken.yaml")
        with open(broken, "w") as f:
            f.write(text.replace(good, bad, 1))
        errors = schema_errors(kv, yaml, broken, FLOOR_VERSION)
        check(errors, f"a broken copy ({what}: {bad.strip()!r}) passed the schema check")
        print(f"broken copy, {what}: refused ({errors[0] if errors else 'NOT refused'})")


def by_kind(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    check(len(found) == 1, f"{len(found)} {kind} documents, expected 1")
    return found[0] if found else {}


def mounts_of(pod, container):
    """{mountPath: (the volume, the mount)} of a container."""
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    return {m["mountPath"]: (vols.get(m["name"], {}), m) for m in container.get("volumeMounts", [])}


def check_host_mounts(mounts):
    """The host paths the daemon reads (and writes: DAMON's sysfs, its state) at the
    same paths in its container, writable where the daemon writes."""
    for path in ("/sys", "/sys/fs/cgroup", "/sys/fs/bpf", "/run/numabalanced"):
        vol, m = mounts.get(path, ({}, {}))
        check(vol.get("hostPath", {}).get("path") == path, f"the daemon's {path} is not the host's: {vol}")
        check(not m.get("readOnly"), f"the daemon's {path} is read-only")


def check_config_mount(mounts, cm):
    """The drop-in: a file of /etc/numabalanced.conf.d (subPath, so a regular file that
    only root may write, not the ConfigMap volume's world-writable directory)."""
    drop = [(p, v, m) for p, (v, m) in mounts.items() if p.startswith("/etc/numabalanced.conf.d/")]
    check(len(drop) == 1, f"no single drop-in mounted in /etc/numabalanced.conf.d: {sorted(mounts)}")
    for path, vol, m in drop:
        check(path.endswith(".conf") and m.get("subPath") == os.path.basename(path),
              f"{path}: not a subPath mount of a .conf key: {m}")
        check(vol.get("configMap", {}).get("name") == cm["metadata"]["name"], f"{path}: not the ConfigMap: {vol}")
        check(m.get("subPath") in cm.get("data", {}), f"{path}: the ConfigMap has no key {m.get('subPath')}")
        check(vol.get("configMap", {}).get("defaultMode", 0o644) & 0o022 == 0, f"{path}: writable by group or others")


def ctl_commands(root):
    """The commands numabalancectl sends to the daemon (ctl/numabalancectl.c)."""
    text = open(os.path.join(root, "ctl", "numabalancectl.c")).read()
    return set(re.findall(r'\{ "([a-z]+)", CONTROL_[A-Z]+ \}', text))


def check_daemon(root, pod, c, cm):
    script = " ".join(c.get("command", []) + c.get("args", []))
    check(pod.get("hostPID") is True, "no hostPID: the daemon would see only its own /proc")
    check("nsenter --cgroup=/proc/1/ns/cgroup" in script and re.search(r"\bnumabalanced\b\s*$", script),
          f"the daemon does not run in the host's cgroup namespace: {script!r}")
    check(c.get("securityContext", {}).get("privileged") is True, "the daemon's container is not privileged")
    res = c.get("resources", {})
    check("cpu" not in res.get("limits", {}), "a CPU limit: a CFS quota would throttle move_pages(2) mid-batch")
    check("memory" in res.get("limits", {}), "no memory limit (the unit's MemoryMax=256M)")
    probe = c.get("livenessProbe", {}).get("exec", {}).get("command", [])
    known = ctl_commands(root)
    check(len(known) >= 3, f"numabalancectl's daemon commands not found in ctl/numabalancectl.c: {known}")
    check(probe[:1] == ["numabalancectl"] and len(probe) == 2 and probe[1] in known,
          f"the liveness probe is not a numabalancectl command ({sorted(known)}): {probe}")
    mounts = mounts_of(pod, c)
    check_host_mounts(mounts)
    check_config_mount(mounts, cm)


def load_agent(root):
    path = os.path.join(root, "contrib", "kubernetes", "numabalanced-k8s-optin")
    sys.dont_write_bytecode = True
    loader = importlib.machinery.SourceFileLoader("k8s_optin", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("k8s_optin", loader))
    loader.exec_module(module)
    return module


def check_agent(root, pod, c):
    """The agent's command line is one it takes, on the host's cgroup tree, with the
    node's name from the downward API and trusted.numabalanced."""
    argv = c.get("command", []) + c.get("args", [])
    check(argv[:1] == ["numabalanced-k8s-optin"], f"the agent's command: {argv}")
    env = {e["name"]: e for e in c.get("env", [])}
    check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
          "NODE_NAME is not the pod's spec.nodeName")
    os.environ["NODE_NAME"] = "node-a"
    try:
        args = load_agent(root).parse_args(argv[1:])
    except SystemExit:
        nbtest.require(False, f"the agent refuses the DaemonSet's arguments: {argv[1:]}")
    check(args.xattr == "trusted.numabalanced", f"the agent sets {args.xattr}")
    vol, m = mounts_of(pod, c).get(args.cgroup_root, ({}, {}))
    check(vol.get("hostPath", {}).get("path") == "/sys/fs/cgroup" and not m.get("readOnly"),
          f"--cgroup-root {args.cgroup_root} is not the host's cgroup tree, writable: {vol} {m}")
    caps = c.get("securityContext", {}).get("capabilities", {})
    check(caps.get("add") == ["SYS_ADMIN"] and caps.get("drop") == ["ALL"],
          f"the agent's capabilities: {caps} (trusted.* needs CAP_SYS_ADMIN, and nothing else is needed)")


def check_rbac(docs, ds):
    """The pod's service account may get, list and watch pods, and nothing more."""
    sa, role = by_kind(docs, "ServiceAccount"), by_kind(docs, "ClusterRole")
    binding = by_kind(docs, "ClusterRoleBinding")
    pod = ds["spec"]["template"]["spec"]
    check(pod.get("serviceAccountName") == sa["metadata"]["name"], "the pod does not run as the ServiceAccount")
    rules = role.get("rules", [])
    check(rules == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
          f"the ClusterRole is not read-only on pods: {rules}")
    check(binding["roleRef"]["name"] == role["metadata"]["name"] and
          binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                   "namespace": sa["metadata"]["namespace"]}], "the binding binds something else")


def check_daemonset(root, docs):
    ns, cm, ds = by_kind(docs, "Namespace"), by_kind(docs, "ConfigMap"), by_kind(docs, "DaemonSet")
    name = ns["metadata"]["name"]
    for d in docs:
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            check(d["metadata"].get("namespace") == name, f"{d['kind']} not in namespace {name}")
    check(ds["spec"]["updateStrategy"]["rollingUpdate"].get("maxSurge") == 0, "maxSurge is not 0: two daemons a node")
    pod = ds["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    check(set(containers) == {"numabalanced", "optin"}, f"containers: {sorted(containers)}")
    for c in containers.values():
        check(PLACEHOLDER.match(c["image"]), f"{c['name']}: image {c['image']} is not the marked placeholder")
    check_daemon(root, pod, containers.get("numabalanced", {}), cm)
    check_agent(root, pod, containers.get("optin", {}))
    check_rbac(docs, ds)
    return cm


def write_config(work, root, dropins):
    """The image's configuration: the shipped numabalanced.conf and a .d directory
    with the drop-ins, owned by this user and writable by it alone, as the daemon
    requires. Returns the main file's path."""
    main = os.path.join(work, "numabalanced.conf")
    shutil.copyfile(os.path.join(root, "conf", "numabalanced.conf"), main)
    os.chmod(main, 0o644)
    d = main + ".d"
    shutil.rmtree(d, True)
    os.mkdir(d, 0o755)
    for name, text in dropins.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(d, name), 0o644)
    return main


def check_config(root, daemon, cm, work):
    """The ConfigMap's drop-in passes numabalanced --check-config; the same with a
    broken line does not (the check is not one that passes anything)."""
    dropins = {k: v for k, v in cm.get("data", {}).items() if k.endswith(".conf")}
    check(dropins, "the ConfigMap holds no .conf drop-in")
    text = "".join(dropins.values())
    check(re.search(r"^service_cpus\s*=\s*\S", text, re.M), "the drop-in sets no service_cpus")
    check("reservedSystemCPUs" in text, "the drop-in does not say the service CPUs must be in reservedSystemCPUs")
    if not daemon or not os.access(daemon, os.X_OK):
        print(f"SKIP (this part only): no numabalanced binary given ({daemon!r}): "
              "the drop-in is not run through --check-config")
        return
    for broken in (False, True):
        extra = {"99-broken.conf": "[daemon]\nservice_cpus = banana\n"} if broken else {}
        main = write_config(work, root, {**dropins, **extra})
        r = subprocess.run([daemon, "--check-config", main], capture_output=True, text=True, timeout=60)
        if broken:
            check(r.returncode != 0 and "service_cpus" in r.stderr, f"a broken drop-in passed: {r.stdout}{r.stderr}")
        else:
            check(r.returncode == 0 and "configuration OK" in r.stdout,
                  f"the ConfigMap's drop-in: numabalanced --check-config: exit {r.returncode}: {r.stdout}{r.stderr}")
    print(f"numabalanced --check-config: the ConfigMap's {', '.join(dropins)} accepted, a broken one refused")


def main():
    root = os.path.abspath(sys.argv[1])
    daemon = sys.argv[2] if len(sys.argv) > 2 else None
    found = import_validator(root)
    if found is None:
        nbtest.skip("kubernetes-validate is not installed, here nor in .venv/ (scripts/setup installs it)")
    kv, yaml = found
    files = sorted(glob.glob(os.path.join(root, "contrib", "kubernetes", "*.yaml")))
    nbtest.require(files, "no contrib/kubernetes/*.yaml")
    work = nbtest.tmpdir("test-k8s-manifests-")
    check_schemas(kv, yaml, files, work)
    docs = [d for f in files for d in load_docs(yaml, f)]
    cm = check_daemonset(root, copy.deepcopy(docs))
    check_config(root, daemon, cm, work)
    return nbtest.finish()


if __name__ == "__main__":
    sys.exit(main())
