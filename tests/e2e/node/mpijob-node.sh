#!/usr/bin/env bash
# MPIJobs on a real node, as a cluster user runs them (label node). One `testcluster up --node`
# (kubelet + containerd + CNI bridge + CoreDNS + kube-proxy) in a state dir of its own, the
# built images moved in with `testcluster node-import` (korovod-operator:dev and
# korovod-worker-cpu:0.1.0, from the docker daemon; scripts/images build makes them), then:
#   1. helm install of charts/korovod-operator: the operator runs as a pod under the chart's
#      ServiceAccount and RBAC, reaches the API server by the in-cluster config (the
#      `kubernetes` Service, 10.0.0.1:443, through kube-proxy) and becomes Ready;
#   2. kubectl apply -f examples/pytorch/pytorch_digits.yaml, unchanged: launcher -> workers over
#      real ssh between containers (the job's SSH Secret mounted), names through CoreDNS (the
#      headless Service); final test accuracy > 0.95 and the MPIJob Succeeded;
#   3. kubectl delete mpijob leaves nothing: pods, services, secrets, configmaps, the launcher
#      Job, the NetworkPolicy; on the node no task (and, at the end, no container) of its pods;
#   3b. the same training from flags: `kubectl korovod submit digits-cli --workers 2 --image
#      korovod-worker-cpu:0.1.0 --cpu 500m --follow -- pytorch_digits.py --epochs 3` streams the
#      launcher's rank-tagged log and exits 0 at Succeeded; `kubectl korovod logs --rank 0|1`
#      keeps one rank's lines; get says Succeeded; delete;
#   4. tests/e2e/node/manifests/digits-worker-killed.yaml: a worker's container killed on the
#      node (ctr task kill, SIGKILL) mid-run is handled as its runPolicy says (backoffLimit 3):
#      the worker pod is recreated, the launcher restarted, and the job Succeeds; while it
#      trains again, status.progress.step advances (rank 0's progress lines, read by the
#      operator from the launcher's log) and `kubectl get mpijob` shows it in the STEP
#      SAMPLES/S LOSS ETA columns;
#      with it, NetworkPolicy: the job's <job>-netpol exists, and a pod outside the job still
#      reaches a worker's sshd (Debian's bridge CNI plugin does not enforce NetworkPolicy);
#   4b. without sshd (korovod.io/launch: agent), in a namespace that enforces the restricted Pod
#      Security profile (a root pod is refused there): examples/pytorch/pytorch_digits_agent.yaml
#      unchanged Succeeds; tests/e2e/node/manifests/digits-agent-killed.yaml: its worker runs
#      korovod-agent as uid 1000, no pod mounts an SSH key; agent-intruder.yaml, another job's
#      launcher, is refused by its worker's agent (and its job Fails); a worker's container killed
#      mid-run is recreated, the launcher restarted, and the job Succeeds; the elastic job of 5.
#      with the annotation is scaled 2 -> 3 -> 1 as in 5. (the new worker's rank starts through
#      its agent);
#   5. tests/e2e/node/manifests/elastic-digits-scaled.yaml (pytorch_elastic_digits.yaml, longer):
#      kubectl scale mpijob --replicas 3, then 1, while it trains; the ranks follow
#      (2 -> 3 -> 1 workers), the launcher is never restarted, and it Succeeds;
#   6. helm uninstall, testcluster down, and the host as before (as this script sees it).
# Cleans up on failure (trap: helm uninstall is not needed, `testcluster down` takes it all).
# Skips (77) when not root, or when the docker daemon or an image is missing (saying which).
# The examples are applied as written (their workers request 500m CPU, so two fit this 2-CPU node).
#
# usage: tests/e2e/node/mpijob-node.sh [--state-dir DIR] [--keep-on-failure] [--launcher-env N=V]...
#   --launcher-env N=V  add an env var to every job's launcher (e.g. OMPI_ALLOW_RUN_AS_ROOT=1 and
#                       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 for an image whose mpirun refuses root)
#   --worker-file SRC:DEST  mount the repository's file SRC at DEST in every job's workers (from
#                       a ConfigMap, mode 0755), for an image that lacks it (e.g.
#                       examples/pytorch/pytorch_elastic_digits.py:/usr/local/bin/pytorch_elastic_digits.py)
#   Both are workarounds for images that are behind the examples; the job manifests say how
#   they were patched in the log.
#   env KOROVOD_OPERATOR_IMAGE (default korovod-operator:dev), KOROVOD_BIN_DIR (default build/bin:
#   kubectl-korovod)
set -euo pipefail
usage() { sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; }
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
tc=$src/tests/cluster/testcluster
state=${TMPDIR:-/tmp}/korovod-mpijob-node-$$
keep_on_failure=0
launcher_env=()
worker_files=()
while (($#)); do
  case $1 in
    --worker-file)
      [[ ${2:-} == ?*:/?* && -f $src/${2%%:*} ]] || { echo "mpijob-node.sh: --worker-file needs SRC:DEST, SRC a file in the repository" >&2; exit 2; }
      worker_files+=("$2"); shift 2 ;;
    --launcher-env)
      [[ ${2:-} == [A-Za-z_]*=* ]] || { echo "mpijob-node.sh: --launcher-env needs NAME=VALUE" >&2; exit 2; }
      launcher_env+=("$2"); shift 2 ;;
    --state-dir) state=${2:?--state-dir needs a directory}; shift 2 ;;
    --keep-on-failure) keep_on_failure=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "mpijob-node.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
