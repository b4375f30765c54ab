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
expect_in "$TEST_DIR/out" 'MPIJob Restarting: .*is restarting crash-worker-0' "restart event"
expect_in "$TEST_DIR/out" 'restarts: 1 worker pod\(s\) recreated' "restart count"
expect_in "$TEST_DIR/out" 'reason: BackoffLimitExceeded/crash-worker-0/worker/ExitCode3' "reason"
expect_in "$TEST_DIR/out" '^\[crash-worker-0\] worker crashing$' "worker log"
echo PASS
