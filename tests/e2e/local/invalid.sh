#!/usr/bin/env bash
# An invalid MPIJob is refused by the operator's own validation: field errors, exit 2, no pods;
# so is one whose fields have other types than the CRD's (as a cluster's API server refuses it).
source "$(dirname "$0")/lib.sh"

# refused NAME: runs manifests/NAME.yaml, which must exit 2 and start no pod; its output is
# left in $TEST_DIR/NAME.out.
refused() {
  local out=$TEST_DIR/$1.out work=$TEST_DIR/work-$1 code
  set +e
  "$KOROVOD" run "$MANIFESTS/$1.yaml" --work-dir "$work" >"$out" 2>&1
  code=$?
  set -e
  cat "$out"
  [[ $code == 2 ]] || fail "exit code $code for $1.yaml, want 2"
  [[ ! -d $work/pods ]] || fail "pods were started for $1.yaml"
}

refused invalid
expect_in "$TEST_DIR/invalid.out" 'spec.mpiReplicaSpecs\[Launcher\].replicas: Invalid value: 2: must be 1' "field error"
expect_in "$TEST_DIR/invalid.out" 'metadata.name: Invalid value: "Bad_Name"' "name error"

refused invalid-types
expect_in "$TEST_DIR/invalid-types.out" 'spec.slotsPerWorker: Invalid value: 1e\+42: must be an int32 integer' "range error"
expect_in "$TEST_DIR/invalid-types.out" 'spec.runPolicy.backoffLimit: Invalid value: "number": must be of type integer' "type error"
expect_in "$TEST_DIR/invalid-types.out" 'spec.mpiReplicaSpecs.Launcher.replicas: Invalid value: "string": must be of type integer' "type error"
echo PASS
