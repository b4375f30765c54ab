#!/usr/bin/env bash
# examples/pi/pi.yaml as containers: pi within 1e-2, rank 1 on the pod pi-worker-1 (its
# container's hostname), Succeeded, and no container or network of the run left.
source "$(dirname "$0")/lib.sh"
require_docker_and korovod-worker-cpu:0.1.0
start_korovod examples/pi/pi.yaml
wait_korovod 300
[[ $CODE == 0 ]] || fail "korovod run exited $CODE"
pi=$(sed -nE 's/.*pi is approximately ([0-9.]+).*/\1/p' "$OUT" | head -1)
[[ -n $pi ]] || fail "no pi estimate in the output"
awk -v p="$pi" 'BEGIN { d = p - 3.14159265358979; if (d < 0) d = -d; exit !(d < 1e-2) }' ||
  fail "pi estimate $pi is not within 1e-2"
expect_in "$OUT" '^\[pi-launcher-[a-z0-9]+\] Rank 1 on host pi-worker-1$' "rank on worker pod"
expect_in "$OUT" 'MPIJob default/pi: Succeeded' "summary"
expect_nothing_left "$(run_id)"
echo "PASS: pi = $pi"
