#!/usr/bin/env bash
# Training progress in local mode (docs/progress.md): `korovod run` prints the MPIJob's
# status.progress as the in-process operator reads it from the launcher's log -- every new step,
# cleared when the launcher's container is restarted (training starts over), then the new run's
# steps up to the last one.
source "$(dirname "$0")/lib.sh"
sed "s|@MARKER@|$TEST_DIR/failed-once|g" "$MANIFESTS/progress.yaml" >"$TEST_DIR/progress.yaml"
set +e
"$KOROVOD" run "$TEST_DIR/progress.yaml" --timeout 120 --work-dir "$TEST_DIR/work" >"$TEST_DIR/out" 2>&1
code=$?
set -e
cat "$TEST_DIR/out"
[[ $code == 0 ]] || fail "korovod run exited $code"
# The progress lines in the order they must come, each after the one before.
grep -E '^korovod: \[ *[0-9.]+s\] progress: ' "$TEST_DIR/out" | sed -E 's/^korovod: \[ *[0-9.]+s\] //' >"$TEST_DIR/lines"
want=('progress: step 30/40 \(75%\), 512 samples/s, loss 0.3000, ETA 10s'
      'progress: cleared \(the launcher started the training again\)'
      'progress: step 10/40 \(25%\), 512 samples/s, loss 0.1000, ETA 30s'
      'progress: step 40/40 \(100%\), 512 samples/s, loss 0.4000, ETA 0s')
at=0
for w in "${want[@]}"; do
  n=$(tail -n +$((at + 1)) "$TEST_DIR/lines" | grep -nE -- "^$w\$" | head -1 | cut -d: -f1)
  [[ -n $n ]] || { cat "$TEST_DIR/lines"; fail "no line /$w/ after line $at of the progress lines"; }
  at=$((at + n))
done
expect_in "$TEST_DIR/out" 'MPIJob default/progress: Succeeded' "summary"
echo PASS
