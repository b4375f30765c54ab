#!/usr/bin/env bash
# An elastic MPIJob on the real control plane (fixture kube_cluster) with korovod-operator and
# `korovod kubelet`: the launcher runs korovodrun's elastic driver on the operator's
# /etc/mpi/discover_hosts.sh. While it trains, `kubectl scale` takes it 2 -> 3 workers, a worker
# pod is deleted (the operator replaces it and the replacement joins), and `kubectl scale` takes
# it back to 2. The driver must publish a round for each change, the operator record a
# WorkersChanged event for each, and the job reach Succeeded with its first launcher pod (no
# launcher restart, no launcher failure).
#
#   elastic-kubelet.sh [--workload pytorch|contract]
# pytorch (default): examples/pytorch/pytorch_elastic_digits.yaml unchanged but for its epochs.
# contract: the same manifest running korovodrun's elastic_contract_worker (it joins every round
# through the store and exits 0 once a file exists) instead of PyTorch: the operator, kubelet and
# driver parts without the Python ones.
# Skips (77) when korovod-operator, or the workload, is not built.
source "$(dirname "$0")/lib.sh"
source "$KOROVOD_SOURCE_DIR/tests/support/wait-crd.sh"
: "${KUBECONFIG:?}"
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
workload=pytorch
while [[ $# -gt 0 ]]; do
  case $1 in
    --workload) workload=${2:?--workload needs pytorch or contract}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "elastic-kubelet.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
OPERATOR=${KOROVOD_OPERATOR:-$KOROVOD_BIN_DIR/korovod-operator}
[[ -x $OPERATOR ]] || { echo "SKIP: $OPERATOR is not built"; exit 77; }
[[ -x $KOROVOD_BIN_DIR/korovodrun ]] || { echo "SKIP: korovodrun is not built"; exit 77; }
KUBECTL=${KUBECTL:-$(ls -d "$HOME"/.cache/korovod/k8s-*/bin 2>/dev/null | head -1)/kubectl}
[[ -x $KUBECTL ]] || KUBECTL=kubectl
k() { "$KUBECTL" "$@"; }

job=pytorch-elastic-digits
manifest=$TEST_DIR/job.yaml
done_file=$TEST_DIR/done
case $workload in
  pytorch)
    [[ -x $KOROVOD_BIN_DIR/pytorch_elastic_digits.py ]] ||
      { echo "SKIP: $KOROVOD_BIN_DIR/pytorch_elastic_digits.py is not built (target pytorch_examples)"; exit 77; }
    /usr/bin/python3 -c 'import torch, sklearn' ||
      fail "/usr/bin/python3 lacks torch or scikit-learn (Debian: python3-torch python3-sklearn)"
    # Enough epochs that the changes below happen while it trains, and a stop file the test
    # touches once they have: on a loaded machine (CI at -j3 beside compiles: 8-12 steps/s seen)
    # 400 epochs take longer than the test may run, and the training need not go on.
    sed -E "s|--epochs, \"[0-9]+\"|--epochs, \"400\", --stop-file, \"$done_file\"|" \
      "$KOROVOD_SOURCE_DIR/examples/pytorch/pytorch_elastic_digits.yaml" >"$manifest"
    ;;
  contract)
    worker=$(ls "$KOROVOD_BIN_DIR"/../worker-runtime/tests/korovodrun/elastic_contract_worker \
      "$KOROVOD_BIN_DIR"/elastic_contract_worker 2>/dev/null | head -1 || true)
    [[ -x $worker ]] || { echo "SKIP: elastic_contract_worker is not built"; exit 77; }
    sed -E "s|pytorch_elastic_digits.py, --epochs, \"[0-9]+\"|$worker, $done_file|" \
      "$KOROVOD_SOURCE_DIR/examples/pytorch/pytorch_elastic_digits.yaml" >"$manifest"
    ;;
  *) fail "--workload must be pytorch or contract, not '$workload'" ;;
esac
# The kubelet's node has this machine's cores (2 here): requests small enough for 4 pods.
sed -i -E 's/cpu: ("1"|500m)/cpu: 100m/' "$manifest"
# No cluster DNS here: the workers' names (<pod>.<job>.<ns>.svc) do not resolve. The example's
# korovodrun command runs unchanged: when its first discovery already lists workers it cannot
# route to by name, its store listens on this machine's default-route address and says so
# (docs/korovodrun.md); when the first list is empty, on that address as well. The pods reach it.
grep -q -- '--host-discovery-script, /etc/mpi/discover_hosts.sh' "$manifest" ||
  fail "the example no longer runs korovodrun on discover_hosts.sh"

