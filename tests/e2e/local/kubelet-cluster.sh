#!/usr/bin/env bash
# The full loop on the real control plane (fixture kube_cluster): kube-apiserver + etcd +
# kube-controller-manager (the real Job controller makes the launcher pod) + kube-scheduler
# (binds pods to our Node) + korovod-operator + `korovod kubelet` running the pods → the
# launcher's real mpirun → real ranks in the worker pods → MPIJob Succeeded, shown by
# `kubectl get mpijobs`. examples/pi/pi.yaml is applied unchanged.
#
# --chart-rbac cluster|namespaced: the Helm chart is installed for real (helm install, that RBAC
# scope, leader election on) with its pod kept off every node, and korovod-operator runs here with the args of
# the chart's Deployment under a token of the chart's own ServiceAccount (`kubectl create
# token`): a verb missing from the chart's RBAC fails the job or shows as a 403 in the log.
# Skips (77) when korovod-operator has not been built.
source "$(dirname "$0")/lib.sh"
source "$KOROVOD_SOURCE_DIR/tests/support/chart-operator.sh"
source "$KOROVOD_SOURCE_DIR/tests/support/wait-crd.sh"
: "${KUBECONFIG:?}"
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
chart_rbac=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --chart-rbac) chart_rbac=${2:?--chart-rbac needs cluster or namespaced}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "kubelet-cluster.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ -z $chart_rbac || $chart_rbac == cluster || $chart_rbac == namespaced ]] ||
  { echo "kubelet-cluster.sh: --chart-rbac must be cluster or namespaced, not '$chart_rbac'" >&2; exit 2; }
OPERATOR=${KOROVOD_OPERATOR:-$KOROVOD_BIN_DIR/korovod-operator}
[[ -x $OPERATOR ]] || { echo "SKIP: $OPERATOR is not built (cmake --build <dir> --target korovod-operator)"; exit 77; }
KUBECTL=${KUBECTL:-$(ls -d "$HOME"/.cache/korovod/k8s-*/bin 2>/dev/null | head -1)/kubectl}
[[ -x $KUBECTL ]] || KUBECTL=kubectl
k() { "$KUBECTL" "$@"; }

ns=korovod-e2e-local-$$
node=korovod-e2e-node-$$
release_ns=korovod-e2e-system-$$
release=korovod-e2e-$$
pids=()
helm=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ -n $helm ]]; then "$helm" uninstall "$release" -n "$release_ns" >/dev/null 2>&1 || true; fi
  k delete namespace "$ns" "$release_ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  k delete node "$node" --wait=false >/dev/null 2>&1 || true
  rm -rf "$TEST_DIR"
}
trap cleanup EXIT

k apply --server-side -f "$KOROVOD_SOURCE_DIR/crds/kubeflow.org_mpijobs.yaml" >/dev/null
wait_crd_established mpijobs.kubeflow.org
k create namespace "$ns" >/dev/null

if [[ -z $chart_rbac ]]; then
  "$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$ns" --lock-namespace "$ns" \
    --health-port 0 --monitoring-port 0 \
    >"$TEST_DIR/operator.log" 2>&1 &
  pids+=($!)
else
  helm=${HELM:-$("$KOROVOD_SOURCE_DIR/tests/cluster/helm.sh" --cached 2>/dev/null | tail -n 1)} ||
    fail "helm is not built; run scripts/setup (or tests/cluster/helm.sh)"
  export HELM_CACHE_HOME=$TEST_DIR/helm-cache HELM_CONFIG_HOME=$TEST_DIR/helm-config HELM_DATA_HOME=$TEST_DIR/helm-data
  k create namespace "$release_ns" >/dev/null
  # The chart's CRD is the one applied above (same file). Its Deployment's pod must never run
  # (no node matches its nodeSelector): this test runs the operator itself, with the
  # Deployment's args, outside the cluster.
  "$helm" install "$release" "$KOROVOD_SOURCE_DIR/charts/korovod-operator" -n "$release_ns" --skip-crds \
    --set-string nodeSelector.korovod-test-no-such-node=true --set leaderElection.enabled=true --set rbac.scope="$chart_rbac" \
    --set "watchNamespaces={$ns}" --set operator.logLevel=debug --wait=false >"$TEST_DIR/helm.log" 2>&1 ||
    { cat "$TEST_DIR/helm.log"; fail "helm install --set rbac.scope=$chart_rbac"; }
  start_chart_operator "$KUBECTL" "$OPERATOR" "$release_ns" "$release" "$TEST_DIR" "$TEST_DIR/operator.log" ||
    fail "cannot start korovod-operator as the chart's ServiceAccount"
  pids+=("$CHART_OPERATOR_PID")
