#!/bin/bash
# Starts rt_tcp_worker as N plain processes (no mpirun), as a non-MPI launcher would: rank 0
# hosts the rendezvous store on a free port of 127.0.0.1. Extra arguments go to every rank.
#   tcp_launch_test.sh <rt_tcp_worker> <np> [--crash]
# Without --crash every rank must print TCP-WORKER-OK; with it, every rank but the killed last
# one must print TCP-WORKER-CRASH-OK (its allreduce failed in time, no hang).
set -u
exe=$1
np=$2
shift 2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
out=$(mktemp -d)
pids=()
for ((r = 0; r < np; r++)); do
  KOROVOD_RENDEZVOUS_ADDR=127.0.0.1 KOROVOD_RENDEZVOUS_PORT=$port KOROVOD_RANK=$r KOROVOD_SIZE=$np \
    KOROVOD_START_TIMEOUT=20 timeout 60 "$exe" "$@" >"$out/$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
cat "$out"/*.log
if [[ " $* " == *" --crash "* ]]; then want=$((np - 1)); tag=TCP-WORKER-CRASH-OK; else want=$np; tag=TCP-WORKER-OK; fi
got=$(cat "$out"/*.log | grep -c "$tag")
rm -rf "$out"
if [ "$got" -ne "$want" ]; then
  echo "$got of $want ranks printed $tag"; exit 1
fi
echo "tcp launch check passed (np=$np $*): $got ranks printed $tag"
