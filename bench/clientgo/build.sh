#!/usr/bin/env bash
# Builds the client-go benchmark peer into a cache directory outside the repository keyed by a
# hash of its go.mod, go.sum and sources, so a warm machine rebuilds nothing.
# Prints the binary's path on its last line.
set -euo pipefail
case ${1:-} in
  -h|--help) echo "usage: bench/clientgo/build.sh   builds (cached) and prints the clientgo-bench path"; exit 0 ;;
  "") ;;
  *) echo "build.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
key=$(cd "$here" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)
cache=${KOROVOD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/korovod}
out=$cache/clientgo-bench-$key/clientgo-bench
if [[ -x $out ]]; then
  echo "clientgo-bench: cached in $out" >&2
  echo "$out"; exit 0
fi
mkdir -p "$(dirname "$out")"
echo "clientgo-bench: building (client-go $(awk '$1=="k8s.io/client-go"{print $2}' "$here/go.mod"))" >&2
start=$SECONDS
(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out.tmp" .)
mv "$out.tmp" "$out"
echo "clientgo-bench: built in $((SECONDS - start))s" >&2
echo "$out"
