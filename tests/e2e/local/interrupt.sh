#!/usr/bin/env bash
# SIGINT while mpirun runs ranks in the worker pods: korovod exits 130 and no process of the
# job (launcher, mpirun, rsh agent, orted, ranks, workers) is left.
source "$(dirname "$0")/lib.sh"
work="$TEST_DIR/work"
"$KOROVOD" run "$MANIFESTS/sleeper.yaml" --work-dir "$work" "$@" >"$TEST_DIR/out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q 'rank sleeping' "$TEST_DIR/out" 2>/dev/null && [[ $(grep -c 'rank sleeping' "$TEST_DIR/out") -ge 2 ]] && break
  sleep 0.1
done
cat "$TEST_DIR/out"
[[ $(grep -c 'rank sleeping' "$TEST_DIR/out") -ge 2 ]] || { kill -9 $pid; fail "ranks never started"; }
before=$(processes_of_run "$work")
echo "processes of the run before SIGINT:"; echo "$before"
echo "$before" | grep orted >/dev/null || fail "no orted among the run's processes"
kill -INT $pid
set +e
wait $pid
code=$?
set -e
cat "$TEST_DIR/out"
[[ $code == 130 ]] || fail "exit code $code, want 130"
sleep 0.5
left=$(processes_of_run "$work")
[[ -z $left ]] || fail "processes left behind: $left"
for p in $(echo "$before" | awk '{print $1}'); do
  [[ ! -e /proc/$p ]] || fail "pid $p is still there"
done
echo PASS
