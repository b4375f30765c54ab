#!/bin/bash
# korovodrun end to end, one scenario per call (CMakeLists.txt registers each):
#   korovodrun_e2e.sh <korovodrun> <rt_tcp_worker> local NP   NP korovod ranks on this host
#   korovodrun_e2e.sh <korovodrun> <rt_tcp_worker> hosts      -H with two local "hosts": the
#                                                             exported and the runtime's topology
#   korovodrun_e2e.sh <korovodrun> <rt_tcp_worker> tuning     timeline and autotune flags reach
#                                                             the runtime (files written)
#   korovodrun_e2e.sh <korovodrun> <rt_tcp_worker> fail       a rank exits 3: korovodrun exits 3,
#                                                             the other ranks are gone
#   korovodrun_e2e.sh <korovodrun> <rt_tcp_worker> sigint     SIGINT: 130, every rank gone
#   korovodrun_e2e.sh <korovodrun> <rt_tcp_worker> kill9      korovodrun SIGKILLed: its guard
#                                                             still ends every rank's group
#   korovodrun_e2e.sh <korovodrun> <rt_tcp_worker> ssh        a second "host" over ssh (own sshd
#                                                             on 127.0.0.2; exit 77 where it
#                                                             cannot run)
#   korovodrun_e2e.sh <korovodrun> <rt_tcp_worker> intruder   an outsider attacks the store while
#                                                             the job runs: refused and logged,
#                                                             the job's results unharmed; the
#                                                             secret on no command line
#   korovodrun_e2e.sh <korovodrun> <rt_mpi_test> mpi          --mpi under real mpirun
#   korovodrun_e2e.sh <korovodrun> - cli                      --help, -cb, usage errors
set -uo pipefail
korovodrun=$1
worker=$2
mode=$3
np=${4:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/korovodrun-e2e-XXXXXX")
# Each scenario's own processes carry this in their command line.
marker="kvrun-marker-$$-$RANDOM"
cleanup_hooks=()
cleanup() {
  local h
  for h in "${cleanup_hooks[@]}"; do eval "$h"; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_line() {  # expect_line FILE REGEX WHAT
  grep -Eq -- "$2" "$1" || { cat "$1"; fail "$3: no line matching /$2/"; }
}
left_behind() { pgrep -f -- "$marker" | grep -vx "$$" || true; }
expect_none_left() {
  local i
  for i in $(seq 20); do [ -z "$(left_behind)" ] && return 0; sleep 0.1; done
  ps -o pid,pgid,args -p "$(left_behind | paste -sd,)" >&2
  fail "$1: processes with the marker are still running"
}
wait_for_count() {  # wait_for_count N: until N processes carry the marker (at most 20 s)
  local i
  for i in $(seq 200); do [ "$(left_behind | wc -l)" -ge "$1" ] && return 0; sleep 0.1; done
  fail "only $(left_behind | wc -l) of $1 ranks started"
}
# A rank program of a few shell lines: rank $1 runs $2, the others sleep with the marker.
rank_script() { echo "if [ \"\$HOROVOD_RANK\" = $1 ]; then $2; fi; sleep 60; : $marker"; }

run_local() {
  "$korovodrun" -np "$np" "$worker" >"$work/out" 2>"$work/err"
  local rc=$?
  cat "$work/out" "$work/err"
  [ $rc -eq 0 ] || fail "korovodrun -np $np exited $rc"
  for ((r = 0; r < np; r++)); do
    expect_line "$work/out" "^\[$r\]<stdout>:\[rank $r\] TCP-WORKER-OK size $np local $r/$np cross 0/1" "rank $r"
  done
  [ "$(grep -c . "$work/out")" -eq "$np" ] || fail "expected exactly $np output lines"
}

run_hosts() {
  # Two names for this machine: both local, but two hosts for korovodrun and for the runtime.
  "$korovodrun" -np 3 -H localhost:2,127.0.0.1:1 --fusion-threshold-mb 2 sh -c \
    'echo "env $HOROVOD_RANK $HOROVOD_LOCAL_RANK/$HOROVOD_LOCAL_SIZE $HOROVOD_CROSS_RANK/$HOROVOD_CROSS_SIZE $HOROVOD_HOSTNAME $HOROVOD_FUSION_THRESHOLD"' \
    >"$work/env" 2>&1 || { cat "$work/env"; fail "env job failed"; }
  cat "$work/env"
  expect_line "$work/env" '^\[0\]<stdout>:env 0 0/2 0/2 localhost 2097152$' "rank 0 env"
  expect_line "$work/env" '^\[1\]<stdout>:env 1 1/2 0/1 localhost 2097152$' "rank 1 env"
  expect_line "$work/env" '^\[2\]<stdout>:env 2 0/1 1/2 127.0.0.1 2097152$' "rank 2 env"
  "$korovodrun" -np 3 -H localhost:2,127.0.0.1:1 "$worker" >"$work/out" 2>&1 || { cat "$work/out"; fail "worker job failed"; }
  cat "$work/out"
  expect_line "$work/out" '^\[0\]<stdout>:\[rank 0\] TCP-WORKER-OK size 3 local 0/2 cross 0/2' "rank 0 topology"
  expect_line "$work/out" '^\[1\]<stdout>:\[rank 1\] TCP-WORKER-OK size 3 local 1/2 cross 0/1' "rank 1 topology"
  expect_line "$work/out" '^\[2\]<stdout>:\[rank 2\] TCP-WORKER-OK size 3 local 0/1 cross 1/2' "rank 2 topology"
}

run_tuning() {
  "$korovodrun" -np 2 --timeline-filename "$work/timeline.json" --timeline-mark-cycles --autotune \
    --autotune-log-file "$work/autotune.csv" --cycle-time-ms 2 --fusion-threshold-mb 4 "$worker" >"$work/out" 2>&1
  local rc=$?
  cat "$work/out"
  [ $rc -eq 0 ] || fail "korovodrun with tuning flags exited $rc"
  expect_line "$work/timeline.json" '"name": "CYCLE_START"' "--timeline-mark-cycles in the timeline"
  expect_line "$work/autotune.csv" '^sample,fusion_threshold_bytes,cycle_time_ms' "--autotune-log-file's header"
}

run_fail() {
  "$korovodrun" -np 3 sh -c "$(rank_script 1 'sleep 1; echo rank-one-fails; exit 3')" >"$work/out" 2>&1
  local rc=$?
  cat "$work/out"
  [ $rc -eq 3 ] || fail "korovodrun exited $rc, expected the failing rank's 3"
  expect_line "$work/out" '^\[1\]<stdout>:rank-one-fails$' "the failing rank's output"
  expect_line "$work/out" '^korovodrun: rank 1 on localhost exited with code 3' "korovodrun's report"
  expect_none_left "after rank 1 failed"
}

run_sigint() {
  "$korovodrun" -np 3 sh -c "sleep 60; : $marker" >"$work/out" 2>&1 &
  local pid=$!
  wait_for_count 4  # korovodrun itself carries the marker too
  kill -INT $pid
  wait $pid
  local rc=$?
  cat "$work/out"
  [ $rc -eq 130 ] || fail "korovodrun exited $rc after SIGINT, expected 130"
  expect_none_left "after SIGINT"
}

run_kill9() {
  # The marker sits in a grandchild of each rank: only the guard reaches it.
  "$korovodrun" -np 2 sh -c "sh -c 'sleep 60; : $marker' & wait" >"$work/out" 2>&1 &
  local pid=$!
  wait_for_count 3  # korovodrun and the 2 grandchildren
  kill -KILL $pid
  wait $pid 2>/dev/null
  local i
  for i in $(seq 100); do [ -z "$(left_behind)" ] && return 0; sleep 0.1; done
  ps -o pid,pgid,args -p "$(left_behind | paste -sd,)" >&2
  fail "after SIGKILL to korovodrun: processes with the marker are still running"
}

start_sshd() {  # sets ssh_port, ssh_key; puts an ssh wrapper first on PATH
  for tool in /usr/sbin/sshd ssh ssh-keygen; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
  done
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: a private sshd that accepts logins needs root here"; exit 77; }
  ssh-keygen -q -t ed25519 -N '' -f "$work/host_key" </dev/null && ssh-keygen -q -t ed25519 -N '' -f "$work/user_key" </dev/null ||
    fail "ssh-keygen"
  cp "$work/user_key.pub" "$work/authorized_keys"
  chmod 600 "$work/authorized_keys"
  mkdir -p /run/sshd && chmod 755 /run/sshd  # sshd's privilege separation directory
  ssh_port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])')
  ssh_key=$work/user_key
  /usr/sbin/sshd -D -e -f /dev/null -p "$ssh_port" -h "$work/host_key" -o ListenAddress=127.0.0.2 -o UsePAM=no \
    -o PidFile=none -o StrictModes=no -o "AuthorizedKeysFile=$work/authorized_keys" -o PermitRootLogin=prohibit-password \
    2>"$work/sshd.log" &
  local sshd_pid=$!
  cleanup_hooks+=("kill $sshd_pid 2>/dev/null; wait $sshd_pid 2>/dev/null")
  # The host key changes every run: keep it out of the user's known_hosts.
  mkdir -p "$work/bin"
  printf '#!/bin/sh\nexec %s -o UserKnownHostsFile=%s -o LogLevel=ERROR "$@"\n' "$(command -v ssh)" "$work/known_hosts" \
    >"$work/bin/ssh"
  chmod +x "$work/bin/ssh"
  export PATH="$work/bin:$PATH"
  local i
  for i in $(seq 50); do
    ssh -o BatchMode=yes -o StrictHostKeyChecking=no -p "$ssh_port" -i "$ssh_key" 127.0.0.2 true 2>/dev/null && return 0
    kill -0 $sshd_pid 2>/dev/null || { cat "$work/sshd.log"; echo "SKIP: sshd did not start"; exit 77; }
    sleep 0.2
  done
  cat "$work/sshd.log"
  fail "sshd on 127.0.0.2:$ssh_port never accepted the test key"
}

