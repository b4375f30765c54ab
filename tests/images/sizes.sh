#!/usr/bin/env bash
# The images' sizes against their goals (docs/images.md): the operator at most 100 MB, the CPU
# worker with PyTorch at most 1.5 GB. Sizes as `docker image inspect` reports them
# (uncompressed, every layer), in MB of 10^6 bytes. The TensorFlow and CUDA images have no goal:
# their sizes are printed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
size_mb() { echo $(( $(docker image inspect --format '{{.Size}}' "$1") / 1000000 )); }
status=0
check() {  # check IMAGE GOAL_MB|-
  require_image "$1"
  local mb
  mb=$(size_mb "$1")
  if [[ $2 == - ]]; then
    echo "size: $1 $mb MB (no goal)"
  elif ((mb <= $2)); then
    echo "size: $1 $mb MB <= $2 MB"
  else
    echo "FAIL: $1 is $mb MB, over its goal of $2 MB" >&2
    status=1
  fi
}
check "korovod-operator:$TAG" 100
check "korovod-worker-cpu:$TAG" 1500
check "korovod-worker-cpu:$TAG-tensorflow" -
check "korovod-worker-cuda:$TAG" -
exit $status
