# Shared by the docker-runtime e2e scripts (`korovod run --runtime docker`): paths, skips, the
# run's id, cleanup on any exit, and the check that a run left no container and no network.
# Env (set by CMakeLists.txt): KOROVOD_BIN_DIR, KOROVOD_SOURCE_DIR; DOCKER_HOST is honoured.
set -euo pipefail
: "${KOROVOD_BIN_DIR:?}" "${KOROVOD_SOURCE_DIR:?}"
KOROVOD="$KOROVOD_BIN_DIR/korovod"
TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/korovod-e2e-docker-XXXXXX")
OUT="$TEST_DIR/out"
KOROVOD_PID=""
SHOWN=""  # the output was printed already

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
expect_in() {  # expect_in FILE REGEX WHAT
  grep -Eq -- "$2" "$1" || fail "$3: no line matching /$2/"
}

# The run id korovod printed ("label korovod.run=<id>"), "" before it did.
run_id() { [[ -f $OUT ]] && sed -nE 's/.*label korovod\.run=([0-9a-f]+)\).*/\1/p' "$OUT" | head -1 || true; }

# On any exit: a korovod still running is interrupted (it removes its containers itself), then
# whatever of the run is still there is removed, so a failed test leaves nothing behind either.
cleanup() {
  local code=$? id
  set +e  # cleaning up: nothing here may change the test's exit code
  if [[ -n $KOROVOD_PID ]] && kill -0 "$KOROVOD_PID" 2>/dev/null; then
    kill -INT "$KOROVOD_PID" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$KOROVOD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$KOROVOD_PID" 2>/dev/null || true
  fi
  id=$(run_id)
  if [[ -n $id ]]; then
    docker ps -aq --filter "label=korovod.run=$id" | xargs -r docker rm -f >/dev/null 2>&1 || true
    docker network rm "korovod-$id" >/dev/null 2>&1 || true
  fi
  if [[ $code != 0 && $code != 77 && -z $SHOWN && -s $OUT ]]; then
    echo "---- korovod output ----" >&2
    cat "$OUT" >&2
  fi
  rm -rf "$TEST_DIR"
  exit "$code"
}
trap cleanup EXIT

# Skips (77) when no docker daemon answers or when one of the images is not there.
require_docker_and() {
  command -v docker >/dev/null || skip "no docker CLI on PATH"
  docker info >/dev/null 2>&1 ||
    skip "no docker daemon answers (${DOCKER_HOST:-unix:///var/run/docker.sock}); start one with scripts/dockerd start"
  local image
  for image in "$@"; do
    docker image inspect "$image" >/dev/null 2>&1 ||
      skip "image $image is not on the docker daemon; build it with scripts/images build"
  done
}

# korovod run --runtime docker ARGS... from the source dir, in the background (KOROVOD_PID),
# its output in $OUT.
start_korovod() {
  cd "$KOROVOD_SOURCE_DIR"
  "$KOROVOD" run --runtime docker "$@" >"$OUT" 2>&1 &
  KOROVOD_PID=$!
}

# Waits for korovod (at most $1 seconds; then SIGINT, which fails the test) and prints its
# output; sets CODE to its exit code.
wait_korovod() {
  local limit=$1 waited=0
  while kill -0 "$KOROVOD_PID" 2>/dev/null; do
    if ((waited >= limit * 10)); then
      kill -INT "$KOROVOD_PID"
      wait "$KOROVOD_PID" || true
      KOROVOD_PID=""
      fail "korovod run did not end within ${limit}s"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  set +e
  wait "$KOROVOD_PID"
  CODE=$?
  set -e
  KOROVOD_PID=""
  cat "$OUT"
  SHOWN=1
}

# Nothing of run $1 is left: no container (running or not) and no network with its label.
expect_nothing_left() {
  local id=$1 containers networks
  [[ -n $id ]] || fail "no run id in the output"
  containers=$(docker ps -aq --filter "label=korovod.run=$id")
  [[ -z $containers ]] || fail "containers left behind: $(docker ps -a --filter "label=korovod.run=$id")"
  networks=$(docker network ls -q --filter "label=korovod.run=$id")
  [[ -z $networks ]] || fail "network left behind: $(docker network ls --filter "label=korovod.run=$id")"
  ! docker network inspect "korovod-$id" >/dev/null 2>&1 || fail "network korovod-$id left behind"
}

# A training example's "final test accuracy: A (" line from rank 0 has A above $2.
expect_accuracy_above() {
  local out=$1 min=$2 accuracy
  accuracy=$(sed -nE 's/.*\] final test accuracy: ([0-9.]+) \(.*/\1/p' "$out" | head -1)
  [[ -n $accuracy ]] || fail "no final test accuracy line"
  awk -v a="$accuracy" -v min="$min" 'BEGIN { exit !(a > min) }' ||
    fail "final test accuracy $accuracy is not above $min"
  echo "final test accuracy $accuracy > $min"
}
