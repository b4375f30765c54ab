#!/usr/bin/env bash
# Builds helm from its official Go module (helm.sh/helm/v3) into a cache directory outside the
# repository keyed by version, so a warm machine rebuilds nothing. Prints the helm path last.
set -euo pipefail
usage() {
  cat <<'USAGE'
usage: tests/cluster/helm.sh [--cached]
  builds helm (cached by version) and prints its path on the last line
  --cached   build nothing: print the path if it is cached, else exit 1
USAGE
}
# Helm 3.19 is the Helm 3 line built against the Kubernetes 1.34 client libraries, the same
# minor as the test control plane (tests/cluster/go.mod).
version=v3.19.5
only_cached=0
for a in "$@"; do
  case $a in
    -h|--help) usage; exit 0 ;;
    --cached) only_cached=1 ;;
    *) echo "helm.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
cache=${KOROVOD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/korovod}
dir=$cache/helm-$version
if [[ -x $dir/helm ]]; then
  echo "helm: $version cached in $dir" >&2
  echo "$dir/helm"; exit 0
fi
((only_cached == 0)) || exit 1
echo "helm: building helm.sh/helm/v3/cmd/helm@$version from its Go module (minutes when cold)" >&2
start=$SECONDS
mkdir -p "$dir.tmp"
CGO_ENABLED=0 GOBIN="$dir.tmp" go install -trimpath \
  -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
  "helm.sh/helm/v3/cmd/helm@$version"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
"$dir/helm" version --short >&2
echo "helm: built in $((SECONDS - start))s" >&2
echo "$dir/helm"