run_ssh() {
  start_sshd
  local ssh_flags=(-p "$ssh_port" -i "$ssh_key")
  # 127.0.0.2 is no interface's address: korovodrun reaches it over ssh.
  "$korovodrun" -np 4 -H 127.0.0.1:2,127.0.0.2:2 "${ssh_flags[@]}" --verbose "$worker" >"$work/out" 2>&1
  local rc=$?
  cat "$work/out"
  [ $rc -eq 0 ] || fail "korovodrun over ssh exited $rc"
  expect_line "$work/out" "^korovodrun: rank 2 on 127.0.0.2: ssh .*-p $ssh_port -i $ssh_key 127.0.0.2 " "rank 2 goes over ssh"
  expect_line "$work/out" '^korovodrun: rank 0 on 127.0.0.1: [^ ]*rt_tcp_worker$' "rank 0 runs locally"
  expect_line "$work/out" '^\[2\]<stdout>:\[rank 2\] TCP-WORKER-OK size 4 local 0/2 cross 1/2' "remote rank 2"
  expect_line "$work/out" '^\[3\]<stdout>:\[rank 3\] TCP-WORKER-OK size 4 local 1/2 cross 1/2' "remote rank 3"
  expect_line "$work/out" '^\[0\]<stdout>:\[rank 0\] TCP-WORKER-OK size 4 local 0/2 cross 0/2' "local rank 0"
  # The remote ranks proved the job secret, which went over ssh's stdin, not its command line.
  expect_line "$work/out" "^korovodrun: rank 2 on 127.0.0.2: ssh .*read -r KOROVOD_JOB_SECRET" "the secret read from stdin"
  ! grep -q "KOROVOD_JOB_SECRET=" "$work/out" || fail "the job secret is on the ssh command line"

  # A local rank fails once both remote ranks run: they end through their closed stdin.
  local up="$work/up"
  "$korovodrun" -np 3 -H 127.0.0.1:1,127.0.0.2:2 "${ssh_flags[@]}" sh -c \
    "if [ \$HOROVOD_RANK = 0 ]; then until [ -e $up.1 ] && [ -e $up.2 ]; do sleep 0.1; done; exit 3; fi; touch $up.\$HOROVOD_RANK; sleep 60; : $marker" \
    >"$work/out" 2>&1
  rc=$?
  cat "$work/out"
  [ $rc -eq 3 ] || fail "local rank failed: korovodrun exited $rc, expected 3"
  expect_none_left "after the local rank failed"

  # A remote rank fails: its exit code comes back through ssh.
  "$korovodrun" -np 2 -H 127.0.0.1:1,127.0.0.2:1 "${ssh_flags[@]}" sh -c "$(rank_script 1 'sleep 1; exit 4')" \
    >"$work/out" 2>&1
  rc=$?
  cat "$work/out"
  [ $rc -eq 4 ] || fail "remote rank failed: korovodrun exited $rc, expected 4"
  expect_none_left "after the remote rank failed"

  # SIGINT with ranks on both hosts.
  "$korovodrun" -np 2 -H 127.0.0.1:1,127.0.0.2:1 "${ssh_flags[@]}" sh -c "sleep 60; : $marker" >"$work/out" 2>&1 &
  local pid=$!
  wait_for_count 4  # korovodrun, local rank, ssh client, remote rank
  kill -INT $pid
  wait $pid
  rc=$?
  cat "$work/out"
  [ $rc -eq 130 ] || fail "SIGINT over ssh: korovodrun exited $rc, expected 130"
  expect_none_left "after SIGINT with an ssh rank"
}

