#!/bin/bash
# Starts rt_tcp_worker as N plain processes (no mpirun), as a non-MPI launcher would: rank 0
# hosts the rendezvous store on a free port of 127.0.0.1, every rank reads the job secret from
# the file KOROVOD_JOB_SECRET_FILE names (as pods do from the operator's Secret), and an outsider
# (tcp_intruder.py: garbage, no secret, a wrong secret, half a handshake, silence) attacks the
# store the whole time. Extra arguments go to every rank.
#   tcp_launch_test.sh <rt_tcp_worker> <np> [--crash]
# Without --crash every rank must print TCP-WORKER-OK; with it, every rank but the killed last
# one must print TCP-WORKER-CRASH-OK (its allreduce failed in time, no hang). Either way the
# intruder must never get an answer, and rank 0 must log the connections it refused.
set -u
exe=$1
np=$2
shift 2
here=$(dirname "$0")
# A port below the ephemeral range, as testcluster takes its own; a job whose rank 0 found it taken
# after all (another test drew it too) runs again on another one.
free_port=$here/../../tests/python/shared/free_port.py
out=$(mktemp -d)
python3 -c 'import secrets; print(secrets.token_hex(32))' >"$out/secret"
chmod 600 "$out/secret"
# A job that lasts while the intruder works (not with --crash: its ranks die mid-collective).
steps=(--steps 20 --pause-ms 100)
[[ " $* " == *" --crash "* ]] && steps=()

launch() {
  local port=$1 r p
  shift
  rm -f "$out"/*.log "$out/intruder"
  python3 "$here/tcp_intruder.py" "127.0.0.1:$port" --seconds 4 >"$out/intruder" 2>&1 &
  intruder=$!
  # The intruder is waiting at the port before the store opens it (a fixed sleep was too short
  # under load for a --crash job, which lasts about 0.1 s).
  for ((i = 0; i < 200; i++)); do grep -q INTRUDER-READY "$out/intruder" 2>/dev/null && break; sleep 0.05; done
  grep -q INTRUDER-READY "$out/intruder" || { cat "$out/intruder"; echo "the intruder did not start in 10 s"; exit 1; }
  pids=()
  for ((r = 0; r < np; r++)); do
    KOROVOD_RENDEZVOUS_ADDR=127.0.0.1 KOROVOD_RENDEZVOUS_PORT=$port KOROVOD_RANK=$r KOROVOD_SIZE=$np \
      KOROVOD_JOB_SECRET_FILE="$out/secret" KOROVOD_START_TIMEOUT=20 \
      timeout 60 "$exe" "${steps[@]}" "$@" >"$out/$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  wait "$intruder"
  intruder_rc=$?
}

for attempt in 1 2 3 4 5; do
  port=$(python3 "$free_port") || exit 1
  launch "$port" "$@"
  grep -q "Address already in use" "$out/0.log" || break
  echo "port $port was taken before rank 0 could bind it (attempt $attempt); again on another port"
done
cat "$out"/*.log "$out/intruder"
if [[ " $* " == *" --crash "* ]]; then want=$((np - 1)); tag=TCP-WORKER-CRASH-OK; else want=$np; tag=TCP-WORKER-OK; fi
got=$(cat "$out"/*.log | grep -c "$tag")
refused=$(grep -c "closed the connection from 127.0.0.1:" "$out/0.log")
rm -rf "$out"
if [ "$got" -ne "$want" ]; then
  echo "$got of $want ranks printed $tag"; exit 1
fi
if [ "$intruder_rc" -ne 0 ]; then echo "the intruder got an answer from the store"; exit 1; fi
if [ "$refused" -lt 1 ]; then echo "rank 0 logged no refused connection"; exit 1; fi
echo "tcp launch check passed (np=$np $*): $got ranks printed $tag; rank 0 refused $refused intruder connections"
