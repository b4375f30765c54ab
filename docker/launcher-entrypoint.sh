#!/usr/bin/env bash
# Launcher entrypoint of the korovod worker images: waits until every host in the MPI hostfile
# resolves and, when mpirun starts its daemons over ssh, until every host's sshd accepts
# connections; then runs the launcher command (mpirun ...). Worker pods get DNS records only once
# the headless Service publishes them, and their sshd listens a moment after that, so a launcher
# that starts first would otherwise fail with "ssh: Could not resolve hostname" or "ssh: connect
# to host ... Connection refused" — the most common complaint about Kubeflow's mpi-operator.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: launcher-entrypoint.sh COMMAND [ARGS...]
       launcher-entrypoint.sh --help

Waits until every host named in the MPI hostfile resolves (getent hosts), then, when Open MPI's
rsh agent is ssh, until every host accepts TCP connections on its ssh port; both with
exponential backoff for one bounded time. Then execs COMMAND ARGS. If a host still does not
resolve, or its sshd does not answer, when the time is up, it names that host and exits 1
without running COMMAND.

Hostfile lines: "host slots=N" (Open MPI), "host:N" (Intel MPI, MPICH) or "host"; blank lines and
'#' comments are skipped. Pods whose K_MPI_JOB_ROLE is "worker" skip the wait.

Environment:
  KOROVOD_HOSTFILE              hostfile to read (default /etc/mpi/hostfile; when the file does
                                not exist there is nothing to wait for)
  KOROVOD_DNS_WAIT_SECONDS      give up after this many seconds, DNS and sshd together
                                (default 300)
  KOROVOD_DNS_BACKOFF_MS        first retry delay in milliseconds, doubled after each round
                                (default 250)
  KOROVOD_DNS_MAX_BACKOFF_MS    longest delay between rounds in milliseconds (default 10000)
  KOROVOD_SSH_WAIT              1 (default): also wait for each host's sshd; 0: DNS only. The
                                wait is skipped when OMPI_MCA_plm_rsh_agent names another agent
                                than ssh.
  KOROVOD_SSH_PORT              the port to try (default: what "ssh -G HOST" says, so the
                                image's /etc/ssh/ssh_config Port 2222 applies; 22 without ssh)
EOF
}

