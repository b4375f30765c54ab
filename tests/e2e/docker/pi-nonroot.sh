#!/usr/bin/env bash
# mpi-operator's non-root pattern as containers: launcher and workers run as uid 1000
# (mpiuser), the job's ssh Secret is mounted at /home/mpiuser/.ssh and the workers run sshd with
# the image's /home/mpiuser/.sshd_config; mpirun logs in as mpiuser, pi is within 1e-2, and no
# container or network of the run is left.
source "$(dirname "$0")/lib.sh"
require_docker_and korovod-worker-cpu:0.1.0
start_korovod "$KOROVOD_SOURCE_DIR/tests/e2e/docker/manifests/pi-nonroot.yaml"
wait_korovod 300
[[ $CODE == 0 ]] || fail "korovod run exited $CODE"
expect_in "$OUT" '^\[pi-nonroot-worker-1\] Accepted publickey for mpiuser ' "ssh login as mpiuser"
pi=$(sed -nE 's/.*pi is approximately ([0-9.]+).*/\1/p' "$OUT" | head -1)
[[ -n $pi ]] || fail "no pi estimate in the output"
awk -v p="$pi" 'BEGIN { d = p - 3.14159265358979; if (d < 0) d = -d; exit !(d < 1e-2) }' ||
  fail "pi estimate $pi is not within 1e-2"
expect_in "$OUT" 'MPIJob default/pi-nonroot: Succeeded' "summary"
expect_nothing_left "$(run_id)"
echo "PASS: pi = $pi as mpiuser"
