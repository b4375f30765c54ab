# What the real-node tests share (sourced by real-node.sh and mpijob-node.sh): the host as the
# test sees it, taking the node up and down, and the cleanup trap.
# The sourcing script sets: tc (testcluster), state (its state dir), work (a scratch dir),
# keep_on_failure (0/1) and log(); it may define node_failure_report (what to print when it
# fails while the node is up). Then: node_record_host_before, node_up, ..., node_down_and_check_host.

node_bridge=${KOROVOD_NODE_BRIDGE:-korovod0}
node_is_up=0

fail() { echo "FAIL: $*" >&2; exit 1; }

# The host as this script sees it (independent of testcluster's own record): what a node may
# change, and must change back.
node_host_state() {
  local s v t
  for s in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward \
    net.ipv4.conf.all.route_localnet net.netfilter.nf_conntrack_max \
    net.netfilter.nf_conntrack_tcp_timeout_established net.bridge.bridge-nf-call-iptables; do
    echo "sysctl $s $(sysctl -n "$s" 2>/dev/null || echo -)"
  done
  for v in iptables ip6tables; do
    for t in filter nat mangle raw; do
      "$v" -t "$t" -S 2>/dev/null | grep -E -- 'KUBE-|CNI-' | sed "s/^/$v $t /" || true
    done
  done
  nft list tables 2>/dev/null | grep -F kube-proxy | sed 's/^/nft /' || true
  ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' |
    grep -E "^($node_bridge|veth[0-9a-f]{8})$" | sed 's/^/link /' || true
  awk '{print $5}' /proc/self/mountinfo | grep -E "^($state/|/var/lib/kubelet|/run/netns|/run/containerd)" |
    sed 's/^/mount /' || true
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name 'kubepods*' 2>/dev/null | sed 's/^/cgroup /' || true
  for s in /var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd /run/netns /run/xtables.lock; do
    [[ -e $s ]] && echo "path $s"
  done
  # The pattern from a file: on grep's own command line it would find grep.
  grep -lsF -f <(echo "$state/") /proc/[0-9]*/cmdline 2>/dev/null | grep -vxF "/proc/$$/cmdline" |
    sed 's/^/process /' || true
  return 0
}

# Records the host before the node. A run killed before its trap (ctest's timeout) may have left
# a node in $state: it goes first, so that "before" is the host without it.
node_record_host_before() {
  if [[ -d $state/node-record || -d $state/node ]]; then
    log "taking down a node a killed run left in $state"
    "$tc" down --state-dir "$state" >&2 || fail "could not take down the node left in $state"
  fi
  node_host_state | sort >"$work/host-before"
  log "host before: $(wc -l <"$work/host-before") lines recorded"
}

# testcluster up --node; its environment (KUBECONFIG, PATH, CONTAINERD_ADDRESS) into this shell.
node_up() {
  log "testcluster up --node (state $state)"
  node_is_up=1
  "$tc" up --node --state-dir "$state" >"$work/env" || fail "testcluster up --node failed"
  # shellcheck disable=SC1091
  source "$work/env"
  [[ -n ${CONTAINERD_ADDRESS:-} ]] || fail "testcluster env names no CONTAINERD_ADDRESS"
}

# testcluster down, then the host must be as node_record_host_before saw it.
node_down_and_check_host() {
  log "testcluster down"
  node_is_up=0
  "$tc" down --state-dir "$state" >&2 || fail "testcluster down failed (it says what it left)"
  node_host_state | sort >"$work/host-after"
  if ! diff -u "$work/host-before" "$work/host-after" >"$work/host.diff"; then
    cat "$work/host.diff" >&2
    fail "the host is not as before the node (diff above: - before, + after)"
  fi
  log "the host is as before ($(wc -l <"$work/host-before") lines compared)"
}

# The EXIT trap: on failure the script's report; then the node goes (unless --keep-on-failure).
node_cleanup() {
  local rc=$?
  trap - EXIT
  if ((node_is_up)); then
    if ((rc != 0)); then
      if declare -F node_failure_report >/dev/null; then node_failure_report >&2; fi
      if ((keep_on_failure)); then
        log "--keep-on-failure: the node stays up in $state (take it down: $tc down --state-dir $state)"
        rm -rf "$work"
        exit "$rc"
      fi
    fi
    "$tc" down --state-dir "$state" >&2 || { log "testcluster down failed"; rc=1; }
  fi
  rm -rf "$work"
  exit "$rc"
}
