#!/usr/bin/env bash
# SIGINT to `korovod run --runtime docker` while mpirun runs ranks in the worker containers:
# korovod exits 130 and leaves no container (running or stopped) and no network of the run.
source "$(dirname "$0")/lib.sh"
require_docker_and korovod-worker-cpu:0.1.0
start_korovod "$KOROVOD_SOURCE_DIR/tests/e2e/docker/manifests/sleeper.yaml"
for _ in $(seq 1 1200); do
  [[ $(grep -c 'rank sleeping' "$OUT" 2>/dev/null || true) -ge 2 ]] && break
  kill -0 "$KOROVOD_PID" 2>/dev/null || break
  sleep 0.1
done
[[ $(grep -c 'rank sleeping' "$OUT" || true) -ge 2 ]] || { cat "$OUT"; fail "ranks never started"; }
id=$(run_id)
[[ -n $id ]] || fail "no run id in the output"
running=$(docker ps -q --filter "label=korovod.run=$id" | wc -l)
[[ $running == 3 ]] || fail "expected 3 running containers (launcher, 2 workers), found $running"
docker network inspect "korovod-$id" >/dev/null || fail "no network korovod-$id while running"
kill -INT "$KOROVOD_PID"
wait_korovod 60
[[ $CODE == 130 ]] || fail "exit code $CODE, want 130"
expect_nothing_left "$id"
echo "PASS"