run_intruder() {
  local intruder
  intruder="$(cd "$(dirname "$0")/.." && pwd)/tcp_intruder.py"
  "$korovodrun" -np 3 --verbose sh -c "sleep 1; exec $worker --steps 50 --pause-ms 100" >"$work/out" 2>"$work/err" &
  local pid=$! addr="" i
  for i in $(seq 100); do
    addr=$(sed -nE 's/^korovodrun: rendezvous store at ([0-9.]+:[0-9]+)$/\1/p' "$work/err" | head -1)
    [ -n "$addr" ] && break
    sleep 0.05
  done
  [ -n "$addr" ] || { kill $pid; cat "$work/err"; fail "korovodrun --verbose never named its store"; }
  python3 "$intruder" "$addr" --seconds 4 >"$work/intruder" 2>&1 &
  local intruder_pid=$!
  # While the ranks run (they start after 1 s and take 5 s): the secret is in their environment,
  # on no command line.
  local ranks=""
  for i in $(seq 50); do
    ranks=$(pgrep -f -- "^$worker --steps 50" || true)
    [ "$(wc -w <<<"$ranks")" -eq 3 ] && break
    sleep 0.1
  done
  [ "$(wc -w <<<"$ranks")" -eq 3 ] || { ps -ef >&2; fail "expected 3 ranks running during the attack, found: $ranks"; }
  ! ps -eo args | grep -q "KOROVOD_JOB_SECRET[=]" || fail "a command line carries the job secret"
  for i in $ranks; do
    tr '\0' '\n' <"/proc/$i/environ" 2>/dev/null | grep -q '^KOROVOD_JOB_SECRET=[0-9a-f]\{64\}$' ||
      fail "rank process $i has no KOROVOD_JOB_SECRET in its environment"
  done
  wait $intruder_pid
  local intruder_rc=$?
  wait $pid
  local rc=$?
  cat "$work/out" "$work/intruder"
  grep -E 'korovodrun: (rendezvous|closed)' "$work/err" | head -5
  [ $rc -eq 0 ] || { cat "$work/err"; fail "the job under attack exited $rc"; }
  [ $intruder_rc -eq 0 ] || fail "the intruder got an answer"
  expect_line "$work/intruder" '^INTRUDER attempts=[1-9]' "intruder attempts"
  for r in 0 1 2; do
    expect_line "$work/out" "^\[$r\]<stdout>:\[rank $r\] TCP-WORKER-OK size 3" "rank $r unharmed"
  done
  expect_line "$work/err" "^korovodrun: rendezvous store on port ${addr##*:}: closed the connection from 127\.0\.0\.1:[0-9]+: " \
    "refused connections logged with their address"
}

