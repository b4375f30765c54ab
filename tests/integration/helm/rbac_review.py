#!/usr/bin/env python3
"""Asks the real kube-apiserver's authorizer, through SubjectAccessReviews, whether a
ServiceAccount may do every verb operator-rbac.json lists (where the operator needs it) and may
not do the things given with --deny. A SubjectAccessReview names group, resource, subresource and
name exactly, also for resources the server does not serve yet (the MPIJob and PodGroup CRDs
need not be installed), which `kubectl auth can-i` cannot.

usage: rbac_review.py --kubectl PATH --namespace SA_NS --sa NAME [--leader] [--gang G]
                      [--watched NS,NS] [--network-policy] [--profiles CONFIGMAP] [--deny "VERB GROUP RESOURCE[/SUB] NAMESPACE|- [NAME]"]...
Prints one ok/FAIL line per question and "N passed, N failed"; exits 1 on any failure.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def needed(rules, leader, gang, watched, lock_ns, network_policy=False, profiles="", progress=True):
    """(verb, group, resource, subresource, namespace or "", name or "") the operator needs."""
    crds = ["mpijobs.kubeflow.org"]
    if gang:
        crds.append("podgroups.scheduling.volcano.sh" if gang == "volcano" else "podgroups.scheduling.x-k8s.io")
    for r in rules:
        when = r.get("when", "")
        if when == "leaderElect" and not leader:
            continue
        if when == "gang=volcano" and gang != "volcano":
            continue
        if when == "gang=plugins" and (not gang or gang == "volcano"):
            continue
        if when == "networkPolicy" and not network_policy:
            continue
        if when == "profiles" and not profiles:
            continue
        if when == "progress" and not progress:
            continue
        res, _, sub = r["resource"].partition("/")
        if r["scope"] == "cluster":
            targets = [""]
        elif r["scope"] == "lock":
            targets = [lock_ns]
        else:
            targets = watched or [""]  # "" namespace = every namespace
        names = [profiles if n == "<profiles-config-map>" else n
                 for n in r.get("resourceNames", []) if n in crds or n == "<profiles-config-map>"] or [""]
        for verb in r["verbs"]:
            for ns in targets:
                for name in names:
                    yield verb, r["group"], res, sub, ns, name


def parse_deny(spec):
    words = spec.split()
    verb, group, resource, ns = words[:4]
    name = words[4] if len(words) > 4 else ""
    res, _, sub = resource.partition("/")
    return verb, "" if group == "core" else group, res, sub, "" if ns == "-" else ns, name


def review(user, sa_ns, q):
    verb, group, res, sub, ns, name = q
    attrs = {"verb": verb, "group": group, "resource": res}
    for key, value in (("subresource", sub), ("namespace", ns), ("name", name)):
        if value:
            attrs[key] = value
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": ["system:serviceaccounts", f"system:serviceaccounts:{sa_ns}",
                                                "system:authenticated"],
                     "resourceAttributes": attrs}}


def describe(q):
    verb, group, res, sub, ns, name = q
    what = res + (f"/{sub}" if sub else "") + (f" {name}" if name else "")
    return f"{verb} {what} ({group or 'core'}) " + (f"in {ns}" if ns else "cluster-wide")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubectl", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--sa", required=True)
    ap.add_argument("--leader", action="store_true")
    ap.add_argument("--gang", default="")
    ap.add_argument("--watched", default="")
    ap.add_argument("--network-policy", action="store_true", help="networkPolicy.mode is not off")
    ap.add_argument("--profiles", default="", help="the profiles ConfigMap (the chart's profiles value is set)")
    ap.add_argument("--deny", action="append", default=[])
    a = ap.parse_args()
    with open(os.path.join(HERE, "operator-rbac.json")) as f:
        rules = json.load(f)["rules"]
    user = f"system:serviceaccount:{a.namespace}:{a.sa}"
    watched = [w for w in a.watched.split(",") if w]
    questions = [(q, True) for q in needed(rules, a.leader, a.gang, watched, a.namespace, a.network_policy,
                                                   a.profiles)]
    questions += [(parse_deny(d), False) for d in a.deny]
    body = {"apiVersion": "v1", "kind": "List", "items": [review(user, a.namespace, q) for q, _ in questions]}
    proc = subprocess.run([a.kubectl, "create", "-f", "-", "-o", "json"], input=json.dumps(body),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"FAIL kubectl create SubjectAccessReviews: {proc.stderr.strip()}")
        print("0 passed, 1 failed")
        return 1
    # kubectl prints one JSON object per created review, in order.
    items, dec, text, pos = [], json.JSONDecoder(), proc.stdout, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        obj, pos = dec.raw_decode(text, pos)
        items.extend(obj["items"] if obj.get("kind") == "List" else [obj])
    passed = failed = 0
    for (q, want), item in zip(questions, items):
        allowed = bool(item.get("status", {}).get("allowed"))
        label = f"{a.sa} {'may' if want else 'may not'} {describe(q)}"
        if allowed == want:
            passed += 1
            print(f"ok   {label}")
        else:
            failed += 1
            reason = item.get("status", {}).get("reason", "")
            print(f"FAIL {label}: the authorizer says {'allowed' if allowed else 'denied'} {reason}")
    if len(items) != len(questions):
        failed += 1
        print(f"FAIL {len(items)} reviews came back for {len(questions)} questions")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
