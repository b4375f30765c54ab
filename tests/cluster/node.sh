# shellcheck shell=bash
# The real node of `testcluster up --node`, sourced by tests/cluster/testcluster (it uses its
# $state, $timeout_s, say, ours, starting, free_ports). A kubelet built from the control plane's
# Kubernetes module runs pods as containers through containerd + runc (Debian's packages) with
# Debian's CNI plugins on a bridge of its own, CoreDNS (tests/cluster/coredns) answers the
# cluster's names on the bridge's gateway address, and kube-proxy (iptables mode) routes Service
# IPs, among them the `kubernetes` Service's to the API server on that address. docs/testing.md, "A real node", says how and
# what it changes on the host; node_down undoes all of it and says what it could not.

node_dir=$state/node
node_record=$state/node-record        # the host as it was before the node (kept until down)
node_name=${KOROVOD_NODE_NAME:-korovod-node}
node_bridge=${KOROVOD_NODE_BRIDGE:-korovod0}
node_subnet=${KOROVOD_NODE_SUBNET:-10.88.77.0/24}
node_gw=${node_subnet%.*}.1
node_pause_image=korovod.test/pause:1
node_sock=$node_dir/containerd/containerd.sock

# What the node may change on the host, recorded before and compared after (real-node.md).
# kube-proxy's: route_localnet (localhost NodePorts, off here), the conntrack table's size and
# timeouts (left alone here: conntrack.* 0), bridge-nf-call-iptables (it only warns); recorded all
# the same, so a change would show.
node_sysctls=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
  net.ipv6.conf.all.forwarding net.ipv4.conf.all.route_localnet net.netfilter.nf_conntrack_max
  net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait
  net.netfilter.nf_conntrack_tcp_be_liberal net.netfilter.nf_conntrack_udp_timeout
  net.netfilter.nf_conntrack_udp_timeout_stream net.bridge.bridge-nf-call-iptables)
node_fixed_paths=(/var/lib/kubelet/device-plugins /var/lib/kubelet /var/log/containers
  /var/log/pods /var/lib/cni /run/containerd/s /run/containerd /run/netns /run/xtables.lock)

