#!/usr/bin/env bash
# korovod run examples/pi/pi.yaml [extra flags] succeeds, prints pi within 1e-2, leaves nothing.
source "$(dirname "$0")/lib.sh"
work="$TEST_DIR/work"
set +e
"$KOROVOD" run "$KOROVOD_SOURCE_DIR/examples/pi/pi.yaml" --timeout 240 --work-dir "$work" "$@" \
  >"$TEST_DIR/out" 2>&1
code=$?
set -e
cat "$TEST_DIR/out"
[[ $code == 0 ]] || fail "korovod run exited $code"
pi=$(sed -nE 's/.*pi is approximately ([0-9.]+).*/\1/p' "$TEST_DIR/out" | head -1)
[[ -n $pi ]] || fail "no pi estimate in the output"
awk -v p="$pi" 'BEGIN { d = p - 3.14159265358979; if (d < 0) d = -d; exit !(d < 1e-2) }' ||
  fail "pi estimate $pi is not within 1e-2"
expect_in "$TEST_DIR/out" '^\[pi-launcher-[a-z0-9]+\] Rank 1 on host pi-worker-1$' "rank on worker pod"
expect_in "$TEST_DIR/out" 'MPIJob default/pi: Succeeded' "summary"
left=$(processes_of_run "$work")
[[ -z $left ]] || fail "processes left behind: $left"
echo "PASS: pi = $pi"
