#!/bin/bash
# korovodrun's elastic mode with the real runtime: usage
#   korovodrun_elastic_runtime.sh KOROVODRUN WORKER
# WORKER: elastic_allreduce_worker (libkorovod's C ABI in elastic mode: checked allreduces every
# step, a reset at every newer round or lost peer). The discovery script is `cat HOSTS`; the test
# rewrites HOSTS and kills one worker:
#   round 1  2 workers (localhost:2)
#   round 2  3 workers (HOSTS localhost:3): a join
#   round 3  2 workers after kill -9 of localhost:1: the survivors' ops fail, they reset into it
#   round 4  3 workers: korovodrun respawns localhost:1's slot
#   round 5  2 workers (HOSTS localhost:2): localhost:2 is removed and exits
# Every member of every round must report correct allreduces for that round's size (the worker
# exits 3 on a wrong element), and the job must end 0 once DONE exists.
set -u
korovodrun=$1
if [ "$korovodrun" = --help ]; then sed -n '2,14p' "$0"; exit 0; fi
worker=$2
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$dir"' EXIT
log=$dir/log
fail() { echo "FAIL: $*"; echo "---- korovodrun output"; cat "$log"; exit 1; }
wait_for() {  # wait_for REGEX SECONDS: until the log has a line matching it
  local end=$((SECONDS + $2))
  until grep -Eq "$1" "$log"; do
    [ $SECONDS -ge $end ] && fail "no line matching '$1' within $2 s"
    grep -q 'WRONG' "$log" && fail "a wrong allreduce result"
    sleep 0.1
  done
}
# trained ROUND SIZE IDS...: every id ran a correct allreduce in ROUND with SIZE workers.
trained() {
  local round=$1 size=$2 id
  shift 2
  for id in "$@"; do
    wait_for "^\[$id\]<stdout>:worker $id round $round size $size: first allreduce correct$" 20
  done
}

echo localhost:2 > "$dir/hosts"
"$korovodrun" --min-np 2 --max-np 3 --host-discovery-script "cat $dir/hosts" "$worker" "$dir/done" > "$log" 2>&1 &
pid=$!
wait_for '^korovodrun: round 1: 2 workers \(localhost:0=0 localhost:1=1\)$' 30
trained 1 2 localhost:0 localhost:1

echo localhost:3 > "$dir/hosts"
wait_for '^korovodrun: round 2: 3 workers \(localhost:0=0 localhost:1=1 localhost:2=2\)$' 10
trained 2 3 localhost:0 localhost:1 localhost:2

victim=$(sed -nE 's/^\[localhost:1\]<stdout>:worker localhost:1 pid ([0-9]+) round 2 .*/\1/p' "$log" | head -1)
[ -n "$victim" ] || fail "no pid for localhost:1 in round 2"
kill -9 "$victim"
wait_for '^korovodrun: worker localhost:1 \(rank 1 of round 2\) exited with code 137$' 10
wait_for '^korovodrun: round 3: 2 workers \(localhost:0=0 localhost:2=1\)$' 10
for id in localhost:0 localhost:2; do
  wait_for "^\[$id\]<stdout>:worker $id round 2 size 3: [0-9]+ allreduces correct, leaving \(lost a peer: " 10
done
trained 3 2 localhost:0 localhost:2
wait_for '^korovodrun: round 4: 3 workers \(localhost:0=0 localhost:2=1 localhost:1=2\)$' 10
trained 4 3 localhost:0 localhost:2 localhost:1

echo localhost:2 > "$dir/hosts"
wait_for '^korovodrun: round 5: 2 workers \(localhost:0=0 localhost:1=1\)$' 10
wait_for '^\[localhost:2\]<stdout>:worker localhost:2 pid [0-9]+ removed: ' 10
trained 5 2 localhost:0 localhost:1

touch "$dir/done"
wait $pid
code=$?
pid=
[ $code -eq 0 ] || fail "korovodrun exited with $code, expected 0"
grep -q WRONG "$log" && fail "a wrong allreduce result"
# No round may have run a step its size did not check: every "leaving" line names the size of
# a round korovodrun announced with that many workers.
while read -r round size; do
  grep -Eq "^korovodrun: round $round: $size workers " "$log" || fail "a worker trained in round $round with size $size"
done < <(sed -nE 's/.*<stdout>:worker [^ ]+ round ([0-9]+) size ([0-9]+): .*/\1 \2/p' "$log" | sort -u)
cat "$log"
echo "PASS: 2 -> 3 -> kill -9 -> 2 -> 3 -> 2 with correct allreduces in every round"
