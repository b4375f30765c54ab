#!/usr/bin/env bash
# Local mode gives a job the operator's job secret as on a cluster: the launcher pod finds it in
# the file KOROVOD_JOB_SECRET_FILE names (read-only, 64 hex digits, the value in no env var), its
# two TCP ranks prove it to each other and to rank 0's store, and an outsider attacking the store
# meanwhile is refused and logged while the job's allreduces stay correct. The value in the pod
# is the Secret's (the materialized volume, kept with --keep).
source "$(dirname "$0")/lib.sh"
work="$TEST_DIR/work"
sed "s|@INTRUDER@|$KOROVOD_SOURCE_DIR/worker-runtime/tests/tcp_intruder.py|" "$MANIFESTS/job-secret.yaml" \
  >"$TEST_DIR/job-secret.yaml"
set +e
"$KOROVOD" run "$TEST_DIR/job-secret.yaml" --timeout 120 --keep --work-dir "$work" >"$TEST_DIR/out" 2>&1
code=$?
set -e
cat "$TEST_DIR/out"
[[ $code == 0 ]] || fail "korovod run exited $code"
expect_in "$TEST_DIR/out" '^\[secret-launcher-[a-z0-9]+\] JOB-SECRET-E2E-OK$' "the launcher's verdict"
expect_in "$TEST_DIR/out" 'TCP-WORKER-OK size 2' "the ranks' allreduces"
expect_in "$TEST_DIR/out" 'rendezvous store on port [0-9]+: closed the connection from 127\.0\.0\.1:' "refusals logged"
expect_in "$TEST_DIR/out" '^\[secret-launcher-[a-z0-9]+\] INTRUDER attempts=[1-9]' "the intruder ran"
secret_file=$(find "$work/pods" -path '*secret-launcher*/volumes/korovod-job-secret/secret' | head -1)
[[ -n $secret_file ]] || fail "no materialized korovod-job-secret volume under $work/pods"
grep -qxE '[0-9a-f]{64}' "$secret_file" || fail "$secret_file does not hold 64 hex digits"
! grep -rqF "$(cat "$secret_file")" "$TEST_DIR/out" || fail "the secret's value shows in the output"
echo PASS
