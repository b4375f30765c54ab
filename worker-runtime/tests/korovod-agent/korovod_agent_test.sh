#!/bin/bash
# korovod-agent on real processes, one scenario per call (CMakeLists.txt registers each). Agents
# serve on 127.0.0.2 (and 127.0.0.3), which are no interface's address: korovodrun counts them
# as other hosts.
#   korovod_agent_test.sh <korovod-agent> relay          out/err on the right fds, the exit code,
#                                                        stdin relayed (a line, and 3 MiB via cat),
#                                                        what the command left in its group killed
#   korovod_agent_test.sh <korovod-agent> secret         another job's secret is refused (rsh 255,
#                                                        "refused" in the agent's log); a missing
#                                                        secret is an error on both sides
#   korovod_agent_test.sh <korovod-agent> client_killed  rsh SIGKILLed: the agent ends the
#                                                        command's group within grace + 2 s
#   korovod_agent_test.sh <korovod-agent> late_agent     the agent starts 2 s after rsh: rsh retries
#   korovod_agent_test.sh <korovod-agent> serve_sigterm  SIGTERM to the agent: exit 0, its command
#                                                        and rsh end
#   korovod_agent_test.sh <korovod-agent> korovodrun <korovodrun> <rt_tcp_worker>
#                                                        2 ranks through two agents: allreduces
#                                                        right; a rank killed names its rank
#   korovod_agent_test.sh <korovod-agent> mpirun         Open MPI's mpirun with plm_rsh_agent
#                                                        `korovod-agent rsh` (77 without mpirun)
set -uo pipefail
agent=$1
mode=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/korovod-agent-test-XXXXXX")
agent_pids=()
cleanup() {
  local p
  # SIGKILL: their handlers get SIGTERM (PR_SET_PDEATHSIG) and end their commands.
  for p in "${agent_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
expect_line() {  # expect_line FILE REGEX WHAT
  grep -Eq -- "$2" "$1" || { echo "--- $1"; cat "$1"; fail "$3: no line matching /$2/"; }
}
new_secret() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
port=$(/usr/bin/python3 "$here/../../../tests/python/shared/free_port.py")
export KOROVOD_JOB_SECRET
KOROVOD_JOB_SECRET=$(new_secret)
export KOROVOD_AGENT_CONNECT_TIMEOUT=20

start_agent() {  # start_agent IP [flags]: serves in the background, log in $work/agent-IP.log
  local ip=$1 i
  shift
  "$agent" serve --listen "$ip" --port "$port" --grace-seconds 1 "$@" 2>"$work/agent-$ip.log" &
  agent_pids+=($!)
  for i in $(seq 100); do
    grep -q "^korovod-agent: listening on $ip:$port (job secret required)$" "$work/agent-$ip.log" && return 0
    sleep 0.05
  done
  fail "the agent on $ip:$port never said it listens"
}
rsh() { "$agent" rsh -p "$port" 127.0.0.2 "$@"; }
# A zombie counts as gone: where PID 1 reaps no orphans (a container), a killed orphan stays one.
running() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $s != Z* ]]; }
gone_within() {  # gone_within SECONDS PID WHAT
  local i
  for i in $(seq $(($1 * 10))); do running "$2" || return 0; sleep 0.1; done
  ps -o pid,pgid,sid,args -p "$2" >&2
  fail "$3: pid $2 still runs after $1 s"
}
wait_for_file() { local i; for i in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; fail "no $1"; }

run_relay() {
  start_agent 127.0.0.2
  rsh 'echo out; echo err >&2; exit 7' >"$work/out" 2>"$work/err" </dev/null
  local rc=$?
  [ $rc -eq 7 ] || fail "rsh exited $rc, expected the command's 7"
  [ "$(cat "$work/out")" = out ] || fail "stdout: '$(cat "$work/out")'"
  [ "$(cat "$work/err")" = err ] || fail "stderr: '$(cat "$work/err")'"
  [ "$(echo 'hello agent' | rsh cat)" = "hello agent" ] || fail "stdin not relayed"
  # More than a frame and a pipe hold, both ways at once; then ssh-style options and word joining.
  head -c 3145728 /dev/urandom >"$work/big"
  rsh cat <"$work/big" >"$work/big.back" || fail "cat of 3 MiB exited $?"
  cmp -s "$work/big" "$work/big.back" || fail "3 MiB through cat came back different"
  [ "$("$agent" rsh -x -o ConnectionAttempts=10 -p "$port" 127.0.0.2 echo a '' b </dev/null)" = "a b" ] ||
    fail "ssh's options or word joining"
  # The command runs in the agent's working directory and environment, as sshd runs it.
  [ "$(rsh 'pwd; echo $KOROVOD_AGENT_TEST_VAR' </dev/null)" = "$(printf '%s\n%s' "$work" from-agent)" ] ||
    fail "working directory or environment: $(rsh 'pwd; echo $KOROVOD_AGENT_TEST_VAR' </dev/null)"
  expect_line "$work/agent-127.0.0.2.log" '^korovod-agent: running a command for 127\.0\.0\.[0-9]+:[0-9]+$' "the log"
  ! grep -q "echo out" "$work/agent-127.0.0.2.log" || fail "the agent logged the command's text"
  # A command that exits leaving a process in its group (holding its stdout): that process is
  # killed, so rsh returns the exit code at once rather than when the leftover ends.
  local t0=$SECONDS
  rsh "sleep 300 & echo \$! >$work/left.pid; exit 3" </dev/null >/dev/null
  rc=$?
  [ $rc -eq 3 ] || fail "a command leaving a process behind: rsh exited $rc, expected 3"
  (( SECONDS - t0 < 30 )) || fail "rsh waited $((SECONDS - t0)) s for the leftover"
  gone_within 3 "$(cat "$work/left.pid")" "the process the command left in its group"
}

