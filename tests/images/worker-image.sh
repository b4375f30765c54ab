#!/usr/bin/env bash
# A worker image as MPIJob pods run it: korovod's Python package imports, korovodrun
# --check-build lists what the image claims, sshd serves on port 2222 both as root and as the
# non-root mpiuser (with a key in the operator's format), and the launcher entrypoint waits
# until the workers' names resolve, then runs mpirun, which reaches them over real ssh.
#   worker-image.sh cpu|tensorflow|cuda
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kind=${1:-}
case $kind in
  cpu) image=korovod-worker-cpu:$TAG ;;
  tensorflow) image=korovod-worker-cpu:$TAG-tensorflow ;;
  cuda) image=korovod-worker-cuda:$TAG ;;
  *) echo "usage: worker-image.sh cpu|tensorflow|cuda" >&2; exit 2 ;;
esac
require_image "$image"

# --- the Python package and what korovodrun says of the image
out=$(run_in "$image" python3 -c 'import korovod, korovod.torch; print("korovod", korovod.__version__)')
expect_text "$out" '^korovod [0-9]+\.[0-9]+\.[0-9]+$' "import korovod.torch"
pass "$image: korovod.torch imports"
check=$(run_in "$image" korovodrun --check-build)
expect_text "$check" '\[X\] PyTorch' "--check-build lists PyTorch"
expect_text "$check" '\[X\] MPI    \(libkorovod_mpi' "--check-build lists MPI"
expect_text "$check" 'mpirun for --mpi: /usr/bin/mpirun' "--check-build finds mpirun"
case $kind in
  tensorflow)
    expect_text "$check" '\[X\] TensorFlow' "--check-build lists TensorFlow"
    expect_text "$check" '\[X\] Keras' "--check-build lists Keras"
    out=$(run_in "$image" korovod-tf-python -c 'import korovod.tensorflow, korovod.keras, tensorflow as tf; print("tf", tf.__version__)')
    expect_text "$out" '^tf 2\.' "korovod.tensorflow imports in the TensorFlow venv" ;;
  cpu)
    expect_text "$check" '\[ \] TensorFlow' "--check-build: no TensorFlow in the CPU image"
    expect_text "$check" '\[ \] NCCL' "--check-build: no NCCL in the CPU image" ;;
  cuda)
    expect_text "$check" '\[X\] NCCL' "--check-build lists NCCL"
    # No GPU here: torch is a CUDA build that finds no device, and korovod still loads.
    out=$(run_in "$image" python3 -c 'import torch, korovod.torch; print("cuda-build", torch.version.cuda, "available", torch.cuda.is_available())')
    expect_text "$out" '^cuda-build [0-9]+\.[0-9]+ available False$' "torch is a CUDA build" ;;
esac
pass "korovodrun --check-build lists what the image claims"

net=$(new_network job)
domain=imgtest.default.svc

# --- sshd on 2222 as root: the default command, the job's key mounted at /root/.ssh
make_ssh_dir "$TEST_DIR/root-ssh" 0
docker run -d --label "korovod.test=$RUN_ID" --name "$RUN_ID-w0" --hostname w0 --network "$net" \
  --network-alias "w0.$domain" -v "$TEST_DIR/root-ssh:/root/.ssh:ro" "$image" >/dev/null
wait_for_log "$RUN_ID-w0" 'Server listening on .* port 2222' 20
out=$(docker run --rm --label "korovod.test=$RUN_ID" --network "$net" -v "$TEST_DIR/root-ssh:/root/.ssh:ro" \
  --entrypoint ssh "$image" -o BatchMode=yes "w0.$domain" 'echo "$(id -un)@$(hostname)"')
[[ $out == root@w0 ]] || fail "ssh as root to w0 gave '$out'"
pass "sshd as root on 2222: ssh with the job's key reaches w0"

# --- sshd as mpiuser (runAsUser 1000): its own config, the key at /home/mpiuser/.ssh
make_ssh_dir "$TEST_DIR/user-ssh" 1000
docker run -d --label "korovod.test=$RUN_ID" --name "$RUN_ID-w1" --hostname w1 --network "$net" \
  --network-alias "w1.$domain" --user 1000:1000 -v "$TEST_DIR/user-ssh:/home/mpiuser/.ssh:ro" \
  "$image" /usr/sbin/sshd -De -f /home/mpiuser/.sshd_config >/dev/null
