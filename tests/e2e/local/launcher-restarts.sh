#!/usr/bin/env bash
# A launcher that always exits 1 under the default restartPolicy OnFailure, backoffLimit 1: its
# container runs twice (one restart, after a back-off of at least 10 s, as the kubelet waits),
# then the MPIJob is Failed with BackoffLimitExceeded, and the summary counts the one restart.
source "$(dirname "$0")/lib.sh"
set +e
"$KOROVOD" run "$MANIFESTS/launcher-restarts.yaml" --timeout 120 --work-dir "$TEST_DIR/work" \
  >"$TEST_DIR/out" 2>&1
code=$?
set -e
cat "$TEST_DIR/out"
[[ $code == 1 ]] || fail "exit code $code, want 1 (MPIJob Failed)"
expect_in "$TEST_DIR/out" 'reason: BackoffLimitExceeded' "summary reason"
expect_in "$TEST_DIR/out" ' 1 launcher failure\(s\), 1 container restart\(s\)' "summary counts the one restart"
runs=$(grep -c 'launcher run$' "$TEST_DIR/out" || true)
[[ $runs == 2 ]] || fail "the launcher container ran $runs times, want 2 (a run and one restart)"
restart=$(grep -E 'container launcher restarted \(restart 1\)' "$TEST_DIR/out" | head -n1)
[[ -n $restart ]] || fail "no progress line for the restart"
secs() { sed -E 's/^korovod: \[ *([0-9.]+)s\].*/\1/' <<<"$1"; }
started=$(grep -E 'launcher pod restarting-launcher-[a-z0-9]+ started$' "$TEST_DIR/out" | head -n1)
waited=$(awk -v a="$(secs "$started")" -v b="$(secs "$restart")" 'BEGIN { print (b - a >= 9.5) ? 1 : 0 }')
[[ $waited == 1 ]] || fail "restarted $(secs "$restart")s vs started $(secs "$started")s: no 10 s back-off"
echo PASS
