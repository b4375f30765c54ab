#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl) from the official Go modules pinned in go.mod, into a cache directory outside the
# repository keyed by those versions, so a warm machine rebuilds nothing.
# usage: tests/cluster/build.sh        prints the bin directory on its last line
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "build.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
k8s=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$here/go.mod")
etcd=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' "$here/go.mod")
key="k8s-${k8s}-etcd-${etcd}-$(sha256sum "$here/go.sum" | cut -c1-12)"
cache=${KOROVOD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/korovod}
bin="$cache/$key/bin"
tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
missing=()
for t in "${tools[@]}"; do [[ -x "$bin/$t" ]] || missing+=("$t"); done
if ((${#missing[@]} == 0)); then
  echo "control plane: cached in $bin" >&2
  echo "$bin"; exit 0
fi
mkdir -p "$bin"
cd "$here"
for t in "${missing[@]}"; do
  case $t in
    etcd) pkg=./cmd/etcd ;;
    kubectl) pkg=k8s.io/kubernetes/cmd/kubectl ;;
    *) pkg=k8s.io/kubernetes/cmd/$t ;;
  esac
  echo "control plane: building $t ($pkg, kubernetes $k8s, etcd $etcd); the first build takes minutes" >&2
  start=$SECONDS
  # Stamp the release into the binaries so `kubectl version` and discovery report it.
  minor=$(echo "$k8s" | cut -d. -f2)
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$k8s -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$bin/$t.tmp" "$pkg"
  mv "$bin/$t.tmp" "$bin/$t"
  echo "control plane: built $t in $((SECONDS - start))s" >&2
done
echo "$bin"
