#!/usr/bin/env bash
# The full loop on the real control plane (fixture kube_cluster): kube-apiserver + etcd +
# kube-controller-manager (the real Job controller makes the launcher pod) + kube-scheduler
# (binds pods to our Node) + korovod-operator + `korovod kubelet` running the pods → the
# launcher's real mpirun → real ranks in the worker pods → MPIJob Succeeded, shown by
# `kubectl get mpijobs`. examples/pi/pi.yaml is applied unchanged.
# Skips (77) when korovod-operator has not been built.
source "$(dirname "$0")/lib.sh"
: "${KUBECONFIG:?}"
OPERATOR=${KOROVOD_OPERATOR:-$KOROVOD_BIN_DIR/korovod-operator}
[[ -x $OPERATOR ]] || { echo "SKIP: $OPERATOR is not built (cmake --build <dir> --target korovod-operator)"; exit 77; }
KUBECTL=${KUBECTL:-$(ls -d "$HOME"/.cache/korovod/k8s-*/bin 2>/dev/null | head -1)/kubectl}
[[ -x $KUBECTL ]] || KUBECTL=kubectl
k() { "$KUBECTL" "$@"; }

ns=korovod-e2e-local-$$
node=korovod-e2e-node-$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  k delete node "$node" --wait=false >/dev/null 2>&1 || true
  rm -rf "$TEST_DIR"
}
trap cleanup EXIT

k apply --server-side -f "$KOROVOD_SOURCE_DIR/crds/kubeflow.org_mpijobs.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/mpijobs.kubeflow.org >/dev/null
k create namespace "$ns" >/dev/null

"$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$ns" --lock-namespace "$ns" \
  --health-port 0 --monitoring-port 0 \
  >"$TEST_DIR/operator.log" 2>&1 &
pids+=($!)
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
k get lease -n kube-node-lease "$node" >/dev/null || fail "no node Lease for $node"

k -n "$ns" apply -f "$KOROVOD_SOURCE_DIR/examples/pi/pi.yaml" >/dev/null
status=""
for _ in $(seq 1 240); do
  status=$(k -n "$ns" get mpijob pi -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
  [[ $status == *Succeeded* || $status == *Failed* ]] && break
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
echo PASS
