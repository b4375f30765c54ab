#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl) from the official Go modules pinned in go.mod, into a cache directory outside the
# repository keyed by those versions, so a warm machine rebuilds nothing.
# usage: tests/cluster/build.sh [--node]   prints the bin directory on its last line
#   --node  also the kubelet and kube-proxy (same module and versions) and CoreDNS
#           (tests/cluster/coredns, its own module, cached by its version and go.sum) for
#           `testcluster up --node`
set -euo pipefail
node=0
case ${1:-} in
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --node) node=1 ;;
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
((node)) && tools+=(kubelet kube-proxy coredns)
# CoreDNS: its own module (its plugins' dependencies stay out of the control plane's go.mod) with
# the control plane's client-go, so the build cache serves both; cached by its version and
# go.sum, and linked into $bin.
if ((node)); then
  cdir=$here/coredns
  cver=$(awk '($1 == "github.com/coredns/coredns") {print $2; exit}
              ($1 == "require" && $2 == "github.com/coredns/coredns") {print $3; exit}' "$cdir/go.mod")
  [[ -n $cver ]] || { echo "build.sh: no github.com/coredns/coredns version in $cdir/go.mod" >&2; exit 1; }
  cbin="$cache/coredns-${cver}-$(cat "$cdir/go.sum" "$cdir/main.go" | sha256sum | cut -c1-12)/bin"
fi
missing=()
for t in "${tools[@]}"; do
  if [[ $t == coredns ]]; then
    [[ -x $cbin/coredns && $(readlink "$bin/coredns" 2>/dev/null) == "$cbin/coredns" ]] || missing+=(coredns)
  else
    [[ -x "$bin/$t" ]] || missing+=("$t")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "control plane: cached in $bin" >&2
  echo "$bin"; exit 0
fi
mkdir -p "$bin"
cd "$here"
for t in "${missing[@]}"; do
  if [[ $t == coredns ]]; then
    if [[ ! -x $cbin/coredns ]]; then
      echo "control plane: building coredns ($cver, the plugins in tests/cluster/coredns/main.go); a few minutes cold" >&2
      start=$SECONDS
      mkdir -p "$cbin"
      (cd "$cdir" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$cbin/coredns.tmp" .)
      mv "$cbin/coredns.tmp" "$cbin/coredns"
      echo "control plane: built coredns in $((SECONDS - start))s" >&2
    fi
    ln -sfn "$cbin/coredns" "$bin/coredns"
    continue
  fi
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
