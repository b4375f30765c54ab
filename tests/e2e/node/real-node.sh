#!/usr/bin/env bash
# A real node end to end (label node): `testcluster up --node` in its own state dir, a busybox
# image made without docker (tests/cluster/node/mkimage --busybox) and moved in with
# `testcluster node-import`, then:
#   - two pods run as containers: a web server behind a headless Service, and a client;
#   - the web pod's name <pod>.<service>.<ns>.svc.cluster.local resolves from the client pod to
#     the web pod's IP (CoreDNS), a missing name does not, and the short form the MPIJob hostfile
#     uses (<pod>.<service>.<ns>.svc, through the search path) reaches the server over the bridge;
#   - kubectl logs and kubectl exec work;
#   - deleting the pods leaves nothing on the node (containers, tasks, veths, IPs, pod cgroups,
#     pod dirs, mounts);
#   - after `testcluster down` the host is as before (sysctls, iptables chains, links, mounts,
#     kubepods cgroups, fixed paths, processes), as this script sees it, apart from testcluster's
#     own record.
# Cleans up on failure (trap: `testcluster down`). Needs root; skips (77) without it.
#
# usage: tests/e2e/node/real-node.sh [--state-dir DIR] [--keep-on-failure]
set -euo pipefail
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
tc=$src/tests/cluster/testcluster
state=${TMPDIR:-/tmp}/korovod-real-node-$$
keep_on_failure=0
while (($#)); do
  case $1 in
    --state-dir) state=${2:?--state-dir needs a directory}; shift 2 ;;
    --keep-on-failure) keep_on_failure=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "real-node.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $(id -u) == 0 ]] || { echo "SKIP: a real node needs root"; exit 77; }

log() { echo "real-node: [$((SECONDS))s] $*" >&2; }
# shellcheck source=lib.sh
source "$here/lib.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/korovod-real-node-work-XXXXXX")
ns=real-node-$$
node_failure_report() {
  log "failed; node logs follow"
  for f in kubelet containerd coredns; do
    echo "----- last 30 lines of $state/logs/$f.log -----"
    tail -n 30 "$state/logs/$f.log" 2>/dev/null || true
  done
}
trap node_cleanup EXIT

node_record_host_before
node_up
k() { kubectl --request-timeout=30s "$@"; }
node=$(k get nodes -o jsonpath='{.items[0].metadata.name}')
[[ -n $node ]] || fail "no node registered"
log "node $node is $(k get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].type}={.status.conditions[?(@.type=="Ready")].status}')"

log "a busybox image (busybox-static) without docker, into the node"
"$src/tests/cluster/node/mkimage" --busybox --name korovod.test/busybox:1 --out "$work/busybox.tar"
"$tc" node-import --state-dir "$state" "$work/busybox.tar"
ctr images ls -q | grep -xF korovod.test/busybox:1 >/dev/null || fail "the imported image is not in the node's containerd"

k create namespace "$ns" >/dev/null
k apply -n "$ns" -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector:
    app: web
  ports:
  - name: http
    port: 8080
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  labels:
    app: web
spec:
  hostname: web-0
  subdomain: web
  terminationGracePeriodSeconds: 5
  containers:
  - name: web
    image: korovod.test/busybox:1
    imagePullPolicy: Never
    command: [/bin/sh, -c]
    args:
    - |
      trap 'exit 0' TERM
      mkdir -p /www && echo "hello from $(hostname)" >/www/index.html
      echo "web-0 serving on 8080"
      httpd -f -p 8080 -h /www &
      wait
    ports:
    - containerPort: 8080
    readinessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: client
    image: korovod.test/busybox:1
    imagePullPolicy: Never
    command: [/bin/sh, -c, "trap 'exit 0' TERM; while :; do sleep 1; done"]
EOF
k -n "$ns" wait --for=condition=Ready pod/web-0 pod/client --timeout=180s >/dev/null ||
  { k -n "$ns" describe pods >&2 || true; fail "the pods did not become Ready"; }
web_ip=$(k -n "$ns" get pod web-0 -o jsonpath='{.status.podIP}')
client_ip=$(k -n "$ns" get pod client -o jsonpath='{.status.podIP}')
log "pods Ready: web-0 $web_ip, client $client_ip"
subnet=${KOROVOD_NODE_SUBNET:-10.88.77.0/24}
[[ $web_ip == "${subnet%.*}".* && $client_ip == "${subnet%.*}".* ]] ||
  fail "pod IPs $web_ip/$client_ip are not on the node's bridge subnet $subnet"
[[ $web_ip != "$client_ip" ]] || fail "both pods have IP $web_ip"