run_mpi() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  "$korovodrun" --mpi -np 2 --fusion-threshold-mb 3 --verbose sh -c \
    'echo "mpi rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE fusion $HOROVOD_FUSION_THRESHOLD"' >"$work/env" 2>&1
  local rc=$?
  cat "$work/env"
  [ $rc -eq 0 ] || fail "korovodrun --mpi (env job) exited $rc"
  expect_line "$work/env" '^korovodrun: mpirun .*--tag-output -np 2 -H localhost:2 -bind-to none -map-by slot' "the mpirun line"
  expect_line "$work/env" '^\[1,0\]<stdout>:mpi rank 0 of 2 fusion 3145728$' "rank 0 under mpirun"
  expect_line "$work/env" '^\[1,1\]<stdout>:mpi rank 1 of 2 fusion 3145728$' "rank 1 under mpirun"
  "$korovodrun" --mpi -np 2 "$worker" >"$work/out" 2>&1
  rc=$?
  cat "$work/out"
  [ $rc -eq 0 ] || fail "korovodrun --mpi -np 2 $worker exited $rc"
  expect_line "$work/out" '^\[1,0\]<stdout>:rt_mpi_test np=2: all checks passed' "rt_mpi_test's verdict"
}

run_cli() {
  "$korovodrun" --help >"$work/help" 2>&1 || fail "--help exited non-zero"
  local flag
  for flag in -np --num-proc -cb --check-build -H --hosts --hostfile -p --ssh-port -i --ssh-identity-file \
    --network-interface --network-interfaces --start-timeout --timeline-filename --timeline-mark-cycles --autotune \
    --autotune-log-file --cycle-time-ms --fusion-threshold-mb --verbose --mpi --tcp --rsh-agent --help; do
    grep -q -- "$flag\b" "$work/help" || { cat "$work/help"; fail "--help does not mention $flag"; }
  done
  "$korovodrun" -cb >"$work/cb" 2>&1 || fail "-cb exited non-zero"
  cat "$work/cb"
  expect_line "$work/cb" '^ +\[X\] TCP' "-cb's controllers"
  expect_line "$work/cb" '^ +\[X\] shared memory' "-cb's tensor operations"
  "$korovodrun" -np 2 >"$work/usage" 2>&1
  [ $? -eq 2 ] || fail "no command: expected exit 2"
  expect_line "$work/usage" '^korovodrun: no command given' "the usage error"
  "$korovodrun" -np 5 -H localhost:2,127.0.0.1:2 true >"$work/slots" 2>&1
  [ $? -eq 1 ] || fail "too few slots: expected exit 1"
  expect_line "$work/slots" '^korovodrun: -np 5 is more than the 4 slots of the hosts \(localhost:2,127.0.0.1:2\)$' "slots"
}

case $mode in
  local) run_local ;;
  hosts) run_hosts ;;
  tuning) run_tuning ;;
  fail) run_fail ;;
  sigint) run_sigint ;;
  kill9) run_kill9 ;;
  ssh) run_ssh ;;
  intruder) run_intruder ;;
  mpi) run_mpi ;;
  cli) run_cli ;;
  *) fail "unknown mode $mode" ;;
esac
echo "korovodrun $mode: passed"