say() { echo "launcher-entrypoint: $*" >&2; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# The host names of a hostfile, in order, without slot counts.
hosts_in() {
  local line host
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%%#*}
    read -r host _ <<<"$line" || true
    [[ -n ${host:-} ]] || continue
    echo "${host%%:*}"
  done <"$1"
}

now_ms() {
  local t=${EPOCHREALTIME/./}
  echo $((10#$t / 1000))
}

sleep_ms() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }

# The port ssh uses for host $1: KOROVOD_SSH_PORT, else ssh's effective configuration, else 22.
ssh_port_of() {
  if [[ -n ${KOROVOD_SSH_PORT:-} ]]; then echo "$KOROVOD_SSH_PORT"; return; fi
  local port=""
  if command -v ssh >/dev/null 2>&1; then
    port=$(ssh -G "$1" 2>/dev/null | awk '$1 == "port" { print $2; exit }') || port=""
  fi
  echo "${port:-22}"
}

# Whether mpirun starts its daemons with ssh: Open MPI's rsh agent unset, or its first word ssh.
agent_is_ssh() {
  local agent=${OMPI_MCA_plm_rsh_agent:-}
  [[ -z $agent ]] && return 0
  read -r agent _ <<<"$agent"
  [[ ${agent##*/} == ssh ]]
}

resolves() { getent hosts "$1" >/dev/null 2>&1; }

# Whether host $1 accepts a TCP connection on its ssh port within 2 s.
sshd_answers() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$(ssh_port_of "$1")" >/dev/null 2>&1
}

# wait_for KIND: retries the check of KIND (dns or sshd) on every host in `pending` until all
# pass or `deadline` (ms) passes; on timeout names the first host left and exits 1. Uses main's
# start, deadline, total, hostfile and the backoff settings.
wait_for() {
  local kind=$1 check=resolves what="does not resolve yet" round=0 delay backoff=$backoff
  [[ $kind == sshd ]] && check=sshd_answers && what="does not accept ssh connections yet"
  while ((${#pending[@]} > 0)); do
    local -a still=()
    local h
    for h in "${pending[@]}"; do
      "$check" "$h" || still+=("$h")
    done
    pending=("${still[@]+"${still[@]}"}")
    ((${#pending[@]} > 0)) || break

    local now waited_s first=${pending[0]}
    now=$(now_ms)
    waited_s=$(((now - start) / 1000))
    if ((now >= deadline)); then
      if [[ $kind == dns ]]; then
        say "gave up after ${waited_s}s: host '$first' from $hostfile does not resolve" \
          "(getent hosts $first fails); $((total - ${#pending[@]})) of $total hosts resolve."
      else
        say "gave up after ${waited_s}s: host '$first' from $hostfile resolves but nothing" \
          "accepts connections on its ssh port $(ssh_port_of "$first");" \
          "$((total - ${#pending[@]})) of $total hosts answer."
      fi
      if [[ $kind == dns ]]; then
        ((${#pending[@]} == 1)) || say "also unresolved: ${pending[*]:1}"
        say "check that pod ${first%%.*} exists and is Running, and that the MPIJob's" \
          "headless Service exists (docs/troubleshooting.md, \"DNS\")."
      else
        ((${#pending[@]} == 1)) || say "also not answering: ${pending[*]:1}"
        say "check that pod ${first%%.*} runs sshd on that port (kubectl logs ${first%%.*})" \
          "(docs/troubleshooting.md, \"DNS\")."
      fi
      exit 1
    fi
    round=$((round + 1))
    if [[ $kind == dns ]]; then
      say "waiting for DNS: ${#pending[@]} of $total hosts do not resolve yet (first: '$first');" \
        "round $round, ${waited_s}s of ${wait_s}s"
    else
      say "waiting for sshd: ${#pending[@]} of $total hosts do not accept ssh connections yet" \
        "(first: '$first' port $(ssh_port_of "$first")); round $round, ${waited_s}s of ${wait_s}s"
    fi
    delay=$backoff
    ((now + delay <= deadline)) || delay=$((deadline - now))
    sleep_ms "$delay"
    backoff=$((backoff * 2))
    ((backoff <= max_backoff)) || backoff=$max_backoff
  done
}

main() {
  case ${1:-} in
    -h|--help) usage; exit 0 ;;
    "") say "no command given (see --help)"; exit 2 ;;
  esac

  local hostfile=${KOROVOD_HOSTFILE:-/etc/mpi/hostfile}
  local wait_s=${KOROVOD_DNS_WAIT_SECONDS:-300}
  local backoff=${KOROVOD_DNS_BACKOFF_MS:-250}
  local max_backoff=${KOROVOD_DNS_MAX_BACKOFF_MS:-10000}
  local ssh_wait=${KOROVOD_SSH_WAIT:-1}
  local v
  for v in wait_s backoff max_backoff; do
    is_uint "${!v}" || { say "$v must be a non-negative integer, got '${!v}'"; exit 2; }
  done
  [[ $ssh_wait == 0 || $ssh_wait == 1 ]] || { say "KOROVOD_SSH_WAIT must be 0 or 1, got '$ssh_wait'"; exit 2; }
  if [[ -n ${KOROVOD_SSH_PORT:-} ]] && ! { is_uint "$KOROVOD_SSH_PORT" && ((KOROVOD_SSH_PORT > 0 && KOROVOD_SSH_PORT < 65536)); }; then
    say "KOROVOD_SSH_PORT must be a port number (1-65535), got '$KOROVOD_SSH_PORT'"
    exit 2
  fi

  ((backoff > 0)) || backoff=1
  if [[ ${K_MPI_JOB_ROLE:-} == worker ]]; then
    exec "$@"
  fi
  if [[ ! -e $hostfile ]]; then
    say "no hostfile at $hostfile; nothing to wait for"
    exec "$@"
  fi

  local -a hosts=() pending=()
  mapfile -t hosts < <(hosts_in "$hostfile")
  local total=${#hosts[@]} start deadline
  start=$(now_ms)
  deadline=$((start + wait_s * 1000))
  pending=("${hosts[@]+"${hosts[@]}"}")
  wait_for dns
  ((total == 0)) || say "all $total hosts in $hostfile resolve"
  if ((ssh_wait == 1 && total > 0)) && agent_is_ssh; then
    pending=("${hosts[@]}")
    wait_for sshd
    say "all $total hosts in $hostfile accept ssh connections"
  fi
  exec "$@"
}

main "$@"