ns=korovod-e2e-elastic-$$
node=korovod-e2e-elastic-node-$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  k delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  k delete node "$node" --wait=false >/dev/null 2>&1 || true
  rm -rf "$TEST_DIR"
}
trap cleanup EXIT
logs() {
  echo "--- kubelet log (tail)"; tail -150 "$TEST_DIR/kubelet.log"
  echo "--- operator log (tail)"; tail -30 "$TEST_DIR/operator.log"
  k -n "$ns" get mpijob,pods -o wide 2>&1 || true
  k -n "$ns" get events --field-selector "involvedObject.name=$job" 2>&1 || true
}
die() { logs; fail "$*"; }
# until SECONDS WHAT CMD...: CMD succeeds within SECONDS.
until_ok() {
  local end=$((SECONDS + $1)) what=$2
  shift 2
  until "$@"; do
    [[ $SECONDS -lt $end ]] || die "$what (not within ${end}s of the test)"
    kill -0 "${pids[0]}" 2>/dev/null || die "korovod-operator exited"
    sleep 0.5
  done
}
kubelet_says() { grep -Eq -- "$1" "$TEST_DIR/kubelet.log"; }
ready_workers() { [[ $(k -n "$ns" get mpijob "$job" -o jsonpath='{.status.readyWorkers}') == "$1" ]]; }
has_event() {
  k -n "$ns" get events --field-selector "involvedObject.name=$job,reason=WorkersChanged" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -xF -- "$1" >/dev/null
}
finished() {
  status=$(k -n "$ns" get mpijob "$job" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
  [[ $status == *Succeeded* || $status == *Failed* ]]
}

k apply --server-side -f "$KOROVOD_SOURCE_DIR/crds/kubeflow.org_mpijobs.yaml" >/dev/null
wait_crd_established mpijobs.kubeflow.org
k create namespace "$ns" >/dev/null
"$OPERATOR" --kubeconfig "$KUBECONFIG" --namespace "$ns" --lock-namespace "$ns" \
  --health-port 0 --monitoring-port 0 >"$TEST_DIR/operator.log" 2>&1 &
pids+=($!)
"$KOROVOD" kubelet --kubeconfig "$KUBECONFIG" --node-name "$node" --work-dir "$TEST_DIR/kubelet" \
  >"$TEST_DIR/kubelet.log" 2>&1 &
pids+=($!)
node_ready() { [[ $(k get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]; }
until_ok 60 "node $node Ready" node_ready

k -n "$ns" apply -f "$manifest" >/dev/null
until_ok 120 "round 1 with 2 workers" kubelet_says 'round 1 formed: 2 workers'
until_ok 30 "readyWorkers 2" ready_workers 2
launcher_pod() { k -n "$ns" get pods -l training.kubeflow.org/job-role=launcher -o jsonpath='{.items[*].metadata.uid}'; }
first_launcher=$(launcher_pod)
[[ -n $first_launcher ]] || die "no launcher pod"
echo "round 1 formed with 2 workers; launcher pod $first_launcher"

k -n "$ns" scale "mpijob/$job" --replicas 3 >/dev/null || die "kubectl scale --replicas 3"
until_ok 60 "WorkersChanged 2 -> 3" has_event "2 -> 3 workers (added $job-worker-2)"
until_ok 60 "a round with 3 workers" kubelet_says 'round [0-9]+ formed: 3 workers'
until_ok 30 "readyWorkers 3" ready_workers 3
echo "scaled up: a round with 3 workers formed"

old_uid=$(k -n "$ns" get pod "$job-worker-1" -o jsonpath='{.metadata.uid}')
k -n "$ns" delete pod "$job-worker-1" --wait=false >/dev/null || die "kubectl delete pod"
until_ok 60 "WorkersChanged removing worker-1" has_event "3 -> 2 workers (removed $job-worker-1)"
until_ok 60 "the driver drops worker-1" kubelet_says "round [0-9]+: 2 workers"
replaced() {
  local uid
  uid=$(k -n "$ns" get pod "$job-worker-1" -o jsonpath='{.metadata.uid}' 2>/dev/null || true)
  [[ -n $uid && $uid != "$old_uid" ]]
}
until_ok 60 "worker-1 replaced" replaced
until_ok 60 "WorkersChanged adding worker-1 back" has_event "2 -> 3 workers (added $job-worker-1)"
rounds_before=$(grep -Ec 'round [0-9]+ formed: 3 workers' "$TEST_DIR/kubelet.log" || true)
three_again() { (( $(grep -Ec 'round [0-9]+ formed: 3 workers' "$TEST_DIR/kubelet.log" || true) > rounds_before )); }
until_ok 90 "the replacement joins (a new round of 3)" three_again
echo "deleted worker-1: replaced, and its replacement joined"

twos_before=$(grep -Ec 'round [0-9]+ formed: 2 workers' "$TEST_DIR/kubelet.log" || true)
two_again() { (( $(grep -Ec 'round [0-9]+ formed: 2 workers' "$TEST_DIR/kubelet.log" || true) > twos_before )); }
k -n "$ns" scale "mpijob/$job" --replicas 2 >/dev/null || die "kubectl scale --replicas 2"
until_ok 60 "WorkersChanged 3 -> 2" has_event "3 -> 2 workers (removed $job-worker-2)"
until_ok 60 "a round with 2 workers after the scale-down" two_again
last_two=$(grep -E 'korovodrun: round [0-9]+: 2 workers' "$TEST_DIR/kubelet.log" | tail -1)
[[ $last_two == *"$job-worker-0."*"$job-worker-1."* && $last_two != *"$job-worker-2."* ]] ||
  die "the round after the scale-down is not worker-0 and worker-1: $last_two"
until_ok 30 "readyWorkers 2 after the scale-down" ready_workers 2
echo "scaled down to 2"

touch "$done_file"  # both workloads end at their next epoch (contract: round) end
until_ok 500 "the MPIJob finished" finished
logs
[[ $status == *Succeeded* ]] || fail "MPIJob conditions: '$status', want Succeeded"
[[ $(launcher_pod) == "$first_launcher" ]] ||
  fail "the launcher pod changed: $first_launcher -> $(launcher_pod) (a launcher restart)"
failed=$(k -n "$ns" get job "$job-launcher" -o jsonpath='{.status.failed}')
[[ -z $failed || $failed == 0 ]] || fail "the launcher Job counts $failed failed pods"
restarts=$(k -n "$ns" get pods -l training.kubeflow.org/job-role=launcher \
  -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}')
[[ $restarts == 0 ]] || fail "the launcher container restarted $restarts times"
if [[ $workload == pytorch ]]; then
  expect_in "$TEST_DIR/kubelet.log" 'final test accuracy' "the training's last line"
fi
echo PASS
