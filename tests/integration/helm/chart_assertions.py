#!/usr/bin/env python3
"""Assertions on the manifests `helm template` rendered for one values scenario.

usage: chart_assertions.py RENDERED.yaml VALUES.yaml SCENARIO RELEASE NAMESPACE

Checks the operator pod's security settings, its flags, that the RBAC bound to its
ServiceAccount grants every verb in operator-rbac.json the scenario needs and nothing else, the
PodDisruptionBudget / leader election / ServiceMonitor wiring, and that namespaced objects carry
their namespace. Prints one "ok"/"FAIL" line per check and "N passed, N failed".
"""
import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CHART = os.path.join(HERE, "..", "..", "..", "charts", "korovod-operator")

# The flags korovod-operator accepts (docs/install.md, "Operator flags").
KNOWN_FLAGS = {
    "kubeconfig", "master", "namespace", "threadiness", "monitoring-port", "health-port",
    "gang-scheduling", "leader-elect", "lock-namespace", "kube-api-qps", "kube-api-burst",
    "controller-queue-rate-limit", "controller-queue-burst", "cluster-domain", "log-format",
    "log-level", "network-profile", "worker-create-concurrency", "version", "help",
    "network-policy", "network-policy-scraper-namespace", "network-policy-scraper-labels",
    "profiles-config-map", "progress-interval",
}
NAMESPACED_KINDS = {"Deployment", "ServiceAccount", "Service", "Role", "RoleBinding",
                    "PodDisruptionBudget", "ServiceMonitor", "ConfigMap", "Secret"}

passed = 0
failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}" + (f": {detail}" if detail else ""))
    return cond


