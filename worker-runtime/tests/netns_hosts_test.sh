#!/bin/bash
# Two "hosts" with real, separate network stacks on one machine: two network namespaces joined by
# a veth pair (iproute2), each rank also in its own UTS namespace with its host's name, so
# korovod's host detection (hostname + boot id) sees two hosts without KOROVOD_HOST_ID. Starts
# rt_tcp_worker as 2 x PER plain processes (no mpirun) that meet at the rendezvous store on host
# 0's veth address; KOROVOD_IFACE names the veth, so every TCP connection between the hosts
# crosses it. Shared memory is still one /dev/shm, but the runtime only uses it within a host.
#   netns_hosts_test.sh <rt_tcp_worker> [ranks per host, default 2] [extra worker arguments]
# Passes when every rank prints TCP-WORKER-OK with local size PER and cross size 2, and host 0's
# veth sent and received at least the bytes the allreduces must move between the hosts (with
# KOROVOD_HIERARCHICAL_ALLREDUCE=1, the hierarchical algorithm's bytes, fewer than a flat ring's). Exit 77 (skipped) where namespaces cannot be made
# (not root, no CAP_NET_ADMIN / CAP_SYS_ADMIN, no iproute2 or util-linux).
set -u
exe=$1
per=${2:-2}
shift $(($# >= 2 ? 2 : 1))
for tool in ip unshare hostname; do
  command -v "$tool" >/dev/null || { echo "SKIP: '$tool' is not installed"; exit 77; }
done
np=$((2 * per))
tag=kv$$                       # unique names: ctest may run this beside other tests
ns=("${tag}h0" "${tag}h1")
addr=(10.231.0.1 10.231.0.2)
port=29400                     # a fresh namespace has every port free
out=$(mktemp -d)
cleanup() {
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null; done
  rm -rf "$out"
}
trap cleanup EXIT
if ! ip netns add "${ns[0]}" 2>"$out/err"; then
  echo "SKIP: cannot create a network namespace here: $(cat "$out/err")"; exit 77
fi
if ! unshare --uts true 2>"$out/err"; then
  echo "SKIP: cannot create a UTS namespace here: $(cat "$out/err")"; exit 77
fi
set -e
ip netns add "${ns[1]}"
ip link add "${tag}a" type veth peer name "${tag}b"
ip link set "${tag}a" netns "${ns[0]}"
ip link set "${tag}b" netns "${ns[1]}"
ip -n "${ns[0]}" link set "${tag}a" name kvnet
ip -n "${ns[1]}" link set "${tag}b" name kvnet
for h in 0 1; do
  ip -n "${ns[$h]}" addr add "${addr[$h]}/24" dev kvnet
  ip -n "${ns[$h]}" link set lo up
  ip -n "${ns[$h]}" link set kvnet up
done
set +e
stat() { ip netns exec "${ns[0]}" cat "/sys/class/net/kvnet/statistics/$1"; }
tx0=$(stat tx_bytes) rx0=$(stat rx_bytes)

pids=()
for ((r = 0; r < np; r++)); do
  h=$((r / per))
  ip netns exec "${ns[$h]}" unshare --uts sh -c 'hostname "$0" && exec "$@"' "korovod-host-$h" \
    env KOROVOD_RENDEZVOUS_ADDR="${addr[0]}" KOROVOD_RENDEZVOUS_PORT=$port KOROVOD_RANK=$r KOROVOD_SIZE=$np \
    KOROVOD_IFACE=kvnet KOROVOD_START_TIMEOUT=20 timeout 60 "$exe" "$@" >"$out/$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
cat "$out"/*.log
tx=$(($(stat tx_bytes) - tx0)) rx=$(($(stat rx_bytes) - rx0))
echo "host 0's veth: sent $tx bytes, received $rx bytes"

fail=0
got=$(grep -h "TCP-WORKER-OK" "$out"/*.log | grep -c "local [0-9]*/$per cross [01]/2 ")
if [ "$got" -ne "$np" ]; then
  echo "FAIL: $got of $np ranks printed TCP-WORKER-OK with local size $per and cross size 2"; fail=1
fi
# rt_tcp_worker runs 5 allreduces of 4 MiB (T). What host 0 must send (and receive) over the veth:
# - a flat ring over all np ranks (ranks of a host consecutive) crosses from host 0 to host 1 on
#   one edge, which carries 2(np-1)/np x T per allreduce;
# - the hierarchical allreduce (KOROVOD_HIERARCHICAL_ALLREDUCE=1, more than one rank per host):
#   each of the PER local ranks allreduces a T/PER shard with its peer on the other host, sending
#   half of it twice: T per allreduce in all, less than the flat ring moves.
# Interface byte counts include headers and the control plane, so these are lower bounds; the
# hierarchical run must also stay below the flat ring's bound, or it was not hierarchical.
T=$((4 * 1024 * 1024))
flat=$((5 * 2 * (np - 1) * T / np))
if [ "${KOROVOD_HIERARCHICAL_ALLREDUCE:-0}" = 1 ] && [ "$per" -gt 1 ]; then
  need=$((5 * T)); mode=hierarchical
  if [ "$tx" -ge "$flat" ]; then
    echo "FAIL: host 0 sent $tx bytes, as much as a flat ring ($flat): the allreduce was not hierarchical"; fail=1
  fi
else
  need=$flat; mode="flat ring"
fi
if [ "$tx" -lt "$need" ] || [ "$rx" -lt "$need" ]; then
  echo "FAIL: fewer than $need bytes ($mode) crossed the veth each way: the hosts did not talk over it"; fail=1
fi
[ "$fail" -eq 0 ] && echo "netns hosts check passed: $np ranks on 2 network namespaces, $per per host, $mode"
exit "$fail"
