#!/usr/bin/env bash
# An invalid MPIJob is refused by the operator's own validation: field errors, exit 2, no pods.
source "$(dirname "$0")/lib.sh"
set +e
"$KOROVOD" run "$MANIFESTS/invalid.yaml" --work-dir "$TEST_DIR/work" >"$TEST_DIR/out" 2>&1
code=$?
set -e
cat "$TEST_DIR/out"
[[ $code == 2 ]] || fail "exit code $code, want 2"
expect_in "$TEST_DIR/out" 'spec.mpiReplicaSpecs\[Launcher\].replicas: Invalid value: 2: must be 1' "field error"
expect_in "$TEST_DIR/out" 'metadata.name: Invalid value: "Bad_Name"' "name error"
[[ ! -d $TEST_DIR/work/pods ]] || fail "pods were started for an invalid manifest"
echo PASS
