#!/usr/bin/env bash
# An invalid MPIJob is refused by the operator's own validation: field errors, exit 2, no pods;
# so is one whose fields have other types than the CRD's (as a cluster's API server refuses it).
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

set +e
"$KOROVOD" run "$MANIFESTS/invalid-types.yaml" --work-dir "$TEST_DIR/work-types" >"$TEST_DIR/out-types" 2>&1
code=$?
set -e
cat "$TEST_DIR/out-types"
[[ $code == 2 ]] || fail "exit code $code for invalid-types.yaml, want 2"
expect_in "$TEST_DIR/out-types" 'spec.slotsPerWorker: Invalid value: 1e\+42: must be an int32 integer' "range error"
expect_in "$TEST_DIR/out-types" 'spec.runPolicy.backoffLimit: Invalid value: "number": must be of type integer' "type error"
expect_in "$TEST_DIR/out-types" 'spec.mpiReplicaSpecs.Launcher.replicas: Invalid value: "string": must be of type integer' "type error"
[[ ! -d $TEST_DIR/work-types/pods ]] || fail "pods were started for a manifest of the wrong types"
echo PASS
