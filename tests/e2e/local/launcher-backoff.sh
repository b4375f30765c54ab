#!/usr/bin/env bash
# A launcher that exits 1 with backoffLimit 1: retried once (two launcher pods), then the MPIJob
# is Failed, korovod exits non-zero, and the summary names the reason.
source "$(dirname "$0")/lib.sh"
set +e
"$KOROVOD" run "$MANIFESTS/launcher-fails.yaml" --timeout 120 --work-dir "$TEST_DIR/work" \
  >"$TEST_DIR/out" 2>&1
code=$?
set -e
cat "$TEST_DIR/out"
[[ $code == 1 ]] || fail "exit code $code, want 1 (MPIJob Failed)"
failed=$(grep -cE 'launcher pod failing-launcher-[a-z0-9]+ Failed$' "$TEST_DIR/out" || true)
[[ $failed == 2 ]] || fail "$failed failed launcher pods, want 2 (one try, one retry)"
expect_in "$TEST_DIR/out" 'MPIJob default/failing: Failed' "summary result"
expect_in "$TEST_DIR/out" 'reason: BackoffLimitExceeded' "summary reason"
echo PASS