wait_for_log "$RUN_ID-w1" 'Server listening on .* port 2222' 20
out=$(docker run --rm --label "korovod.test=$RUN_ID" --network "$net" --user 1000:1000 \
  -v "$TEST_DIR/user-ssh:/home/mpiuser/.ssh:ro" --entrypoint ssh "$image" -o BatchMode=yes \
  "w1.$domain" 'echo "$(id -un)@$(hostname)"')
[[ $out == mpiuser@w1 ]] || fail "ssh as mpiuser to w1 gave '$out'"
# ... and a wrong key is refused.
make_ssh_dir "$TEST_DIR/other-ssh" 1000
if docker run --rm --label "korovod.test=$RUN_ID" --network "$net" --user 1000:1000 \
    -v "$TEST_DIR/other-ssh:/home/mpiuser/.ssh:ro" --entrypoint ssh "$image" -o BatchMode=yes \
    "w1.$domain" true >/dev/null 2>&1; then
  fail "sshd as mpiuser let in a key that is not the job's"
fi
pass "sshd as mpiuser on 2222: the job's key gets in, another key does not"

# --- the launcher entrypoint: it waits until both workers resolve, then mpirun runs pi on them.
# A name nobody knows yet fails slowly on a daemon with no way out (about 5 s a lookup on the one
# scripts/dockerd starts, 20 s on a default one), hence the long wait for the first round.
printf 'w2.%s slots=1\nw3.%s slots=1\n' "$domain" "$domain" >"$TEST_DIR/hostfile"
docker run -d --label "korovod.test=$RUN_ID" --name "$RUN_ID-launcher" --hostname launcher \
  --network "$net" -v "$TEST_DIR/root-ssh:/root/.ssh:ro" -v "$TEST_DIR/hostfile:/etc/mpi/hostfile:ro" \
  -e KOROVOD_DNS_BACKOFF_MS=200 \
  "$image" mpirun --hostfile /etc/mpi/hostfile -n 2 --bind-to none /home/mpiuser/pi >/dev/null
wait_for_log "$RUN_ID-launcher" "waiting for DNS: 2 of 2 hosts do not resolve yet \(first: 'w2\.$domain'\)" 90
sleep 1
[[ $(docker inspect --format '{{.State.Running}}' "$RUN_ID-launcher") == true ]] \
  || { docker logs "$RUN_ID-launcher"; fail "the launcher did not wait for the workers' DNS"; }
# w3's sshd starts only once the launcher says it waits for it, as a pod's sshd starts a moment
# after the Service publishes the pod's name: the launcher must wait for it instead of failing
# with "Connection refused" (a CI run once did, when w3's sshd was a little late).
mkdir -p "$TEST_DIR/gate"
docker run -d --label "korovod.test=$RUN_ID" --name "$RUN_ID-w2" --hostname w2 --network "$net" \
  --network-alias "w2.$domain" -v "$TEST_DIR/root-ssh:/root/.ssh:ro" "$image" >/dev/null
docker run -d --label "korovod.test=$RUN_ID" --name "$RUN_ID-w3" --hostname w3 --network "$net" \
  --network-alias "w3.$domain" -v "$TEST_DIR/root-ssh:/root/.ssh:ro" -v "$TEST_DIR/gate:/gate:ro" \
  "$image" bash -c 'until [[ -e /gate/open ]]; do sleep 0.2; done; exec /usr/sbin/sshd -De' >/dev/null
wait_for_log "$RUN_ID-launcher" \
  "waiting for sshd: 1 of 2 hosts do not accept ssh connections yet \\(first: 'w3\\.$domain' port 2222\\)" 90
touch "$TEST_DIR/gate/open"
rc=$(timeout 120 docker wait "$RUN_ID-launcher") || { docker logs "$RUN_ID-launcher"; fail "the launcher did not end within 120 s"; }
log=$(docker logs "$RUN_ID-launcher" 2>&1)
[[ $rc == 0 ]] || { echo "$log"; fail "the launcher exited $rc"; }
expect_text "$log" 'all 2 hosts in /etc/mpi/hostfile resolve' "the entrypoint saw both workers"
expect_text "$log" 'all 2 hosts in /etc/mpi/hostfile accept ssh connections' "the entrypoint saw both sshds"
expect_text "$log" 'pi is approximately 3\.1[34]' "pi over 2 ranks on 2 worker containers"
pass "launcher entrypoint waited for DNS and sshd, then mpirun ran pi on both workers over ssh"
