#!/usr/bin/env bash
# Elastic training in local mode (`korovod run`, docs/elastic.md "Locally"): the elastic example
# manifest, with korovodrun's elastic_contract_worker as the workload, where one worker pod fails
# once mid-training (its container exits 1 after a few seconds; the replacement pod does not).
# The operator replaces the failed pod, discover_hosts.sh drops it and lists the replacement,
# korovodrun runs a round without it and then one with its replacement, and the job Succeeds
# with its first launcher (no launcher restart). What local mode lacks for the other scenarios
# (kubectl scale, kubectl delete pod: no API server) is in docs/elastic.md.
# Skips (77) when korovodrun or elastic_contract_worker is not built.
source "$(dirname "$0")/lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
[[ -x $KOROVOD_BIN_DIR/korovodrun ]] || { echo "SKIP: korovodrun is not built"; exit 77; }
worker=$(ls "$KOROVOD_BIN_DIR"/../worker-runtime/tests/korovodrun/elastic_contract_worker \
  "$KOROVOD_BIN_DIR"/elastic_contract_worker 2>/dev/null | head -1 || true)
[[ -x $worker ]] || { echo "SKIP: elastic_contract_worker is not built"; exit 77; }

job=pytorch-elastic-digits
manifest=$TEST_DIR/job.yaml
done_file=$TEST_DIR/done
mkdir -p "$TEST_DIR/mark"
sed -E "s|pytorch_elastic_digits.py, --epochs, \"[0-9]+\"|$worker, $done_file|" \
  "$KOROVOD_SOURCE_DIR/examples/pytorch/pytorch_elastic_digits.yaml" >"$manifest"
grep -q "$worker" "$manifest" || fail "the example's launcher args changed: no workload substituted"
# The workers: the first to get past 6 s (mkdir is atomic) fails once; every other worker pod,
# its replacement included, stays up. A hostPath volume holds the mark across pods.
cat >>"$manifest" <<YAML
              command: [sh, -c, "sleep 6; if mkdir /mark/failed 2>/dev/null; then echo worker failing once; exit 1; fi; exec sleep 100000"]
              volumeMounts:
                - name: mark
                  mountPath: /mark
          volumes:
            - name: mark
              hostPath:
                path: $TEST_DIR/mark
YAML
out=$TEST_DIR/out
"$KOROVOD" run "$manifest" --timeout 240 --work-dir "$TEST_DIR/work" >"$out" 2>&1 &
run=$!
says() { grep -Eq -- "$1" "$out"; }
until_says() {  # until_says SECONDS REGEX WHAT
  local end=$((SECONDS + $1))
  until says "$2"; do
    kill -0 "$run" 2>/dev/null || { cat "$out"; fail "korovod run ended before: $3"; }
    [[ $SECONDS -lt $end ]] || { kill "$run"; wait "$run" || true; cat "$out"; fail "$3 (not within $1 s)"; }
    sleep 0.5
  done
}
until_says 120 'round 1 formed: 2 workers' "round 1 with 2 workers"
until_says 60 'worker failing once' "a worker pod failing"
until_says 60 'round [0-9]+: 1 workers?' "a round without the failed worker"
until_says 90 'round ([2-9]|[1-9][0-9]+) formed: 2 workers' "a round with the replacement"
touch "$done_file"
set +e
wait "$run"
code=$?
set -e
cat "$out"
[[ $code == 0 ]] || fail "korovod run exit code $code, want 0 (MPIJob Succeeded)"
expect_in "$out" 'restarts: 1 worker pod\(s\) recreated' "one worker pod recreated"
launchers=$(grep -Eo '\[pytorch-elastic-digits-launcher[^]]*\]' "$out" | sort -u | wc -l)
[[ $launchers == 1 ]] || fail "$launchers launcher pods, want 1 (no launcher restart)"
left=$(processes_of_run "$TEST_DIR/work")
[[ -z $left ]] || fail "processes left behind: $left"
echo PASS