operator_image=${KOROVOD_OPERATOR_IMAGE:-korovod-operator:dev}
bin_dir=${KOROVOD_BIN_DIR:-$src/build/bin}   # kubectl-korovod (step 3b)
worker_image=korovod-worker-cpu:0.1.0   # what the examples name
[[ $(id -u) == 0 ]] || { echo "SKIP: a real node needs root"; exit 77; }
command -v docker >/dev/null || { echo "SKIP: no docker client to take the images from"; exit 77; }
docker info >/dev/null 2>&1 || { echo "SKIP: no docker daemon to take the images from (scripts/dockerd start)"; exit 77; }
for img in "$operator_image" "$worker_image"; do
  docker image inspect "$img" >/dev/null 2>&1 ||
    { echo "SKIP: image $img missing (scripts/images build makes it)"; exit 77; }
done

log() { echo "mpijob-node: [$((SECONDS))s] $*" >&2; }
times=()
mark() { times+=("$1 $(($SECONDS - ${2:-0}))s"); }
# shellcheck source=lib.sh
source "$here/lib.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/korovod-mpijob-node-work-XXXXXX")
ns=mpijob-node
release=korovod
release_ns=korovod-system
node_failure_report() {
  log "failed; what the cluster shows follows"
  echo "----- kubectl get mpijobs,pods,jobs,services,networkpolicies -A -----"
  kubectl get mpijobs,pods,jobs,services,networkpolicies -A -o wide 2>&1 || true
  for j in $(kubectl -n "$ns" get mpijobs -o name 2>/dev/null); do
    echo "----- $j status -----"
    kubectl -n "$ns" get "$j" -o jsonpath='{.status}' 2>&1 || true; echo
  done
  echo "----- events in $ns -----"
  kubectl -n "$ns" get events --sort-by=.lastTimestamp 2>&1 | tail -n 40 || true
  echo "----- operator log -----"
  kubectl -n "$release_ns" logs deploy/"$release"-korovod-operator --tail=60 2>&1 || true
  for p in $(kubectl -n "$ns" get pods -o name 2>/dev/null); do
    echo "----- last 30 lines of $p -----"
    kubectl -n "$ns" logs "$p" --tail=30 2>&1 || true
  done
  for f in kubelet kube-proxy containerd; do
    echo "----- last 30 lines of $state/logs/$f.log -----"
    tail -n 30 "$state/logs/$f.log" 2>/dev/null || true
  done
}
trap node_cleanup EXIT

node_record_host_before

t0=$SECONDS
node_up
export HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config HELM_DATA_HOME=$work/helm/data
command -v helm >/dev/null || fail "no helm in $state/bin (tests/cluster/helm.sh builds it)"
mark "up --node" "$t0"
t0=$SECONDS
"$tc" node-import --state-dir "$state" "$operator_image" "$worker_image" || fail "node-import of the images failed"
"$src/tests/cluster/node/mkimage" --busybox --name korovod.test/busybox:1 --out "$work/busybox.tar" >/dev/null
"$tc" node-import --state-dir "$state" "$work/busybox.tar"
mark "node-import (operator, worker, busybox)" "$t0"

k() { kubectl --request-timeout=30s "$@"; }
kn() { k -n "$ns" "$@"; }