log "DNS: web-0.web.$ns.svc.cluster.local from the client pod"
fqdn=web-0.web.$ns.svc.cluster.local
deadline=$((SECONDS + 60))
until out=$(k -n "$ns" exec client -- nslookup "$fqdn" 2>&1) && grep -F "$web_ip" <<<"$out" >/dev/null; do
  ((SECONDS < deadline)) || { echo "$out" >&2; fail "$fqdn did not resolve to $web_ip from the client pod within 60s"; }
  sleep 1
done
log "resolved: $(grep -F "$web_ip" <<<"$out" | tail -1)"
if out=$(k -n "$ns" exec client -- nslookup "web-9.web.$ns.svc.cluster.local" 2>&1); then
  echo "$out" >&2
  fail "a pod name that does not exist resolved"
fi
out=$(k -n "$ns" exec client -- cat /etc/resolv.conf)
grep -E "^nameserver ${subnet%.*}\.1$" <<<"$out" >/dev/null || { echo "$out" >&2; fail "the pod's resolv.conf does not name the cluster DNS"; }
grep -E "^search $ns\.svc\.cluster\.local svc\.cluster\.local cluster\.local" <<<"$out" >/dev/null ||
  { echo "$out" >&2; fail "the pod's resolv.conf has not the cluster's search path"; }

log "pod to pod by the hostfile's name web-0.web.$ns.svc (search path) over the bridge"
# nc, not wget: busybox-static's wget dies of SIGSEGV (exit 139) in this image, even for an IP
# address (likely its lookup of the "http" service, which a static glibc does through NSS
# libraries the image does not have); nc with a numeric port resolves names and works.
out=$(k -n "$ns" exec client -- sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 web-0.web.$ns.svc 8080" 2>&1) ||
  { echo "$out" >&2; fail "an HTTP GET of web-0.web.$ns.svc:8080 from the client pod failed"; }
grep -xF "hello from web-0" <<<"${out//$'\r'/}" >/dev/null ||
  { echo "$out" >&2; fail "the web pod did not answer 'hello from web-0'"; }
log "kubectl logs and exec"
out=$(k -n "$ns" logs web-0)
grep -xF "web-0 serving on 8080" <<<"$out" >/dev/null || { echo "$out" >&2; fail "kubectl logs web-0 lacks its first line"; }
out=$(k -n "$ns" exec web-0 -- cat /www/index.html)
[[ $out == "hello from web-0" ]] || fail "kubectl exec web-0 cat gave '$out'"
if k -n "$ns" exec web-0 -- sh -c 'exit 3' 2>/dev/null; then fail "kubectl exec did not pass on the exit status 3"; fi
out=$(k -n "$ns" exec -i client -- sh -c 'read x; echo "got $x"' <<<"stdin-line")
[[ $out == "got stdin-line" ]] || fail "kubectl exec -i gave '$out'"

log "deleting the pods; nothing of them may stay on the node"
uids=$(k -n "$ns" get pods -o jsonpath='{.items[*].metadata.uid}')
k -n "$ns" delete pod web-0 client --wait=true --timeout=60s >/dev/null || fail "deleting the pods took over 60s"
# The kubelet removes the exited containers and sandboxes of deleted pods in its container GC,
# which runs once a minute.
left_on_node() {
  local u
  ctr containers ls -q | sed 's/^/container /'
  ctr tasks ls -q 2>/dev/null | sed 's/^/task /'
  ip -o link show master "$node_bridge" 2>/dev/null | awk -F': ' '{print "veth " $2}'
  ls "$state/node/cni/ipam/korovod-node" 2>/dev/null | grep -E '^[0-9]+\.' | sed 's/^/ip /'
  for u in $uids; do
    find /sys/fs/cgroup -maxdepth 5 -type d -name "pod$u" 2>/dev/null | sed 's/^/cgroup /'
    [[ -e $state/node/kubelet/pods/$u ]] && echo "dir $state/node/kubelet/pods/$u"
  done
  awk '{print $5}' /proc/self/mountinfo | grep -E "^$state/node/(kubelet/pods|containerd/state)/" | sed 's/^/mount /'
  return 0
}
deadline=$((SECONDS + 150))
until [[ -z $(left_on_node) ]]; do
  ((SECONDS < deadline)) || { left_on_node >&2; fail "the deleted pods left the above on the node after 150s"; }
  sleep 2
done
log "the node holds nothing of the deleted pods"

node_down_and_check_host
echo "PASS: real node: pods, DNS, pod-to-pod, logs, exec, cleanup, host restored"