def deep_merge(base, over):
    out = dict(base)
    for k, v in (over or {}).items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def one(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    return found[0] if len(found) == 1 else None


def parse_args(args):
    flags = {}
    for a in args:
        if not a.startswith("--"):
            continue
        name, eq, value = a[2:].partition("=")
        flags.setdefault(name, []).append(value if eq else None)
    return flags


def check_security(dep):
    spec = dep["spec"]["template"]["spec"]
    psc = spec.get("securityContext") or {}
    check(psc.get("runAsNonRoot") is True, "pod securityContext.runAsNonRoot: true")
    check((psc.get("seccompProfile") or {}).get("type") == "RuntimeDefault",
          "pod securityContext.seccompProfile: RuntimeDefault")
    check(isinstance(psc.get("runAsUser"), int) and psc["runAsUser"] != 0, "pod runs as a non-zero uid")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        check(not spec.get(key), f"no {key}")
    for c in spec.get("initContainers", []) + spec["containers"]:
        sc = c.get("securityContext") or {}
        name = c["name"]
        check(sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, f"{name}: runAsNonRoot")
        check(sc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem: true")
        check(sc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation: false")
        check(not sc.get("privileged"), f"{name}: not privileged")
        caps = sc.get("capabilities") or {}
        check("ALL" in (caps.get("drop") or []), f"{name}: capabilities drop ALL")
        check(not caps.get("add"), f"{name}: no capabilities added", str(caps.get("add")))
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        check(seccomp == "RuntimeDefault", f"{name}: seccomp RuntimeDefault")
        mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
        check("/tmp" in mounts, f"{name}: writable /tmp on the read-only root filesystem")


def check_flags(dep, values, ns, leader):
    c = dep["spec"]["template"]["spec"]["containers"][0]
    flags = parse_args(c.get("args", []))
    unknown = sorted(set(flags) - KNOWN_FLAGS)
    check(not unknown, "every argument is a known operator flag", ", ".join(unknown))
    op = values["operator"]

    def first(name):
        return (flags.get(name) or [None])[0]

    expect = {
        "threadiness": op["threadiness"], "kube-api-qps": op["kubeApiQps"],
        "kube-api-burst": op["kubeApiBurst"],
        "controller-queue-rate-limit": op["controllerQueueRateLimit"],
        "controller-queue-burst": op["controllerQueueBurst"],
        "worker-create-concurrency": op["workerCreateConcurrency"],
        "network-profile": op["networkProfile"], "log-format": op["logFormat"],
        "log-level": op["logLevel"], "health-port": values["ports"]["health"],
        "monitoring-port": values["ports"]["metrics"], "lock-namespace": ns,
        "leader-elect": "true" if leader else "false",
        "network-policy": values["networkPolicy"]["mode"],
    }
    for name, want in expect.items():
        check(first(name) == str(want), f"--{name}={want}", f"got {flags.get(name)}")
    watch = values["watchNamespaces"]
    if watch:
        check(first("namespace") == ",".join(watch), f"--namespace={','.join(watch)}", str(flags.get("namespace")))
    else:
        check("namespace" not in flags, "no --namespace (all namespaces)", str(flags.get("namespace")))
    for flag, key in (("gang-scheduling", "gangScheduling"), ("cluster-domain", "clusterDomain")):
        if op[key]:
            check(first(flag) == op[key], f"--{flag}={op[key]}", str(flags.get(flag)))
        else:
            check(flag not in flags, f"no --{flag} when unset", str(flags.get(flag)))
    scraper = values["networkPolicy"]["scraper"]
    if scraper["namespace"]:
        check(first("network-policy-scraper-namespace") == scraper["namespace"],
              f"--network-policy-scraper-namespace={scraper['namespace']}", str(flags.get("network-policy-scraper-namespace")))
    else:
        check("network-policy-scraper-namespace" not in flags, "no scraper namespace when unset")
    labels = ",".join(f"{k}={v}" for k, v in sorted(scraper["podLabels"].items()))
    if labels:
        check(first("network-policy-scraper-labels") == labels, f"--network-policy-scraper-labels={labels}",
              str(flags.get("network-policy-scraper-labels")))
    else:
        check("network-policy-scraper-labels" not in flags, "no scraper labels when unset")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check(ports.get("health") == values["ports"]["health"], "health port declared")
    check(ports.get("metrics") == values["ports"]["metrics"], "metrics port declared")
    lp, rp = c.get("livenessProbe", {}).get("httpGet", {}), c.get("readinessProbe", {}).get("httpGet", {})
    check(lp.get("path") == "/healthz" and lp.get("port") == "health", "liveness probe GET /healthz on the health port")
    check(rp.get("path") == "/readyz" and rp.get("port") == "health", "readiness probe GET /readyz on the health port")


def sa_rules(docs, sa_name, sa_ns):
    """[(namespace or None for cluster-wide, rule)] granted to the ServiceAccount."""
    roles = {("ClusterRole", None, d["metadata"]["name"]): d for d in docs if d["kind"] == "ClusterRole"}
    roles.update({("Role", d["metadata"].get("namespace"), d["metadata"]["name"]): d
                  for d in docs if d["kind"] == "Role"})
    grants = []
    for b in docs:
        if b["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name and s.get("namespace") == sa_ns
                   for s in b.get("subjects", [])):
            continue
        ref = b["roleRef"]
        bns = b["metadata"].get("namespace") if b["kind"] == "RoleBinding" else None
        key = (ref["kind"], bns if ref["kind"] == "Role" else None, ref["name"])
        role = roles.get(key)
        check(role is not None, f"{b['kind']} {b['metadata']['name']} refers to a rendered {ref['kind']} {ref['name']}")
        for rule in (role or {}).get("rules", []):
            grants.append((bns, rule))
    return grants


def rule_grants(rule, group, resource, verb, name=None):
    if group not in rule.get("apiGroups", []) or resource not in rule.get("resources", []):
        return False
    if verb not in rule.get("verbs", []):
        return False
    names = rule.get("resourceNames")
    return not names or (name is not None and name in names)


def condition_holds(when, leader, gang, network_policy="off", profiles=False, progress=True):
    if not when:
        return True
    if when == "progress":
        return progress
    if when == "profiles":
        return profiles
    if when == "networkPolicy":
        return network_policy != "off"
    if when == "leaderElect":
        return leader
    if when == "gang=volcano":
        return gang == "volcano"
    if when == "gang=plugins":
        return bool(gang) and gang != "volcano"
    raise ValueError(f"unknown condition {when!r} in operator-rbac.json")


def check_rbac(docs, values, ns, sa_name, leader, profiles_cm=None):
    with open(os.path.join(HERE, "operator-rbac.json")) as f:
        required = json.load(f)["rules"]
    gang = values["operator"]["gangScheduling"]
    scope = values["rbac"]["scope"]
    watch = values["watchNamespaces"]
    grants = sa_rules(docs, sa_name, ns)
    check(grants, "some RBAC is bound to the operator's ServiceAccount")
    for _, rule in grants:
        for field in ("apiGroups", "resources", "verbs"):
            check("*" not in rule.get(field, []), f"no wildcard {field} in {rule.get('resources')}")
        check(not rule.get("nonResourceURLs"), "no nonResourceURLs")
    crd_names = ["mpijobs.kubeflow.org"]
    if gang:
        crd_names.append("podgroups.scheduling.volcano.sh" if gang == "volcano" else "podgroups.scheduling.x-k8s.io")

    def granted(target_ns, group, resource, verb, name=None):
        return any((gns is None or gns == target_ns) and rule_grants(r, group, resource, verb, name)
                   for gns, r in grants if target_ns is not None or gns is None)

    needed = set()
    for entry in required:
        if not condition_holds(entry.get("when"), leader, gang, values["networkPolicy"]["mode"],
                               bool(values["profiles"]), float(values["operator"].get("progressInterval", 0)) > 0):
            continue
        group, res = entry["group"], entry["resource"]
        if entry["scope"] == "cluster":
            targets = [None]
        elif entry["scope"] == "lock":
            targets = [ns]
        else:
            targets = watch if watch else [None]
        names = [profiles_cm if n == "<profiles-config-map>" else n
                 for n in entry.get("resourceNames", []) if n in crd_names or n == "<profiles-config-map>"] or [None]
        for verb in entry["verbs"]:
            needed.add((group, res, verb))
            for t in targets:
                for n in names:
                    where = "cluster-wide" if t is None else f"in {t}"
                    check(granted(t, group, res, verb, n),
                          f"RBAC grants {verb} {res}{'/' + n if n else ''} ({group or 'core'}) {where}")
    # Least privilege: nothing the operator does not use, and nothing cluster-wide in namespaced mode.
    extra = set()
    for gns, rule in grants:
        for g in rule.get("apiGroups", []):
            for r in rule.get("resources", []):
                for v in rule.get("verbs", []):
                    if (g, r, v) not in needed:
                        extra.add(f"{v} {r} ({g or 'core'})")
        if scope == "namespaced" and gns is None:
            cluster_scoped = {"priorityclasses", "customresourcedefinitions"}
            check(set(rule.get("resources", [])) <= cluster_scoped,
                  f"namespaced mode: only cluster-scoped reads are granted cluster-wide ({rule.get('resources')})")
        if rule.get("resources") == ["customresourcedefinitions"]:
            check(bool(rule.get("resourceNames")), "CRD access is limited by resourceNames")
    check(not extra, "RBAC grants nothing beyond operator-rbac.json for this scenario", ", ".join(sorted(extra)))
    if scope == "namespaced":
        role_ns = sorted(d["metadata"]["namespace"] for d in docs if d["kind"] == "Role"
                         and not d["metadata"]["name"].endswith(("-leader-election", "-profiles")))
        check(role_ns == sorted(watch), f"one workload Role per watched namespace {watch}", str(role_ns))


def check_profiles(docs, values, ns, dep, cm_name):
    """The admin profiles (docs/profiles.md): ConfigMap, flag, admission policy and binding."""
    profiles = values["profiles"] or {}
    args = parse_args(dep["spec"]["template"]["spec"]["containers"][0].get("args", []))
    cms = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == cm_name]
    policies = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
    bindings = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    if not profiles:
        check(not cms and not policies and not bindings and "profiles-config-map" not in args,
              "no profiles: no profiles ConfigMap, admission policy or --profiles-config-map")
        return
    check(args.get("profiles-config-map") == [f"{ns}/{cm_name}"], f"--profiles-config-map={ns}/{cm_name}",
          str(args.get("profiles-config-map")))
    if not check(len(cms) == 1, f"one ConfigMap {cm_name}"):
        return
    data = cms[0].get("data") or {}
    check(sorted(data) == sorted(profiles), "one ConfigMap key per profile", str(sorted(data)))
    for name, want in profiles.items():
        check(json.loads(data.get(name, "null")) == want, f"profile {name} is its values as JSON", data.get(name))
    want_policy = values["profileAdmissionPolicy"]["enabled"]
    check(len(policies) == (1 if want_policy else 0) and len(bindings) == len(policies),
          f"admission policy and binding {'rendered' if want_policy else 'absent'}")
    if not policies or not bindings:
        return
    pol, bind = policies[0], bindings[0]
    # The names as a CEL list literal, no paramKind (kubernetes/kubernetes#130887).
    names = {v["name"]: v["expression"] for v in pol["spec"].get("variables", [])}.get("profiles")
    check(names is not None and json.loads(names) == sorted(profiles),
          "policy lists the profile names, sorted", str(names))
    check("paramKind" not in pol["spec"] and "paramRef" not in bind["spec"], "policy takes no params")
    check(bind["spec"]["policyName"] == pol["metadata"]["name"], "binding names the policy")
    check(bind["spec"]["validationActions"] == ["Deny"], "binding denies")
    watch = values["watchNamespaces"]
    sel = bind["spec"].get("matchResources", {}).get("namespaceSelector", {}).get("matchExpressions", [])
    got = sel[0]["values"] if sel else []
    check(sorted(got) == sorted(watch), f"binding limited to watchNamespaces {watch}", str(got))


def labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def main():
    rendered, values_file, scenario, release, ns = sys.argv[1:6]
    docs = load(rendered)
    with open(os.path.join(CHART, "values.yaml")) as f:
        defaults = yaml.safe_load(f)
    with open(values_file) as f:
        values = deep_merge(defaults, yaml.safe_load(f) or {})
    print(f"== scenario {scenario}: {len(docs)} objects")
    for d in docs:
        meta = d.get("metadata", {})
        if d["kind"] in NAMESPACED_KINDS:
            check(bool(meta.get("namespace")), f"{d['kind']} {meta.get('name')} names its namespace")
        labels = meta.get("labels") or {}
        check(labels.get("app.kubernetes.io/instance") == release and "app.kubernetes.io/name" in labels,
              f"{d['kind']} {meta.get('name')} carries the release labels")

    dep = one(docs, "Deployment")
    if not check(dep is not None, "exactly one Deployment"):
        return
    check(dep["metadata"]["namespace"] == ns, f"Deployment in the release namespace {ns}")
    replicas = values["replicaCount"]
    leader = bool(values["leaderElection"]["enabled"]) or replicas > 1
    check(dep["spec"]["replicas"] == replicas, f"replicas: {replicas}")
    check(dep["spec"]["strategy"]["type"] == ("RollingUpdate" if leader else "Recreate"),
          "Recreate without leader election, RollingUpdate with it")
    pod = dep["spec"]["template"]
    check(labels_match(dep["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"]),
          "Deployment selector matches its pod template")
    check_security(dep)
    check_flags(dep, values, ns, leader)

    sa = one(docs, "ServiceAccount")
    check(sa is not None, "one ServiceAccount")
    sa_name = pod["spec"].get("serviceAccountName")
    check(sa is not None and sa["metadata"]["name"] == sa_name, "the pod runs as the chart's ServiceAccount")
    profiles_cm = dep["metadata"]["name"] + "-profiles"
    check_rbac(docs, values, ns, sa_name, leader, profiles_cm)
    check_profiles(docs, values, ns, dep, profiles_cm)

    pdb = one(docs, "PodDisruptionBudget")
    if replicas > 1:
        if check(pdb is not None, "PodDisruptionBudget when replicas > 1"):
            check(pdb["spec"].get("minAvailable") == 1, "PDB minAvailable: 1")
            check(labels_match(pdb["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"]),
                  "PDB selects the operator pods")
    else:
        check(pdb is None, "no PodDisruptionBudget for one replica")
    leases = [d for d in docs if d["kind"] == "Role" and any("leases" in r.get("resources", []) for r in d["rules"])]
    check(bool(leases) == leader, f"Lease RBAC {'present' if leader else 'absent'} with leader election {'on' if leader else 'off'}")

    svc = [d for d in docs if d["kind"] == "Service"]
    check(len(svc) == 1, "one metrics Service")
    if svc:
        s = svc[0]
        check(labels_match(s["spec"]["selector"], pod["metadata"]["labels"]), "metrics Service selects the operator pods")
        check(any(p["name"] == "metrics" and p["targetPort"] == "metrics" for p in s["spec"]["ports"]),
              "metrics Service port 'metrics' targets the container port 'metrics'")
    sm = one(docs, "ServiceMonitor")
    want_sm = values["metrics"]["serviceMonitor"]["enabled"]
    check((sm is not None) == bool(want_sm), f"ServiceMonitor {'rendered' if want_sm else 'absent'}")
    if sm and svc:
        check(labels_match(sm["spec"]["selector"]["matchLabels"], svc[0]["metadata"]["labels"]),
              "ServiceMonitor selects the metrics Service")
        check(sm["spec"]["endpoints"][0]["port"] == "metrics" and sm["spec"]["endpoints"][0]["path"] == "/metrics",
              "ServiceMonitor scrapes port 'metrics' at /metrics")
        for k, v in (values["metrics"]["serviceMonitor"].get("labels") or {}).items():
            check(sm["metadata"]["labels"].get(k) == v, f"ServiceMonitor label {k}={v}")


if __name__ == "__main__":
    main()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