# --- 1. the operator, installed by its chart ------------------------------------------------------
t0=$SECONDS
repo=${operator_image%:*} tag=${operator_image##*:}
log "helm install $release charts/korovod-operator (image $repo:$tag)"
helm install "$release" "$src/charts/korovod-operator" --namespace "$release_ns" --create-namespace \
  --set image.repository="$repo" --set image.tag="$tag" --set image.pullPolicy=Never \
  --wait --timeout 180s >"$work/helm.log" 2>&1 || { cat "$work/helm.log" >&2; fail "helm install failed"; }
deploy=$release-korovod-operator
k -n "$release_ns" rollout status deployment/"$deploy" --timeout=60s >/dev/null ||
  fail "the operator's Deployment did not become available"
op_pod=$(k -n "$release_ns" get pods -l app.kubernetes.io/instance="$release" -o jsonpath='{.items[0].metadata.name}')
sa=$(k -n "$release_ns" get pod "$op_pod" -o jsonpath='{.spec.serviceAccountName}')
[[ $sa == "$deploy" ]] || fail "the operator pod runs as ServiceAccount '$sa', not the chart's $deploy"
[[ $(k -n "$release_ns" get pod "$op_pod" -o jsonpath='{.spec.nodeName}') == korovod-node ]] ||
  fail "the operator pod is not on the node"
k auth can-i create pods -n "$ns" --as="system:serviceaccount:$release_ns:$sa" >/dev/null ||
  fail "the chart's RBAC does not let $sa create pods"
# In-cluster config: the Service IP of `kubernetes`, which only kube-proxy's rules make reachable.
svc_ip=$(k get service kubernetes -o jsonpath='{.spec.clusterIP}')
k -n "$release_ns" logs "$op_pod" | grep -F "server=https://$svc_ip:443" >/dev/null ||
  { k -n "$release_ns" logs "$op_pod" >&2; fail "the operator does not talk to the API server at https://$svc_ip:443 (in-cluster config)"; }
log "operator $op_pod Ready as $sa, API server at https://$svc_ip:443 (kube-proxy -> $(k get endpointslices -l kubernetes.io/service-name=kubernetes -o jsonpath='{.items[0].endpoints[0].addresses[0]}'))"
mark "helm install to operator Ready" "$t0"

k create namespace "$ns" >/dev/null
wi=0
for f in "${worker_files[@]}"; do
  kn create configmap "worker-file-$wi" --from-file="$src/${f%%:*}" >/dev/null
  wi=$((wi + 1))
done
# A pod outside every job (step 4's NetworkPolicy check), started now so it is Ready then.
kn apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: outsider
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: outsider
    image: korovod.test/busybox:1
    imagePullPolicy: Never
    command: [/bin/sh, -c, "trap 'exit 0' TERM; while :; do sleep 1; done"]
EOF

# --- helpers ------------------------------------------------------------------------------------
cond() { # JOB TYPE: the status of the condition
  kn get mpijob "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}" 2>/dev/null || true
}
wait_succeeded() { # JOB TIMEOUT
  local job=$1 deadline=$((SECONDS + $2))
  until [[ $(cond "$job" Succeeded) == True ]]; do
    [[ $(cond "$job" Failed) == True ]] &&
      fail "MPIJob $job Failed: $(kn get mpijob "$job" -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')"
    ((SECONDS < deadline)) || fail "MPIJob $job did not succeed within $2s"
    sleep 2
  done
}
launcher_pods() { # JOB: the launcher pods, oldest first
  kn get pods -l "training.kubeflow.org/job-name=$1,training.kubeflow.org/job-role=launcher" \
    --sort-by=.metadata.creationTimestamp -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
}
launcher_log() { # JOB: the newest launcher pod's log
  local p
  p=$(launcher_pods "$1" | tail -n 1)
  [[ -n $p ]] && kn logs "$p" 2>/dev/null
}
wait_log() { # JOB REGEX TIMEOUT
  local deadline=$((SECONDS + $3)) out
  until out=$(launcher_log "$1") && grep -E -- "$2" <<<"$out" >/dev/null; do
    [[ $(cond "$1" Failed) == True ]] && fail "MPIJob $1 Failed while waiting for '$2' in the launcher's log"
    # korovodrun gives up a round when all its workers failed (e.g. exit 127: a script missing
    # from the image); no need to wait out the timeout for that.
    if grep -E "^korovodrun: every worker of round [0-9]+ has failed" <<<"$out" >/dev/null; then
      echo "$out" | tail -n 20 >&2
      fail "$1: every worker of a korovodrun round failed (launcher log above)"
    fi
    ((SECONDS < deadline)) || { launcher_log "$1" >&2 || true; fail "no '$2' in $1's launcher log within $3s"; }
    sleep 1
  done
}
check_accuracy() { # JOB REGEX-BEFORE-THE-NUMBER MIN
  local out acc
  out=$(launcher_log "$1")
  acc=$(grep -oE -- "$2 [0-9.]+" <<<"$out" | tail -n 1 | awk '{print $NF}')
  [[ -n $acc ]] || { echo "$out" >&2; fail "$1: no final test accuracy in the launcher's log"; }
  awk -v a="$acc" -v m="$3" 'BEGIN {exit !(a > m)}' || { echo "$out" >&2; fail "$1: final test accuracy $acc, want > $3"; }
  echo "$acc"
}
# The job's children by name and label, in the API.
# A failing kubectl or ctr prints a line too: an error never reads as "nothing left".
children() { # JOB
  local out
  out=$(kn get pods,services,secrets,configmaps,jobs.batch,networkpolicies -o name 2>&1) ||
    { echo "error: kubectl get: $out"; return 0; }
  grep -E "/$1(-|\$)" <<<"$out" || true
  out=$(kn get pods -l "training.kubeflow.org/job-name=$1" -o name 2>&1) || { echo "error: kubectl get: $out"; return 0; }
  [[ -z $out ]] || echo "$out"
}
# Containers of the given pod UIDs in the node's containerd (the CRI labels each with its pod's
# UID), and those of them that still have a task (a running or exited process).
node_containers() { # UID...
  local u
  for u in "$@"; do
    ctr containers ls -q "labels.\"io.kubernetes.pod.uid\"==$u" 2>&1 || echo "error: ctr containers ls failed"
  done
}
node_tasks() { # UID...
  local c t
  t=$(ctr tasks ls -q 2>&1) || { echo "error: ctr tasks ls: $t"; return 0; }
  t=" $(tr '\n' ' ' <<<"$t") "
  for c in $(node_containers "$@"); do
    [[ $t == *" $c "* ]] && echo "$c"
  done
  return 0
}
delete_and_check() { # JOB: kubectl delete mpijob; nothing of it stays in the API, no task on the node
  local job=$1 uids deadline
  uids=$(kn get pods -l "training.kubeflow.org/job-name=$job" -o jsonpath='{.items[*].metadata.uid}')
  deleted_uids+=" $uids"
  log "kubectl delete mpijob $job ($(children "$job" | sort -u | tr '\n' ' '))"
  kn delete mpijob "$job" --wait=true --timeout=60s >/dev/null || fail "kubectl delete mpijob $job took over 60s"
  deadline=$((SECONDS + 90))
  until [[ -z $(children "$job") && -z $(node_tasks $uids) ]]; do
    ((SECONDS < deadline)) || { children "$job" >&2; node_tasks $uids >&2; fail "kubectl delete mpijob $job left the above after 90s"; }
    sleep 1
  done
}
deleted_uids=""
# kill_worker_and_wait_recreated POD: SIGKILL the pod's container on the node (ctr), as a crash
# or the OOM killer would, and wait until the operator has recreated the pod (a new uid); the
# old pod's uid joins deleted_uids, whose containers the kubelet must remove by the end.
kill_worker_and_wait_recreated() {
  local pod=$1 old_uid new_uid cid deadline
  old_uid=$(kn get pod "$pod" -o jsonpath='{.metadata.uid}')
  cid=$(kn get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}')
  cid=${cid#containerd://}
  [[ -n $cid ]] || fail "no container ID for $pod"
  log "ctr task kill -s SIGKILL ${cid:0:12} ($pod's container, in $ns)"
  ctr tasks kill -s SIGKILL "$cid" || fail "ctr tasks kill of $pod's container failed"
  deadline=$((SECONDS + 120))
  until new_uid=$(kn get pod "$pod" -o jsonpath='{.metadata.uid}' 2>/dev/null) &&
      [[ -n $new_uid && $new_uid != "$old_uid" ]]; do
    ((SECONDS < deadline)) || fail "$pod was not recreated within 120s of its container's kill"
    sleep 1
  done
  log "$pod recreated (uid ${old_uid:0:8} -> ${new_uid:0:8})"
  deleted_uids+=" $old_uid"
}
# apply_job FILE: kubectl apply of FILE, as is unless --launcher-env or --worker-file was given;
# then through `kubectl patch --local`, saying so.
apply_job() {
  local file=$1 ops=() e
  if ((${#launcher_env[@]})); then
    local vals=()
    for e in "${launcher_env[@]}"; do vals+=("{\"name\":\"${e%%=*}\",\"value\":\"${e#*=}\"}"); done
    ops+=("{\"op\":\"add\",\"path\":\"/spec/mpiReplicaSpecs/Launcher/template/spec/containers/0/env\",\"value\":[$(IFS=,; echo "${vals[*]}")]}")
  fi
  if ((${#worker_files[@]})); then
    local vols=() mounts=() i=0 f
    for f in "${worker_files[@]}"; do
      vols+=("{\"name\":\"wf$i\",\"configMap\":{\"name\":\"worker-file-$i\",\"defaultMode\":493}}")
      mounts+=("{\"name\":\"wf$i\",\"mountPath\":\"${f#*:}\",\"subPath\":\"$(basename "${f%%:*}")\"}")
      i=$((i + 1))
    done
    ops+=("{\"op\":\"add\",\"path\":\"/spec/mpiReplicaSpecs/Worker/template/spec/volumes\",\"value\":[$(IFS=,; echo "${vols[*]}")]}")
    ops+=("{\"op\":\"add\",\"path\":\"/spec/mpiReplicaSpecs/Worker/template/spec/containers/0/volumeMounts\",\"value\":[$(IFS=,; echo "${mounts[*]}")]}")
  fi
  if ((${#ops[@]} == 0)); then
    log "kubectl apply -f ${file#"$src/"}"
    kn apply -f "$file" >/dev/null
    return
  fi
  log "kubectl apply -f ${file#"$src/"}, patched: $(IFS=,; echo "${ops[*]}")"
  printf '[%s]' "$(IFS=,; echo "${ops[*]}")" >"$work/patch.json"
  k patch --local -f "$file" --type=json --patch-file "$work/patch.json" -o yaml >"$work/patched.yaml"
  kn apply -f "$work/patched.yaml" >/dev/null
}
# --- 2. the example, unchanged --------------------------------------------------------------------
t0=$SECONDS
apply_job "$src/examples/pytorch/pytorch_digits.yaml"
wait_log pytorch-digits "^epoch +1/" 240
# While it runs: the SSH Secret mounted in launcher and workers, workers by their DNS names.
for p in $(launcher_pods pytorch-digits) pytorch-digits-worker-0 pytorch-digits-worker-1; do
  kn get pod "$p" -o jsonpath='{.spec.volumes[*].secret.secretName}' | grep -wF pytorch-digits-ssh >/dev/null ||
    fail "pod $p does not mount the job's SSH Secret pytorch-digits-ssh"
done
wait_succeeded pytorch-digits 300
acc=$(check_accuracy pytorch-digits "final test accuracy:" 0.95)
launcher_log pytorch-digits | grep -E "^(digits|epoch 15/|final)" >&2 || true
k get mpijob -n "$ns" pytorch-digits >&2
log "pytorch-digits Succeeded, final test accuracy $acc, in $((SECONDS - t0))s"
mark "pytorch_digits.yaml apply to Succeeded" "$t0"
t0=$SECONDS
delete_and_check pytorch-digits
log "kubectl delete mpijob pytorch-digits: nothing of it left in the API, no task on the node"
mark "delete mpijob to nothing left" "$t0"

# --- 3b. the same training from a few flags: kubectl korovod ---------------------------------------
t0=$SECONDS
job=digits-cli
[[ -x $bin_dir/kubectl-korovod ]] || fail "no $bin_dir/kubectl-korovod (build the korovod target)"
log "kubectl korovod submit $job --follow (kubectl's plugin lookup of $bin_dir/kubectl-korovod)"
PATH=$bin_dir:$PATH timeout 420 kubectl korovod submit "$job" -n "$ns" --workers 2 --image "$worker_image" \
  --cpu 500m --follow -- pytorch_digits.py --epochs 3 >"$work/$job.out" 2>"$work/$job.err" ||
  { cat "$work/$job.out" "$work/$job.err" >&2; fail "kubectl korovod submit $job --follow did not exit 0"; }
grep -E '^\[1,0\]<stdout>:final test accuracy: ' "$work/$job.out" >/dev/null ||
  { cat "$work/$job.out" >&2; fail "$job: --follow did not stream rank 0's final line, tagged [1,0]"; }
for s in "mpijob $job: Created" "mpijob $job: Running" "mpijob $job: Succeeded"; do
  grep -qF "korovod: $s" "$work/$job.err" || { cat "$work/$job.err" >&2; fail "$job: --follow did not say '$s'"; }
done
PATH=$bin_dir:$PATH kubectl korovod logs "$job" -n "$ns" --rank 0 >"$work/$job.rank0"
PATH=$bin_dir:$PATH kubectl korovod logs "$job" -n "$ns" --rank 1 >"$work/$job.rank1"
grep -qF "final test accuracy" "$work/$job.rank0" || fail "$job: logs --rank 0 lacks rank 0's final line"
! grep -vE '^\[1,0\]' "$work/$job.rank0" >/dev/null || fail "$job: logs --rank 0 has other ranks' lines"
! grep -vE '^\[1,1\]' "$work/$job.rank1" >/dev/null || fail "$job: logs --rank 1 has other ranks' lines"
PATH=$bin_dir:$PATH kubectl korovod get "$job" -n "$ns" | grep -qF "State:       Succeeded" ||
  fail "$job: kubectl korovod get does not say Succeeded"
PATH=$bin_dir:$PATH kubectl korovod delete "$job" -n "$ns" >/dev/null
log "$job: submitted, followed to Succeeded ($(grep -oE 'final test accuracy: [0-9.]+' "$work/$job.out")), logs by rank, deleted"
mark "kubectl korovod submit --follow to Succeeded" "$t0"

# --- 4. a worker killed mid-run, and the NetworkPolicy --------------------------------------------
t0=$SECONDS
job=digits-worker-killed
log "$job: a worker's container killed on the node mid-run (backoffLimit 3)"
apply_job "$here/manifests/$job.yaml"
wait_log "$job" "^epoch +2/" 240
np=$(kn get networkpolicy "$job-netpol" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}') ||
  fail "no NetworkPolicy $job-netpol for a job annotated korovod.io/network-policy: \"true\""
[[ $np == "MPIJob/$job" ]] || fail "NetworkPolicy $job-netpol is owned by '$np', not MPIJob/$job"
kn wait --for=condition=Ready pod/outsider --timeout=60s >/dev/null || fail "the outsider pod is not Ready"
w0_ip=$(kn get pod "$job-worker-0" -o jsonpath='{.status.podIP}')
# sshd's banner: the worker's port 2222 answers a pod that the policy does not let in.
out=$(kn exec outsider -- sh -c "nc -w 3 $w0_ip 2222 </dev/null | head -c 64" 2>&1 || true)
if [[ $out == SSH-2.0* ]]; then
  log "NetworkPolicy $job-netpol exists, and is NOT enforced: outsider reached $job-worker-0 ($w0_ip:2222): ${out%%$'\r'*}"
else
  log "outsider could not reach $w0_ip:2222 ('$out'): the bridge CNI enforced a NetworkPolicy?"
  fail "a pod outside the job did not reach a worker's sshd; docs/testing.md says Debian's bridge plugin does not enforce NetworkPolicy: update the docs and this check"
fi
kill_worker_and_wait_recreated "$job-worker-1"
# While it trains again: the operator's status.progress (docs/progress.md), read from rank 0's
# progress lines in the launcher's log with the chart's and the runtime's default intervals
# (10 s each; this run trains about 25 s after the restart: 60 epochs, 10 s, were too few to see
# two steps), advances, and kubectl get shows it in the printer
# columns. The restart cleared the first run's progress or is about to: a step may go down once.
steps=() deadline=$((SECONDS + 420)) advanced=""
until [[ $(cond "$job" Succeeded) == True ]]; do
  [[ $(cond "$job" Failed) == True ]] && fail "MPIJob $job Failed after the kill"
  ((SECONDS < deadline)) || fail "MPIJob $job did not succeed within 420s"
  step=$(kn get mpijob "$job" -o jsonpath='{.status.progress.step}' 2>/dev/null || true)
  if [[ -n $step && ( ${#steps[@]} == 0 || $step != "${steps[-1]}" ) ]]; then
    if ((${#steps[@]} > 0 && step > steps[-1])) && [[ -z $advanced ]]; then
      advanced="${steps[-1]} -> $step"
      kn get mpijob "$job" >"$work/progress-columns.txt"
    fi
    steps+=("$step")
  fi
  sleep 2
done
[[ -n $advanced ]] || { launcher_log "$job" | grep -F korovod-progress >&2 || true
  fail "status.progress.step did not advance while $job trained (seen: ${steps[*]:-none})"; }
head -n 1 "$work/progress-columns.txt" | grep -E 'STEP +SAMPLES/S +LOSS +ETA' >/dev/null &&
  awk -v s="${advanced##* }" 'NR == 2 && index($0, " " s " ") { found = 1 } END { exit !found }' "$work/progress-columns.txt" ||
  { cat "$work/progress-columns.txt" >&2; fail "kubectl get mpijob shows no STEP SAMPLES/S LOSS ETA columns with step ${advanced##* }"; }
log "$job: status.progress.step while training: ${steps[*]}; kubectl get: $(tail -n 1 "$work/progress-columns.txt" | tr -s ' ')"
acc=$(check_accuracy "$job" "final test accuracy:" 0.95)
restarts=$(kn get mpijob "$job" -o jsonpath='{.status.restartCount}')
[[ ${restarts:-0} -ge 1 ]] || fail "$job's status.restartCount is '${restarts}', want >= 1 after a worker was killed"
ev=$(kn get events --field-selector involvedObject.name="$job",reason=MPIJobRestarting -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
grep -E "$job-worker-1 container worker exited with code 137" <<<"$ev" >/dev/null ||
  { echo "$ev" >&2; fail "no MPIJobRestarting event naming $job-worker-1 and exit code 137 (SIGKILL)"; }
launcher_restarts=$(kn get pods -l "training.kubeflow.org/job-name=$job,training.kubeflow.org/job-role=launcher" \
  -o jsonpath='{range .items[*]}{.status.containerStatuses[0].restartCount}{" "}{end}')
log "$job Succeeded after the kill: accuracy $acc, restartCount $restarts, launcher pod(s) $(launcher_pods "$job" | wc -l) with container restarts: $launcher_restarts; event: $(tail -n 1 <<<"$ev")"
mark "worker killed: apply to Succeeded" "$t0"
delete_and_check "$job"
kn get networkpolicy "$job-netpol" >/dev/null 2>&1 && fail "NetworkPolicy $job-netpol outlived its job"
log "$job deleted, its NetworkPolicy with it"

# elastic_scale JOB FILE WHAT: apply FILE (an elastic MPIJob named JOB, 2 workers), kubectl scale
# it to 3 and then 1 while it trains; the ranks must follow, the launcher must never restart, and
# it must Succeed. Run for ssh (5.) and for agent mode (4b.).
elastic_scale() {
  local job=$1 file=$2 what=$3 t0=$SECONDS acc events
  log "$job: kubectl scale mpijob 2 -> 3 -> 1 while it trains"
  apply_job "$file"
  # korovodrun tags each line of a worker: "[<host>:<slot>]<stdout>:epoch 2/150: ..."
  wait_log "$job" "<stdout>:epoch 2/" 240
  kn scale mpijob "$job" --replicas 3 >/dev/null
  wait_log "$job" "<stdout>:3 worker\(s\): epoch" 180
  log "$job: 3 workers training ($(launcher_log "$job" | grep -oE '<stdout>:3 worker.*' | tail -n 1))"
  kn scale mpijob "$job" --replicas 1 >/dev/null
  wait_log "$job" "<stdout>:1 worker\(s\): epoch" 180
  log "$job: 1 worker training ($(launcher_log "$job" | grep -oE '<stdout>:1 worker.*' | tail -n 1))"
  wait_succeeded "$job" 420
  acc=$(check_accuracy "$job" "rank 0 of 1: final test accuracy" 0.95)
  [[ $(launcher_pods "$job" | wc -l) == 1 ]] || fail "$job's launcher was restarted ($(launcher_pods "$job" | wc -l) launcher pods)"
  events=$(kn get events --field-selector involvedObject.name="$job",reason=WorkersChanged -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
  grep -F -- "2 -> 3 workers" <<<"$events" >/dev/null || { echo "$events" >&2; fail "no WorkersChanged event 2 -> 3"; }
  grep -F -- "3 -> 1 workers" <<<"$events" >/dev/null || { echo "$events" >&2; fail "no WorkersChanged event 3 -> 1"; }
  log "$job Succeeded, accuracy $acc, one launcher; events: $(tr '\n' ';' <<<"$events")"
  mark "$what apply to Succeeded" "$t0"
  delete_and_check "$job"
}
# --- 4b. no sshd: korovod.io/launch: agent, under the restricted Pod Security profile -----------
t0=$SECONDS
main_ns=$ns ns=$ns-restricted
k create namespace "$ns" >/dev/null
k label namespace "$ns" pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest >/dev/null
# The profile is enforced: a pod that runs as root is refused at admission.
out=$(kn run root-pod --image=korovod-worker-cpu:0.1.0 --image-pull-policy=Never --restart=Never -- true 2>&1 || true)
grep -F 'violates PodSecurity "restricted' <<<"$out" >/dev/null || fail "namespace $ns does not enforce restricted: kubectl run said: $out"
log "namespace $ns enforces restricted (a root pod is refused: ${out:0:100}...)"
# The example, unchanged.
apply_job "$src/examples/pytorch/pytorch_digits_agent.yaml"
wait_succeeded pytorch-digits-agent 300
acc=$(check_accuracy pytorch-digits-agent "final test accuracy:" 0.95)
log "pytorch-digits-agent Succeeded in $ns, final test accuracy $acc, in $((SECONDS - t0))s"
mark "pytorch_digits_agent.yaml apply to Succeeded" "$t0"
delete_and_check pytorch-digits-agent
# A worker killed mid-run, and another job's launcher refused by this job's agents.
t0=$SECONDS
job=digits-agent-killed
apply_job "$here/manifests/$job.yaml"
# The operator creates the pod after the apply: kubectl wait fails at once on a pod not there yet.
deadline=$((SECONDS + 180))
until kn get "pod/$job-worker-0" >/dev/null 2>&1; do
  ((SECONDS < deadline)) || fail "$job-worker-0 was not created within 180s"
  sleep 1
done
kn wait --for=condition=Ready "pod/$job-worker-0" --timeout=180s >/dev/null || fail "$job-worker-0 not Ready within 180s"
uid=$(kn exec "$job-worker-0" -- id -u) && comm=$(kn exec "$job-worker-0" -- cat /proc/1/comm) ||
  fail "kubectl exec into $job-worker-0 failed"
[[ $uid == 1000 && $comm == korovod-agent ]] || fail "$job-worker-0 runs '$comm' as uid $uid, want korovod-agent as 1000"
for p in $job-worker-0 $job-worker-1 $(launcher_pods "$job"); do
  kn get pod "$p" -o jsonpath='{.spec.volumes[*].name}{" "}{.spec.containers[0].command}' | grep -E 'ssh-auth|sshd' &&
    fail "pod $p mounts the SSH key or runs sshd in agent mode"
done
log "$job-worker-0 runs korovod-agent as uid 1000; no pod of $job mounts an SSH key or runs sshd"
kn apply -f "$here/manifests/agent-intruder.yaml" >/dev/null
deadline=$((SECONDS + 180))
until [[ $(cond agent-intruder Failed) == True ]]; do
  ((SECONDS < deadline)) || { launcher_log agent-intruder >&2 || true; fail "agent-intruder did not fail within 180s"; }
  sleep 2
done
intruder=$(launcher_log agent-intruder)
grep -F "refused" <<<"$intruder" >/dev/null || { echo "$intruder" >&2; fail "agent-intruder's launcher log does not say it was refused"; }
victim=$(kn logs "$job-worker-0")
grep -E "^korovod-agent: refused the connection from " <<<"$victim" >/dev/null ||
  { echo "$victim" >&2; fail "$job-worker-0's agent log shows no refused connection"; }
grep -F "uid=" <<<"$intruder" && fail "agent-intruder ran 'id' in $job-worker-0"
log "agent-intruder (another job's secret) refused by $job-worker-0: $(grep -m1 -F refused <<<"$intruder"); agent: $(grep -m1 -E '^korovod-agent: refused' <<<"$victim")"
delete_and_check agent-intruder
wait_log "$job" "<stdout>:epoch +2/" 240  # korovodrun tags rank 0's lines "[0]<stdout>:"
kill_worker_and_wait_recreated "$job-worker-1"
wait_succeeded "$job" 420
acc=$(check_accuracy "$job" "final test accuracy:" 0.95)
restarts=$(kn get mpijob "$job" -o jsonpath='{.status.restartCount}')
[[ ${restarts:-0} -ge 1 ]] || fail "$job's status.restartCount is '${restarts}', want >= 1 after a worker was killed"
log "$job Succeeded after the kill: restartCount $restarts, accuracy $acc"
mark "agent mode: worker killed, intruder refused, apply to Succeeded" "$t0"
delete_and_check "$job"
# An elastic job in agent mode: the example's manifest with the annotation. A worker added by the
# scale-up runs korovod-agent too, and korovodrun starts its rank through it.
k patch --local -f "$here/manifests/elastic-digits-scaled.yaml" --type=merge -o yaml \
  -p '{"metadata":{"name":"elastic-digits-agent","annotations":{"korovod.io/launch":"agent"}}}' >"$work/elastic-digits-agent.yaml"
elastic_scale elastic-digits-agent "$work/elastic-digits-agent.yaml" "agent mode: elastic 2->3->1"
k delete namespace "$ns" --wait=false >/dev/null
ns=$main_ns

# --- 5. elastic: kubectl scale up and down while it trains ----------------------------------------
elastic_scale elastic-digits-scaled "$here/manifests/elastic-digits-scaled.yaml" "elastic 2->3->1"

# --- 3 (the rest). the deleted jobs' containers leave the node ------------------------------------
# The kubelet removes exited containers of deleted pods in its container GC, once a minute.
t0=$SECONDS
deadline=$((SECONDS + 150))
# shellcheck disable=SC2086
until [[ -z $(node_containers $deleted_uids) ]]; do
  # shellcheck disable=SC2086
  ((SECONDS < deadline)) || { node_containers $deleted_uids >&2; fail "containers of deleted pods still on the node after 150s"; }
  sleep 2
done
log "no container of the deleted jobs' pods on the node"
mark "container GC of deleted pods" "$t0"

# --- 6. uninstall and down ------------------------------------------------------------------------
t0=$SECONDS
kn delete pod outsider --wait=true --timeout=30s >/dev/null
helm uninstall "$release" --namespace "$release_ns" --wait --timeout 60s >/dev/null || fail "helm uninstall failed"
# The Deployment goes at once; its pod through the garbage collector and the kubelet.
k -n "$release_ns" wait --for=delete pod/"$op_pod" --timeout=60s >/dev/null 2>&1 ||
  fail "the operator pod $op_pod outlived helm uninstall by 60s"
[[ -z $(k -n "$release_ns" get all -o name) ]] || { k -n "$release_ns" get all >&2; fail "helm uninstall left the above"; }
node_down_and_check_host
mark "uninstall + down + host check" "$t0"
log "times: $(printf '%s; ' "${times[@]}")"
echo "PASS: operator by helm in-cluster, pytorch_digits.yaml Succeeded, worker kill handled, agent mode under restricted (trains, kill handled, intruder refused, elastic 2->3->1), delete leaves nothing, elastic scale 2->3->1, NetworkPolicy created (not enforced by the bridge CNI), host restored"
