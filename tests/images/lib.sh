# Shared by the image tests: a label and names of their own for every container and network a
# test makes, removed when it exits (also on failure), and assertions.
# Env (set by CMakeLists.txt): KOROVOD_SOURCE_DIR, KOROVOD_IMAGE_TAG (default dev).
set -euo pipefail
: "${KOROVOD_SOURCE_DIR:?}"
TAG=${KOROVOD_IMAGE_TAG:-dev}
RUN_ID=korovod-imgtest-$$
TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$RUN_ID-XXXXXX")

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }

cleanup() {
  local ids
  ids=$(docker ps -aq --filter "label=korovod.test=$RUN_ID" 2>/dev/null || true)
  [[ -z $ids ]] || docker rm -f $ids >/dev/null 2>&1 || true
  ids=$(docker network ls -q --filter "label=korovod.test=$RUN_ID" 2>/dev/null || true)
  [[ -z $ids ]] || docker network rm $ids >/dev/null 2>&1 || true
  rm -rf "$TEST_DIR"
}
trap cleanup EXIT

docker info >/dev/null 2>&1 \
  || fail "no Docker daemon answers (the docker_daemon fixture runs scripts/dockerd start)"

require_image() {
  docker image inspect "$1" >/dev/null 2>&1 \
    || fail "image $1 does not exist (the images fixture runs scripts/images build)"
}

# run_in IMAGE ARGS...: a throwaway container of IMAGE; its output on stdout, its exit code.
run_in() {
  local image=$1
  shift
  docker run --rm --label "korovod.test=$RUN_ID" "$image" "$@"
}

# new_network NAME: a user-defined network of this test (the daemon has no default bridge).
new_network() {
  docker network create --label "korovod.test=$RUN_ID" "$RUN_ID-$1" >/dev/null
  echo "$RUN_ID-$1"
}

expect_text() {  # expect_text TEXT REGEX WHAT
  grep -Eq -- "$2" <<<"$1" || { printf '%s\n' "$1"; fail "$3: no line matching /$2/"; }
}

# A key pair in the operator's format (ECDSA P-521, as the <job>-ssh Secret), laid out as the
# Secret's volume: id_rsa, id_rsa.pub, authorized_keys; owned by uid:gid $2.
make_ssh_dir() {  # make_ssh_dir DIR UID
  mkdir -p "$1"
  ssh-keygen -q -t ecdsa -b 521 -N '' -f "$1/id_rsa" -C korovod-image-test
  cp "$1/id_rsa.pub" "$1/authorized_keys"
  chmod 0600 "$1/id_rsa" "$1/authorized_keys"
  chown -R "$2:$2" "$1"
}

# wait_for_log CONTAINER REGEX SECONDS: until the container's output matches.
wait_for_log() {
  local i
  for ((i = 0; i < $3 * 4; i++)); do
    docker logs "$1" 2>&1 | grep -Eq -- "$2" && return 0
    sleep 0.25
  done
  docker logs "$1" >&2 || true
  fail "container $1 printed nothing matching /$2/ within $3 s"
}