fi
"$KOROVOD" kubelet --kubeconfig "$KUBECONFIG" --node-name "$node" --work-dir "$TEST_DIR/kubelet" \
  >"$TEST_DIR/kubelet.log" 2>&1 &
pids+=($!)
ready=""
for _ in $(seq 1 120); do
  ready=$(k get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  [[ $ready == True ]] && break
  sleep 0.5
done
[[ $ready == True ]] || { cat "$TEST_DIR/kubelet.log"; fail "node $node never became Ready"; }
lease=""
for _ in $(seq 1 60); do  # the kubelet renews its Lease every few seconds
  lease=$(k get lease -n kube-node-lease "$node" -o name 2>/dev/null || true)
  [[ -n $lease ]] && break
  sleep 0.5
done
[[ -n $lease ]] || { cat "$TEST_DIR/kubelet.log"; fail "no node Lease for $node after 30 s"; }

k -n "$ns" apply -f "$KOROVOD_SOURCE_DIR/examples/pi/pi.yaml" >/dev/null
status=""
for _ in $(seq 1 240); do
  status=$(k -n "$ns" get mpijob pi -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
  [[ $status == *Succeeded* || $status == *Failed* ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$TEST_DIR/operator.log"; fail "korovod-operator exited"; }
  sleep 1
done
echo "--- kubelet log"; cat "$TEST_DIR/kubelet.log"
echo "--- operator log (tail)"; tail -20 "$TEST_DIR/operator.log"
k -n "$ns" get pods -o wide || true
[[ $status == *Succeeded* ]] || fail "MPIJob conditions: '$status', want Succeeded"
k -n "$ns" get mpijobs | tee "$TEST_DIR/get"
grep -Eq '^pi ' "$TEST_DIR/get" || fail "kubectl get mpijobs does not show pi"
expect_in "$TEST_DIR/kubelet.log" 'pi is approximately 3\.1[34]' "pi estimate in the launcher's log"
launcher_owner=$(k -n "$ns" get pods -l training.kubeflow.org/job-role=launcher \
  -o jsonpath='{.items[0].metadata.ownerReferences[0].kind}')
[[ $launcher_owner == Job ]] || fail "launcher pod owned by '$launcher_owner', want the Job"
if [[ -n $chart_rbac ]]; then
  # The rest of the lifecycle under the chart's RBAC: deleting the MPIJob removes its children
  # (garbage collector) and the operator keeps running without a single refused request.
  k -n "$ns" delete mpijob pi --wait=true --timeout=60s >/dev/null || fail "kubectl delete mpijob pi"
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$TEST_DIR/operator.log"; fail "korovod-operator exited"; }
  k -n "$release_ns" get lease -o name | grep . >/dev/null || fail "no leader-election Lease in $release_ns"
  if grep -Eiq '\b403\b|forbidden' "$TEST_DIR/operator.log"; then
    grep -Ei '\b403\b|forbidden' "$TEST_DIR/operator.log" | head -20
    fail "korovod-operator was refused requests under the chart's RBAC ($chart_rbac)"
  fi
  echo "no request of korovod-operator was refused under the chart's $chart_rbac RBAC"
fi
echo PASS