node_check_subnet() {
  [[ $node_subnet =~ ^([0-9]{1,3}\.){3}0/24$ ]] ||
    { say "KOROVOD_NODE_SUBNET must be an IPv4 /24 ending in .0/24 (got '$node_subnet')"; exit 2; }
  [[ ${#node_bridge} -le 15 ]] || { say "KOROVOD_NODE_BRIDGE '$node_bridge' is longer than 15 characters"; exit 2; }
}

node_tools_check() {
  local t missing=()
  for t in containerd runc ctr iptables ip6tables iptables-save ip6tables-save ip sysctl gcc curl nft; do
    command -v "$t" >/dev/null || missing+=("$t")
  done
  for t in bridge host-local loopback portmap; do
    [[ -x /usr/lib/cni/$t ]] || missing+=("/usr/lib/cni/$t (containernetworking-plugins)")
  done
  command -v containerd-shim-runc-v2 >/dev/null || missing+=(containerd-shim-runc-v2)
  ((${#missing[@]} == 0)) || { say "the node needs: ${missing[*]} (scripts/setup --for-tests installs them)"; exit 1; }
  [[ $(id -u) == 0 ]] || { say "the node needs root (it runs containerd, the kubelet and iptables)"; exit 1; }
}

# --- the host's state: recorded, compared, restored ----------------------------------------------

# node_snapshot DIR: what the node may change, in files that diff cleanly.
node_snapshot() {
  local d=$1 s v p t
  mkdir -p "$d"
  for s in "${node_sysctls[@]}"; do
    v=$(sysctl -n "$s" 2>/dev/null) || v=-
    echo "$s $v"
  done >"$d/sysctl"
  for v in iptables ip6tables; do
    # Only the chains and rules the kubelet and the CNI plugins make (KUBE-*, CNI-*) and rules
    # that name the node's bridge or subnet: a docker daemon or another test may change the rest.
    "$v-save" 2>/dev/null | sed -e 's/ \[[0-9]*:[0-9]*\]$//' |
      grep -E -- "^\*|KUBE-|CNI-|$node_bridge|${node_subnet%.*}\." >"$d/$v" || true
    for t in filter nat mangle raw; do
      "$v" -t "$t" -S 2>/dev/null | awk -v t="$t" '$1 == "-N" && $2 ~ /^(KUBE-|CNI-)/ {print t, $2}'
    done >"$d/$v-chains"
  done
  # kube-proxy's own nftables tables (its nftables mode; the iptables mode only cleans them up).
  nft list tables 2>/dev/null | grep -E 'kube-proxy' >"$d/nft-tables" || true
  # The bridge and the CNI's host-side veths (vethXXXXXXXX); other links are someone else's.
  ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' |
    grep -E "^($node_bridge|veth[0-9a-f]{8})$" >"$d/links" || true
  awk '{print $5}' /proc/self/mountinfo |
    grep -E "^($state/|/var/lib/kubelet|/run/netns|/var/run/netns|/run/containerd)" | sort >"$d/mounts" || true
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name 'kubepods*' 2>/dev/null | sort >"$d/cgroups" || true
  for p in "${node_fixed_paths[@]}"; do
    if [[ -e $p ]]; then echo "$p yes"; else echo "$p no"; fi
  done >"$d/paths"
  node_our_pids | sed 's/^/pid /' >"$d/processes" || true
}

# Processes of this node: kubelet, containerd, CoreDNS and the container shims (whose command
# line names our containerd socket), by their command line naming DIR/node/.
node_our_pids() {
  local f p
  # The pattern from a file: on grep's own command line it would find grep.
  for f in $(grep -lsF -f <(echo "$node_dir/") /proc/[0-9]*/cmdline 2>/dev/null || true); do
    p=${f#/proc/}; p=${p%/cmdline}
    [[ $p == "$$" || $p == "$BASHPID" ]] && continue
    echo "$p"
  done
}

node_record_host() {
  rm -rf "$node_record"
  node_snapshot "$node_record.tmp"
  mv "$node_record.tmp" "$node_record"
  local s
  for s in mounts cgroups links processes; do
    [[ -s $node_record/$s ]] && say "note: before the node, the host already has $s of a node: $(tr '\n' ' ' <"$node_record/$s")"
  done
  return 0
}

# --- the node's processes ----------------------------------------------------------------------

node_start() { # name binary args...
  local name=$1
  shift
  setsid "$@" </dev/null >>"$state/logs/$name.log" 2>&1 &
  local pid=$!
  echo "$name $pid" >>"$node_dir/pids"
  say "started $name (pid $pid, log $state/logs/$name.log)"
}

node_alive_or_fail() {
  local name pid
  while read -r name pid; do
    [[ -n ${pid:-} ]] || continue
    ours "$pid" || starting "$pid" || node_fail "$name (pid $pid) exited; see $state/logs/$name.log"
  done <"$node_dir/pids"
}

node_wait_for() { # WHAT CMD...
  local what=$1 deadline=$((SECONDS + timeout_s)) t0=$SECONDS
  shift
  until "$@" >/dev/null 2>&1; do
    node_alive_or_fail
    ((SECONDS < deadline)) || node_fail "timed out after ${timeout_s}s waiting for $what"
    sleep 0.25
  done
  say "$what ready after $((SECONDS - t0))s"
}

node_fail() {
  say "FAILED (node): $*"
  local c
  for c in containerd coredns kubelet kube-proxy; do
    [[ -f $state/logs/$c.log ]] || continue
    echo "----- last 25 lines of $state/logs/$c.log -----" >&2
    tail -n 25 "$state/logs/$c.log" >&2 || true
  done
  node_down || true
  stop_all || true
  say "logs kept in $state/logs"
  exit 1
}

node_stop_recorded() { # stop the node's recorded processes, kubelet first
  local pidfile=$node_dir/pids name pid deadline
  [[ -f $pidfile ]] || return 0
  local -a names=() pids=()
  while read -r name pid; do
    [[ -n ${pid:-} ]] || continue
    names=("$name" "${names[@]}"); pids=("$pid" "${pids[@]}")
  done <"$pidfile"
  for i in "${!pids[@]}"; do
    pid=${pids[$i]}
    ours "$pid" || starting "$pid" || continue
    say "stopping ${names[$i]} (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 15))
    while ours "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
    if ours "$pid"; then
      say "${names[$i]} (pid $pid) ignored SIGTERM for 15s; sending SIGKILL"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
    fi
  done
  rm -f "$pidfile"
}

# --- images ------------------------------------------------------------------------------------

node_ctr() { ctr --address "$node_sock" --namespace k8s.io "$@"; }

# The pause image archive, built once per version of pause.c and mkimage.
node_pause_archive() {
  local cache key dir
  cache=${KOROVOD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/korovod}
  key=$(cat "$here/node/pause.c" "$here/node/mkimage" | sha256sum | cut -c1-12)
  dir=$cache/node-pause-$key
  if [[ ! -s $dir/pause.tar ]]; then
    mkdir -p "$dir/rootfs"
    gcc -static -Os -s -Wall -o "$dir/rootfs/pause" "$here/node/pause.c" >&2 ||
      { say "could not build the pause program (gcc -static needs libc6-dev)"; return 1; }
    "$here/node/mkimage" --rootfs "$dir/rootfs" --name "$node_pause_image" --entrypoint /pause \
      --out "$dir/pause.tar" || return 1
  fi
  echo "$dir/pause.tar"
}

# node_import IMAGE|ARCHIVE...: an existing file is an image archive (docker save format or OCI)
# imported as is; anything else is a docker image, moved over with `docker save`.
node_import() {
  (($#)) || { say "node-import needs at least one image or archive"; exit 2; }
  [[ -S $node_sock ]] || { say "no node running in $state (start one with: testcluster up --node)"; exit 1; }
  local img out
  for img in "$@"; do
    if [[ -f $img ]]; then
      out=$(node_ctr images import "$img" 2>&1) || { say "ctr images import $img failed: $out"; exit 1; }
    else
      command -v docker >/dev/null || { say "'$img' is not a file, and docker is not installed to save it"; exit 1; }
      docker image inspect "$img" >/dev/null 2>&1 ||
        { say "docker has no image '$img' (is the daemon up? scripts/dockerd start)"; exit 1; }
      # Not a pipe into ctr: a failed `docker save` would otherwise look like an empty import.
      local tmp
      tmp=$(mktemp "$node_dir/import.XXXXXX.tar")
      docker save -o "$tmp" "$img" || { rm -f "$tmp"; say "docker save $img failed"; exit 1; }
      out=$(node_ctr images import "$tmp" 2>&1) || { rm -f "$tmp"; say "ctr images import of $img failed: $out"; exit 1; }
      rm -f "$tmp"
    fi
    say "imported $img into the node's containerd: ${out//$'\n'/ }"
  done
}

# --- up ----------------------------------------------------------------------------------------

# node_prepare BIN: before the control plane starts. Records the host, then makes the bridge and
# its gateway address, on which the API server listens (pods reach it there through kube-proxy's
# rules for the `kubernetes` Service), CoreDNS answers and the kubelet serves.
node_prepare() {
  local bin=$1 t
  node_check_subnet
  node_tools_check
  for t in kubelet kube-proxy coredns; do
    [[ -x $bin/$t ]] || { say "no $t in $bin (tests/cluster/build.sh --node)"; exit 1; }
  done
  node_pause_tar=$(node_pause_archive) || exit 1
  if ip link show "$node_bridge" >/dev/null 2>&1; then
    say "a link named $node_bridge exists already (another node? testcluster down, or set KOROVOD_NODE_BRIDGE)"
    exit 1
  fi
  node_record_host
  rm -rf --one-file-system "$node_dir"
  mkdir -p "$node_dir"/{containerd,cni/net.d,cni/ipam,kubelet,kubelet-pki,pod-logs,volume-plugins,coredns,kube-proxy}
  : >"$node_dir/pids"
  echo "$node_name" >"$node_dir/name"

  # The bridge exists before the control plane and the CNI plugin's first pod, so the API
  # server, CoreDNS and the kubelet can listen on its gateway address from the start (the bridge
  # plugin takes an existing bridge as is).
  ip link add "$node_bridge" type bridge || node_fail "could not create the bridge $node_bridge"
  ip addr add "$node_gw/24" dev "$node_bridge" || node_fail "could not address $node_bridge"
  ip link set "$node_bridge" up || node_fail "could not bring $node_bridge up"
}

node_up() { # BIN: the directory with kubelet, kube-proxy and coredns (after node_prepare)
  local bin=$1 t0=$SECONDS
  local pause_tar=$node_pause_tar
  ln -sfn "$bin/kubelet" "$state/bin/kubelet"
  ln -sfn "$bin/kube-proxy" "$state/bin/kube-proxy"
  ln -sfn "$bin/coredns" "$state/bin/coredns"

  cat >"$node_dir/cni/net.d/10-korovod.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "korovod-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$node_bridge",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$node_subnet", "gateway": "$node_gw"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$node_dir/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

  local c=$node_dir/containerd
  cat >"$c/config.toml" <<EOF
version = 2
root = "$c/root"
state = "$c/state"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$node_sock"
[ttrpc]
  address = "$node_sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$node_pause_image"
  # Required here: without CAP_SYS_RESOURCE a negative oom_score_adj is refused, and runc fails
  # every sandbox with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$c/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$node_dir/cni/net.d"
EOF
  node_start containerd containerd --config "$c/config.toml" --log-level warn
  node_wait_for "containerd" node_ctr version
  local out
  out=$(node_ctr images import "$pause_tar" 2>&1) || node_fail "importing the pause image: $out"

  local ports
  read -r -a ports <<<"$(free_ports 3)"
  local kport=${ports[0]} hport=${ports[1]} rport=${ports[2]}
  cat >"$node_dir/coredns/Corefile" <<EOF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind $node_gw
    errors
    log
    ready 127.0.0.1:$rport
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $state/kubeconfig korovod-test
        pods insecure
        ttl 5
        fallthrough in-addr.arpa ip6.arpa
    }
}
EOF
  node_start coredns "$bin/coredns" -conf "$node_dir/coredns/Corefile"
  node_wait_for "CoreDNS on $node_gw:53" curl -fsS --max-time 2 "http://127.0.0.1:$rport/ready"

  # Pods with dnsPolicy Default get this instead of the host's resolv.conf (whose servers are
  # outside the node).
  echo "nameserver $node_gw" >"$node_dir/resolv.conf"
  cat >"$node_dir/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$node_sock
address: $node_gw
port: $kport
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $hport
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
clusterDNS: [$node_gw]
clusterDomain: cluster.local
resolvConf: $node_dir/resolv.conf
podLogsDir: $node_dir/pod-logs
volumePluginDir: $node_dir/volume-plugins
failSwapOn: false
failCgroupV1: false
# 10 s, not 1 min: how often a pod is synced, and so how soon a changed ConfigMap reaches its
# volume (the MPIJob's discover_hosts.sh, which an elastic job's driver reads when it is scaled).
syncFrequency: 10s
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
EOF
  write_kubeconfig "$node_dir/kubelet.kubeconfig" "$(cat "$state/apiserver-url")" \
    korovod-test token "$(cat "$state/admin-token")"
  node_start kubelet "$bin/kubelet" --config="$node_dir/kubelet/config.yaml" \
    --kubeconfig="$node_dir/kubelet.kubeconfig" --root-dir="$node_dir/kubelet" \
    --cert-dir="$node_dir/kubelet-pki" --hostname-override="$node_name" --node-ip="$node_gw" --v=1
  node_wait_for "kubelet /healthz" healthz_http "$hport"
  node_wait_for "node $node_name Ready" node_ready

  # kube-proxy, iptables mode: ClusterIP Services, above all `kubernetes` (10.0.0.1:443), whose
  # endpoint is the API server on the bridge's address. It listens on 127.0.0.1 only, NodePorts
  # on the bridge only, and leaves the host's conntrack settings and route_localnet alone (what
  # it may change is recorded all the same and undone by node_down).
  read -r -a ports <<<"$(free_ports 2)"
  local pzport=${ports[0]} pmport=${ports[1]}
  cat >"$node_dir/kube-proxy/config.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: $node_dir/kubelet.kubeconfig
hostnameOverride: $node_name
bindAddress: $node_gw
healthzBindAddress: 127.0.0.1:$pzport
metricsBindAddress: 127.0.0.1:$pmport
clusterCIDR: $node_subnet
detectLocalMode: ClusterCIDR
nodePortAddresses: [$node_subnet]
oomScoreAdj: 0
iptables:
  localhostNodePorts: false
  masqueradeAll: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
EOF
  node_start kube-proxy "$bin/kube-proxy" --config="$node_dir/kube-proxy/config.yaml" --v=1
  node_wait_for "kube-proxy /healthz" curl -fsS --max-time 2 "http://127.0.0.1:$pzport/healthz"
  node_wait_for "kube-proxy's rules for the kubernetes Service" node_kubernetes_service_rules
  say "node $node_name up in $((SECONDS - t0))s: pods on $node_subnet (bridge $node_bridge), cluster DNS $node_gw (cluster.local), kube-proxy (kubernetes.default -> $node_gw)"
}

# kube-proxy has written the `kubernetes` Service's rules: its ClusterIP in KUBE-SERVICES.
node_kubernetes_service_rules() {
  local ip
  ip=$(node_kubectl get service kubernetes -n default -o jsonpath='{.spec.clusterIP}') || return 1
  [[ -n $ip ]] || return 1
  iptables -t nat -S KUBE-SERVICES 2>/dev/null | grep -F -- "-d $ip/32" >/dev/null
}

healthz_http() { [[ $(curl -sS --max-time 2 "http://127.0.0.1:$1/healthz") == ok ]]; }

node_kubectl() { KUBECONFIG=$state/kubeconfig "$state/bin/kubectl" --request-timeout=10s "$@"; }

node_ready() {
  [[ $(node_kubectl get node "$node_name" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

# --- down --------------------------------------------------------------------------------------

# Deepest first, retried: the kubelet's root is bind-mounted on itself, pods' volumes under it.
node_unmount_all() {
  local try m
  for try in 1 2 3 4 5; do
    local -a ms=()
    mapfile -t ms < <(awk '{print $5}' /proc/self/mountinfo |
      grep -E "^($node_dir/|/var/lib/kubelet|/run/netns/|/var/run/netns/)" |
      grep -vxF -f "$node_record/mounts" 2>/dev/null | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-)
    ((${#ms[@]})) || return 0
    for m in "${ms[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  done
}

node_iptables_clean() {
  local v t chain line
  for v in iptables ip6tables; do
    local before=$node_record/$v-chains
    local -a new=()
    for t in filter nat mangle raw; do
      while read -r chain; do
        grep -qxF "$t $chain" "$before" 2>/dev/null || new+=("$t $chain")
      done < <("$v" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^(KUBE-|CNI-)/ {print $2}')
    done
    ((${#new[@]})) || continue
    local tc
    for tc in "${new[@]}"; do
      t=${tc%% *}; chain=${tc#* }
      # Rules elsewhere that jump to it (INPUT -j KUBE-FIREWALL, ...).
      while IFS= read -r line; do
        local -a r=()
        eval "r=($line)"
        r[0]=-D
        "$v" -t "$t" "${r[@]}" 2>/dev/null || true
      done < <("$v" -t "$t" -S 2>/dev/null | grep -E -- "-j $chain( |\$)" | grep -v -- "^-A $chain ")
    done
    for tc in "${new[@]}"; do "$v" -t "${tc%% *}" -F "${tc#* }" 2>/dev/null || true; done
    for tc in "${new[@]}"; do "$v" -t "${tc%% *}" -X "${tc#* }" 2>/dev/null || true; done
  done
  node_nft_tables_clean
}

# With the nf_tables backend of iptables (Debian 12's default), the kubelet's chains bring their
# tables (ip/ip6 filter, nat, mangle) into existence, and they stay, empty, after the chains go.
# A table that was not there before and is empty now (no rule, no chain of its own, built-in
# chains with policy ACCEPT) is deleted with nft (package nftables).
node_nft_tables_clean() {
  [[ "$(iptables -V 2>/dev/null)" == *nf_tables* ]] || return 0
  command -v nft >/dev/null || { say "nft (package nftables) is missing: the empty iptables tables the kubelet made stay"; return 0; }
  local v fam t
  for v in iptables ip6tables; do
    fam=ip; [[ $v == ip6tables ]] && fam=ip6
    for t in $("$v-save" 2>/dev/null | sed -n 's/^\*//p'); do
      grep -qxF "*$t" "$node_record/$v" 2>/dev/null && continue
      if "$v-save" -t "$t" 2>/dev/null | grep -vE '^(#|\*|COMMIT$|:[A-Z]+ ACCEPT( \[[0-9]+:[0-9]+\])?$)' >/dev/null; then
        continue  # someone's rules or chains are in it now
      fi
      nft delete table "$fam" "$t" 2>/dev/null || say "could not delete the empty table $fam $t (nft)"
    done
  done
}

# Every process in the node's cgroups (containers, whatever the shims left) is killed, then the
# cgroups are removed deepest first, in every hierarchy.
node_cgroups_clean() {
  local -a dirs=()
  mapfile -t dirs < <(find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name 'kubepods*' 2>/dev/null |
    grep -vxF -f "$node_record/cgroups" 2>/dev/null)
  ((${#dirs[@]})) || return 0
  local d f p try
  for try in 1 2 3 4 5 6 7 8 9 10; do
    local n=0
    for d in "${dirs[@]}"; do
      [[ -d $d ]] || continue
      while IFS= read -r f; do
        while read -r p; do
          [[ -n $p ]] || continue
          kill -KILL "$p" 2>/dev/null || true
          n=$((n + 1))
        done <"$f"
      done < <(find "$d" -name cgroup.procs 2>/dev/null)
    done
    ((n == 0)) && break
    sleep 0.3
  done
  for try in 1 2 3 4 5 6 7 8 9 10; do
    local left=0
    for d in "${dirs[@]}"; do
      [[ -d $d ]] || continue
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [[ -d $d ]] && left=1
    done
    ((left == 0)) && break
    sleep 0.5
  done
}

node_sysctls_restore() {
  local s v now
  [[ -f $node_record/sysctl ]] || return 0
  while read -r s v; do
    [[ $v == - ]] && continue
    now=$(sysctl -n "$s" 2>/dev/null) || continue
    [[ $now == "$v" ]] && continue
    sysctl -qw "$s=$v" 2>/dev/null || say "could not restore $s to $v (now $now)"
  done <"$node_record/sysctl"
}

node_paths_clean() {
  local p had
  [[ -f $node_record/paths ]] || return 0
  while read -r p had; do
    [[ $had == no && -e $p ]] || continue
    case $p in
      # Shim sockets of another containerd may live there: only empty folders go.
      /run/containerd|/run/containerd/s|/run/netns) rmdir "$p" 2>/dev/null || true ;;
      *) rm -rf --one-file-system "$p" ;;
    esac
  done <"$node_record/paths"
}

# node_down: stop the node and put the host back as node_record says it was. Returns 1 (and says
# what) when something is left.
node_down() {
  [[ -d $node_record || -d $node_dir ]] || return 0
  local rc=0 t0=$SECONDS name
  name=$(cat "$node_dir/name" 2>/dev/null || echo "$node_name")
  node_name=$name
  # 1. The pods, through the API while it is up: the kubelet stops their containers and the
  #    CNI plugin takes their addresses back.
  if [[ -f $state/kubeconfig && -x $state/bin/kubectl ]] && node_kubectl get node "$name" >/dev/null 2>&1; then
    node_kubectl cordon "$name" >/dev/null 2>&1 || true
    local kpid
    kpid=$(awk '$1 == "kubelet" {print $2}' "$node_dir/pids" 2>/dev/null)
    if [[ -n $kpid ]] && ours "$kpid"; then
      if ! node_kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$name" \
          --wait=true --timeout=90s >/dev/null 2>&1; then
        say "the node's pods were not all gone after 90s; killing what is left"
      fi
    else
      # No kubelet to confirm a graceful deletion: the objects go now, the containers below.
      say "the kubelet is not running: deleting the node's pods with --force; their containers are killed below"
      node_kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$name" \
        --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    fi
    node_kubectl delete node "$name" --wait=false >/dev/null 2>&1 || true
  fi
  # 2. The kubelet, CoreDNS, containerd; then the shims and containers that outlive them.
  node_stop_recorded
  local p left
  left=$(node_our_pids | tr '\n' ' ')
  if [[ -n ${left// } ]]; then
    say "killing what outlived containerd (shims): $left"
    for p in $left; do kill -KILL "$p" 2>/dev/null || true; done
  fi
  if [[ ! -d $node_record ]]; then
    say "no record of the host before the node ($node_record): cleaning by name only, no sysctl or path restored"
    mkdir -p "$node_record"
  fi
  local f
  for f in mounts cgroups links iptables-chains ip6tables-chains iptables ip6tables nft-tables; do touch "$node_record/$f"; done
  node_cgroups_clean
  for p in $(node_our_pids); do kill -KILL "$p" 2>/dev/null || true; done
  # 3. Mounts, the bridge and its veths, iptables, sysctls, fixed paths.
  node_unmount_all
  # The control plane listens on the bridge's address (the API server) and talks to it: stop it
  # before the address goes. Otherwise its clients' connections lose their address first, their
  # FINs never reach the API server, and its graceful shutdown waits for them until killed.
  if declare -F stop_all >/dev/null; then stop_all || rc=1; fi
  ip link del "$node_bridge" 2>/dev/null || true
  local l
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep -E '^veth[0-9a-f]{8}$' || true); do
    grep -qxF "$l" "$node_record/links" 2>/dev/null || ip link del "$l" 2>/dev/null || true
  done
  node_iptables_clean
  node_sysctls_restore
  node_paths_clean
  rm -f "$state/bin/kubelet" "$state/bin/kube-proxy" "$state/bin/coredns"
  # 4. Compare with the record.
  if [[ -f $node_record/paths ]]; then
    rm -rf "$node_dir.after"
    node_snapshot "$node_dir.after"
    local diffs
    diffs=$(cd "$node_record" && for f in sysctl iptables ip6tables nft-tables links mounts cgroups paths processes; do
      diff -u --label "before/$f" --label "after/$f" "$f" "$node_dir.after/$f" 2>&1 || true
    done)
    rm -rf "$node_dir.after"
    if [[ -n $diffs ]]; then
      echo "$diffs" >"$state/logs/node-host.diff"
      say "the host is NOT as before the node (left: $state/logs/node-host.diff):"
      echo "$diffs" >&2
      rc=1
    else
      say "node $name down in $((SECONDS - t0))s; the host is as before (sysctls, iptables, links, mounts, cgroups, paths, processes)"
    fi
  fi
  if ((rc == 0)); then
    rm -rf --one-file-system "$node_dir" "$node_record"
  else
    say "node data kept in $node_dir, the record in $node_record"
  fi
  return $rc
}

node_status() {
  [[ -f $node_dir/pids ]] || return 0
  local name pid rc=0
  while read -r name pid; do
    if ours "$pid"; then echo "$name running (pid $pid)"; else echo "$name NOT running (pid $pid)"; rc=1; fi
  done <"$node_dir/pids"
  return $rc
}
