#!/usr/bin/env bash
# The README's PyTorch example as containers: exactly
#   build/bin/korovod run --runtime docker examples/pytorch/pytorch_digits.yaml
# with the korovod-worker-cpu image: the launcher's mpirun reaches the workers' real sshd over
# ssh on the job's network; the job Succeeds, rank 0 reports 15 epochs, the final test accuracy
# exceeds 0.95, and no container or network of the run is left.
source "$(dirname "$0")/lib.sh"
require_docker_and korovod-worker-cpu:0.1.0
start_korovod examples/pytorch/pytorch_digits.yaml
wait_korovod 600
[[ $CODE == 0 ]] || fail "korovod run exited $CODE"
expect_in "$OUT" 'MPIJob default/pytorch-digits: Succeeded' "summary"
expect_in "$OUT" '\] digits: [0-9]+ training and [0-9]+ test samples, 2 rank\(s\)' "start line"
epochs=$(grep -Ec '\] epoch +[0-9]+/15: train loss [0-9.]+ accuracy [0-9.]+ \| test loss' "$OUT" || true)
[[ $epochs == 15 ]] || fail "expected 15 epoch lines from rank 0, got $epochs"
expect_accuracy_above "$OUT" 0.95
expect_nothing_left "$(run_id)"
echo "PASS"