run_secret() {
  start_agent 127.0.0.2
  KOROVOD_JOB_SECRET=$(new_secret) rsh true </dev/null 2>"$work/err"
  local rc=$?
  [ $rc -eq 255 ] || fail "another job's secret: rsh exited $rc, expected 255"
  expect_line "$work/err" "^korovod-agent rsh: 127\.0\.0\.2:$port refused this job's secret" "rsh's message"
  expect_line "$work/agent-127.0.0.2.log" '^korovod-agent: refused the connection from 127\.0\.0\.[0-9]+:[0-9]+: .*proof of the job secret is wrong' \
    "the agent's log"
  env -u KOROVOD_JOB_SECRET "$agent" rsh -p "$port" 127.0.0.2 true 2>"$work/err"
  rc=$?
  [ $rc -eq 255 ] || fail "no secret: rsh exited $rc, expected 255"
  expect_line "$work/err" 'KOROVOD_JOB_SECRET is not set' "rsh without a secret"
  env -u KOROVOD_JOB_SECRET "$agent" serve --listen 127.0.0.2 --port "$((port + 1))" 2>"$work/err"
  rc=$?
  [ $rc -ne 0 ] || fail "serve without a secret exited 0"
  expect_line "$work/err" 'KOROVOD_JOB_SECRET is not set' "serve without a secret"
  KOROVOD_JOB_SECRET=short "$agent" serve --listen 127.0.0.2 --port "$((port + 1))" 2>"$work/err"
  [ $? -ne 0 ] || fail "serve with a short secret exited 0"
  expect_line "$work/err" 'KOROVOD_JOB_SECRET has 5 bytes' "serve with a short secret"
  # The secret was never printed.
  ! grep -rqF "$KOROVOD_JOB_SECRET" "$work"/*.log "$work/err" || fail "the secret shows in a log"
  # The connection after a refusal still works: the agent goes on serving.
  [ "$(rsh echo still-serving </dev/null)" = still-serving ] || fail "the agent stopped serving after a refusal"
}

run_client_killed() {
  start_agent 127.0.0.2
  "$agent" rsh -p "$port" 127.0.0.2 "sleep 1000 & echo \$! >$work/sleep.pid; wait" </dev/null &
  local client=$!  # rsh itself, not a subshell
  wait_for_file "$work/sleep.pid"
  local sleeper
  sleeper=$(cat "$work/sleep.pid")
  running "$sleeper" || fail "the command's sleep does not run"
  kill -KILL $client
  gone_within 3 "$sleeper" "the command's group after rsh was killed (grace 1 s + 2 s)"
  expect_line "$work/agent-127.0.0.2.log" 'ending the command of .*: the connection closed' "the agent's log"
}

run_late_agent() {
  "$agent" rsh -p "$port" 127.0.0.2 'echo late-ok' </dev/null >"$work/out" 2>"$work/err" &
  local client=$!
  sleep 2
  kill -0 $client 2>/dev/null || fail "rsh gave up before the agent started: $(cat "$work/err")"
  start_agent 127.0.0.2
  wait $client
  local rc=$?
  [ $rc -eq 0 ] || fail "rsh exited $rc: $(cat "$work/err")"
  [ "$(cat "$work/out")" = late-ok ] || fail "output: $(cat "$work/out")"
  # And within the start timeout only: exit 255 naming the host, port and timeout.
  KOROVOD_AGENT_CONNECT_TIMEOUT=1 "$agent" rsh -p "$port" 127.0.0.3 true 2>"$work/err"
  rc=$?
  [ $rc -eq 255 ] || fail "nothing listening: rsh exited $rc, expected 255"
  expect_line "$work/err" "^korovod-agent rsh: could not reach 127\.0\.0\.3:$port within 1 s: " "the timeout message"
  KOROVOD_AGENT_CONNECT_TIMEOUT=1 "$agent" rsh -p "$port" no-such-host.invalid true 2>"$work/err"
  expect_line "$work/err" "could not reach no-such-host\.invalid:$port within 1 s: cannot resolve" "an unknown name"
}

run_serve_sigterm() {
  start_agent 127.0.0.2
  local server=${agent_pids[0]}
  "$agent" rsh -p "$port" 127.0.0.2 "trap '' TERM; sleep 1000 & echo \$! >$work/sleep.pid; wait" </dev/null \
    >"$work/out" 2>&1 &
  local client=$!
  wait_for_file "$work/sleep.pid"
  local sleeper
  sleeper=$(cat "$work/sleep.pid")
  kill -TERM "$server"
  gone_within 5 "$server" "the agent after SIGTERM"
  wait "$server"
  local rc=$?
  [ $rc -eq 0 ] || fail "the agent exited $rc after SIGTERM, expected 0"
  gone_within 1 "$sleeper" "the command (it ignores SIGTERM: SIGKILL after the grace period)"
  gone_within 2 $client "rsh after the agent stopped"
}

run_korovodrun() {
  local korovodrun=$3 worker=$4
  start_agent 127.0.0.2
  start_agent 127.0.0.3
  "$korovodrun" -np 2 -H 127.0.0.2:1,127.0.0.3:1 --rsh-agent "$agent rsh -p $port" --verbose "$worker" \
    >"$work/out" 2>&1
  local rc=$?
  cat "$work/out"
  [ $rc -eq 0 ] || fail "korovodrun through the agents exited $rc"
  expect_line "$work/out" "^korovodrun: rank 1 on 127\.0\.0\.3: $agent rsh -p $port 127\.0\.0\.3 " "rank 1 goes through the agent"
  expect_line "$work/out" '^\[0\]<stdout>:\[rank 0\] TCP-WORKER-OK size 2 local 0/1 cross 0/2' "rank 0"
  expect_line "$work/out" '^\[1\]<stdout>:\[rank 1\] TCP-WORKER-OK size 2 local 0/1 cross 1/2' "rank 1"
  ! grep -q "KOROVOD_JOB_SECRET=" "$work/out" || fail "a job secret is on a command line"
  grep -q "running a command" "$work/agent-127.0.0.3.log" || fail "the agent on 127.0.0.3 ran nothing"

  # KOROVOD_RSH_AGENT instead of the flag; rank 1 is killed (SIGKILL) on its host: korovodrun
  # fails naming it, and rank 0 is ended.
  local marker="korovod-agent-test-$$-$RANDOM"
  KOROVOD_RSH_AGENT="$agent rsh -p $port" "$korovodrun" -np 2 -H 127.0.0.2:1,127.0.0.3:1 sh -c \
    "if [ \$HOROVOD_RANK = 1 ]; then sleep 1; kill -KILL \$\$; fi; sleep 60; : $marker" >"$work/out" 2>&1
  rc=$?
  cat "$work/out"
  [ $rc -eq 137 ] || fail "rank 1 killed: korovodrun exited $rc, expected 137"
  expect_line "$work/out" '^korovodrun: rank 1 on 127\.0\.0\.3 .*(code 137|signal)' "korovodrun names rank 1"
  local i
  for i in $(seq 50); do pgrep -f -- "$marker" >/dev/null || break; sleep 0.1; done
  ! pgrep -f -- "$marker" >/dev/null || { pgrep -af -- "$marker"; fail "ranks left after the failure"; }
}

run_mpirun() {
  command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
  start_agent 127.0.0.2
  start_agent 127.0.0.3
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 mpirun -np 2 -H 127.0.0.2:1,127.0.0.3:1 \
    --mca plm_rsh_agent "$agent rsh -p $port" --mca orte_keep_fqdn_hostnames true hostname >"$work/out" 2>&1
  local rc=$?
  cat "$work/out"
  [ $rc -eq 0 ] || fail "mpirun through the agents exited $rc"
  [ "$(grep -cx "$(hostname)" "$work/out")" -eq 2 ] || fail "expected two lines with the hostname"
  grep -q "running a command" "$work/agent-127.0.0.2.log" || fail "mpirun did not go through the agent on 127.0.0.2"
  grep -q "running a command" "$work/agent-127.0.0.3.log" || fail "mpirun did not go through the agent on 127.0.0.3"
}

cd "$work" || exit 1
export KOROVOD_AGENT_TEST_VAR=from-agent
case $mode in
  relay) run_relay ;;
  secret) run_secret ;;
  client_killed) run_client_killed ;;
  late_agent) run_late_agent ;;
  serve_sigterm) run_serve_sigterm ;;
  korovodrun) run_korovodrun "$@" ;;
  mpirun) run_mpirun ;;
  *) fail "unknown mode $mode" ;;
esac
echo "korovod-agent $mode: passed"
