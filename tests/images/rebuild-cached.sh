#!/usr/bin/env bash
# `scripts/images build` a second time with nothing changed rebuilds nothing: every step of
# every image comes from the build cache, and no image gets a new ID.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cache=${KOROVOD_CACHE:-$HOME/.cache/korovod}
refs=("korovod-operator:$TAG" "korovod-worker-cpu:$TAG" "korovod-worker-cpu:$TAG-tensorflow" "korovod-worker-cuda:$TAG")
declare -A before
for r in "${refs[@]}"; do
  require_image "$r"
  before[$r]=$(docker image inspect --format '{{.Id}}' "$r")
done
"$KOROVOD_SOURCE_DIR/scripts/images" build
for r in "${refs[@]}"; do
  [[ $(docker image inspect --format '{{.Id}}' "$r") == "${before[$r]}" ]] || fail "$r got a new image ID"
done
# BuildKit's plain log: a step that ran ends with "#N DONE <time>", one taken from the cache
# with "#N CACHED". Steps are the vertices named "[<stage> k/n] ..."; [internal] ones (loading
# the Dockerfile and the context) and FROM (resolving the local base image) always say DONE.
for name in operator worker-cpu worker-tf worker-cuda; do
  log=$cache/images/build-$name.log
  ran=$(awk '
    /^#[0-9]+ \[[^]]* [0-9]+\/[0-9]+\] / && !/\] FROM / { step[$1] = $0 }
    /^#[0-9]+ DONE/ { if ($1 in step) print step[$1] }' "$log")
  [[ -z $ran ]] || { echo "$ran"; fail "$name: steps ran again although nothing changed (log $log)"; }
  cached=$(grep -c '^#[0-9]* CACHED$' "$log" || true)
  ((cached > 0)) || fail "$name: no step came from the cache (log $log)"
  echo "$name: $cached steps from the cache, none ran"
done
pass "a second scripts/images build rebuilt nothing"
