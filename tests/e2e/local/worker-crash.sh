#!/usr/bin/env bash
# A worker that exits 3 (restartPolicy Never, backoffLimit 1): the operator's policy recreates
# the failed worker pod once (restartCount 1), and the second failure exhausts the budget:
# Failed with BackoffLimitExceeded/<pod>/<container>/ExitCode3.
source "$(dirname "$0")/lib.sh"
set +e
"$KOROVOD" run "$MANIFESTS/worker-crashes.yaml" --timeout 120 --work-dir "$TEST_DIR/work" \
  >"$TEST_DIR/out" 2>&1
code=$?
set -e
cat "$TEST_DIR/out"
[[ $code == 1 ]] || fail "exit code $code, want 1 (MPIJob Failed)"
crashes=$(grep -c '^\[crash-worker-0\] worker crashing$' "$TEST_DIR/out" || true)
[[ $crashes == 2 ]] || fail "worker ran $crashes times, want 2 (the pod, then its one replacement)"
expect_in "$TEST_DIR/out" 'worker pod crash-worker-0 Failed$' "failed worker pod"
expect_in "$TEST_DIR/out" 'restarts: 1 worker pod\(s\) recreated' "restart count"
expect_in "$TEST_DIR/out" 'reason: BackoffLimitExceeded/crash-worker-0/worker/ExitCode3' "reason"
echo PASS
