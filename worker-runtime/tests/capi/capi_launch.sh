#!/bin/bash
# Starts rt_capi_check as N plain processes (no mpirun) meeting at a rendezvous store, as a
# launcher without MPI does; every rank must print CAPI-CHECK-OK.
#   capi_launch.sh <rt_capi_check> <np> [--external-store <rt_store_host>]
# Default: rank 0 hosts the store on a free port of 127.0.0.1. --external-store: rt_store_host
# hosts it and the ranks run with KOROVOD_RENDEZVOUS_SERVER=external (as under korovodrun).
set -u
if [ "${1:-}" = --help ] || [ $# -lt 2 ]; then
  sed -n '2,7p' "$0"; exit $([ "${1:-}" = --help ] && echo 0 || echo 2)
fi
exe=$1
np=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"; [ -n "${store_pid:-}" ] && kill "$store_pid" 2>/dev/null' EXIT
server=rank0
if [ "${1:-}" = --external-store ]; then
  "$2" >"$out/store.port" 2>"$out/store.log" &
  store_pid=$!
  for _ in $(seq 100); do [ -s "$out/store.port" ] && break; sleep 0.05; done
  port=$(head -1 "$out/store.port")
  server=external
else
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
[ -n "$port" ] || { echo "no store port"; cat "$out/store.log" 2>/dev/null; exit 1; }
pids=()
for ((r = 0; r < np; r++)); do
  KOROVOD_RENDEZVOUS_ADDR=127.0.0.1 KOROVOD_RENDEZVOUS_PORT=$port KOROVOD_RENDEZVOUS_SERVER=$server \
    KOROVOD_RANK=$r KOROVOD_SIZE=$np KOROVOD_START_TIMEOUT=20 \
    timeout 120 "$exe" --expect-transport TCP >"$out/$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
cat "$out"/[0-9]*.log
got=$(cat "$out"/[0-9]*.log | grep -c CAPI-CHECK-OK)
if [ "$got" -ne "$np" ]; then
  echo "$got of $np ranks printed CAPI-CHECK-OK (store: $server)"; exit 1
fi
echo "C ABI check over TCP passed: $np ranks, store hosted by $server"
