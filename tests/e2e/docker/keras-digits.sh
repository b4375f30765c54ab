#!/usr/bin/env bash
# examples/tensorflow/keras_digits.yaml as containers of korovod-worker-cpu:0.1.0-tensorflow
# (korovod.keras, model.fit): Succeeded, 12 epochs from rank 0, final test accuracy above 0.95,
# and no container or network of the run left.
source "$(dirname "$0")/lib.sh"
require_docker_and korovod-worker-cpu:0.1.0-tensorflow
start_korovod examples/tensorflow/keras_digits.yaml
wait_korovod 900
[[ $CODE == 0 ]] || fail "korovod run exited $CODE"
expect_in "$OUT" 'MPIJob default/keras-digits: Succeeded' "summary"
epochs=$(grep -Ec '\] epoch +[0-9]+/12: train loss [0-9.]+ accuracy [0-9.]+' "$OUT" || true)
[[ $epochs == 12 ]] || fail "expected 12 epoch lines from rank 0, got $epochs"
expect_accuracy_above "$OUT" 0.95
expect_nothing_left "$(run_id)"
echo "PASS"
