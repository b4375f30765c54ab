#!/bin/bash
# korovodrun's elastic mode end to end on this machine: usage
#   korovodrun_elastic.sh KOROVODRUN WORKER SCENARIO
# WORKER: elastic_contract_worker (joins every round through the store, exits 0 once DONE exists).
# The discovery script is `cat HOSTS`; the test rewrites HOSTS.
#   scale   2 -> 3 -> 2 workers: a join round (hosts_version kind 1), then localhost:2 removed;
#           the job ends 0 once every worker is done.
#   kill9   kill -9 of localhost:1: a round without it at once (rank 0 stays localhost:0), then
#           its slot rejoins in the next round; ends 0.
#   min_np  the hosts drop below --min-np 2: korovodrun fails after --elastic-timeout 3 saying why.
set -u
korovodrun=$1 worker=$2 scenario=$3
if [ "$korovodrun" = --help ]; then sed -n '2,12p' "$0"; exit 0; fi
dir=$(mktemp -d)
trap 'kill -9 $pid 2>/dev/null; rm -rf "$dir"' EXIT
log=$dir/log
fail() { echo "FAIL: $*"; echo "---- korovodrun output"; cat "$log"; exit 1; }
# wait_for REGEX SECONDS: until the log has a line matching it.
wait_for() {
  local end=$((SECONDS + $2))
  until grep -Eq "$1" "$log"; do
    [ $SECONDS -ge $end ] && fail "no line matching '$1' within $2 s"
    sleep 0.1
  done
}
start() {
  echo "$1" > "$dir/hosts"
  shift
  "$korovodrun" --host-discovery-script "cat $dir/hosts" "$@" "$worker" "$dir/done" > "$log" 2>&1 &
  pid=$!
}
finish_ok() {
  touch "$dir/done"
  wait $pid; local code=$?
  [ $code -eq 0 ] || fail "korovodrun exited with $code, expected 0"
  cat "$log"
  echo "PASS: $scenario"
}

case $scenario in
  scale)
    start localhost:2 --min-np 2 --max-np 3
    wait_for 'round 1 formed: 2 workers' 30
    echo localhost:3 > "$dir/hosts"
    wait_for 'round 2: 3 workers \(localhost:0=0 localhost:1=1 localhost:2=2\)' 10
    wait_for 'worker localhost:2 pid [0-9]+ round 2 place 2 3 2 3 0 1' 10
    wait_for 'round 2 formed: 3 workers' 10
    echo localhost:2 > "$dir/hosts"
    wait_for 'round 3: 2 workers \(localhost:0=0 localhost:1=1\)' 10
    wait_for 'localhost:2\]<stdout>:worker localhost:2 pid [0-9]+ removed in round 3' 10
    wait_for 'round 3 formed' 10
    finish_ok
    ;;
  kill9)
    start localhost:3 --min-np 2
    wait_for 'round 1 formed: 3 workers' 30
    victim=$(sed -nE 's/.*worker localhost:1 pid ([0-9]+) round 1 .*/\1/p' "$log" | head -1)
    [ -n "$victim" ] || fail "no pid for localhost:1"
    kill -9 "$victim"
    wait_for 'worker localhost:1 \(rank 1 of round 1\) exited with code 137' 10
    wait_for 'round 2: 2 workers \(localhost:0=0 localhost:2=1\)' 10
    wait_for 'round 3: 3 workers \(localhost:0=0 localhost:2=1 localhost:1=2\)' 10
    wait_for 'round 3 formed' 15
    finish_ok
    ;;
  min_np)
    start localhost:2 --min-np 2 --elastic-timeout 3
    wait_for 'round 1 formed' 30
    echo localhost:1 > "$dir/hosts"
    wait $pid; code=$?
    [ $code -eq 1 ] || fail "korovodrun exited with $code, expected 1"
    grep -q 'timed out after --elastic-timeout 3 s waiting for 2 worker slots (--min-np): 1 available' "$log" ||
      fail "no message saying why"
    cat "$log"
    echo "PASS: $scenario"
    ;;
  *) echo "unknown scenario $scenario"; exit 2 ;;
esac
