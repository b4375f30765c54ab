#!/usr/bin/env bash
# Launcher entrypoint of the korovod worker images: waits until every host in the MPI hostfile
# resolves, then runs the launcher command (mpirun ...). Worker pods get DNS records only once
# the headless Service publishes them, so a launcher that starts first would otherwise fail with
# "ssh: Could not resolve hostname" — the most common complaint about Kubeflow's mpi-operator.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: launcher-entrypoint.sh COMMAND [ARGS...]
       launcher-entrypoint.sh --help

Waits until every host named in the MPI hostfile resolves (getent hosts), retrying with
exponential backoff for a bounded time, then execs COMMAND ARGS. If a host still does not
resolve when the time is up, it names that host and exits 1 without running COMMAND.

Hostfile lines: "host slots=N" (Open MPI), "host:N" (Intel MPI, MPICH) or "host"; blank lines and
'#' comments are skipped. Pods whose K_MPI_JOB_ROLE is "worker" skip the wait.

Environment:
  KOROVOD_HOSTFILE              hostfile to read (default /etc/mpi/hostfile; when the file does
                                not exist there is nothing to wait for)
  KOROVOD_DNS_WAIT_SECONDS      give up after this many seconds (default 300)
  KOROVOD_DNS_BACKOFF_MS        first retry delay in milliseconds, doubled after each round
                                (default 250)
  KOROVOD_DNS_MAX_BACKOFF_MS    longest delay between rounds in milliseconds (default 10000)
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

main() {
  case ${1:-} in
    -h|--help) usage; exit 0 ;;
    "") say "no command given (see --help)"; exit 2 ;;
  esac

  local hostfile=${KOROVOD_HOSTFILE:-/etc/mpi/hostfile}
  local wait_s=${KOROVOD_DNS_WAIT_SECONDS:-300}
  local backoff=${KOROVOD_DNS_BACKOFF_MS:-250}
  local max_backoff=${KOROVOD_DNS_MAX_BACKOFF_MS:-10000}
  local v
  for v in wait_s backoff max_backoff; do
    is_uint "${!v}" || { say "$v must be a non-negative integer, got '${!v}'"; exit 2; }
  done

  ((backoff > 0)) || backoff=1
  if [[ ${K_MPI_JOB_ROLE:-} == worker ]]; then
    exec "$@"
  fi
  if [[ ! -e $hostfile ]]; then
    say "no hostfile at $hostfile; nothing to wait for"
    exec "$@"
  fi

  local -a pending=()
  mapfile -t pending < <(hosts_in "$hostfile")
  local total=${#pending[@]}
  local start deadline round=0
  start=$(now_ms)
  deadline=$((start + wait_s * 1000))
  while ((${#pending[@]} > 0)); do
    local -a still=()
    local h
    for h in "${pending[@]}"; do
      getent hosts "$h" >/dev/null 2>&1 || still+=("$h")
    done
    pending=("${still[@]+"${still[@]}"}")
    ((${#pending[@]} > 0)) || break

    local now waited_s
    now=$(now_ms)
    waited_s=$(((now - start) / 1000))
    if ((now >= deadline)); then
      say "gave up after ${waited_s}s: host '${pending[0]}' from $hostfile does not resolve" \
        "(getent hosts ${pending[0]} fails); $((total - ${#pending[@]})) of $total hosts resolve."
      ((${#pending[@]} == 1)) || say "also unresolved: ${pending[*]:1}"
      say "check that pod ${pending[0]%%.*} exists and is Running, and that the MPIJob's" \
        "headless Service exists (docs/troubleshooting.md, \"DNS\")."
      exit 1
    fi
    round=$((round + 1))
    say "waiting for DNS: ${#pending[@]} of $total hosts do not resolve yet (first: '${pending[0]}');" \
      "round $round, ${waited_s}s of ${wait_s}s"
    local delay=$backoff
    ((now + delay <= deadline)) || delay=$((deadline - now))
    sleep_ms "$delay"
    backoff=$((backoff * 2))
    ((backoff <= max_backoff)) || backoff=$max_backoff
  done
  ((total == 0)) || say "all $total hosts in $hostfile resolve"
  exec "$@"
}

main "$@"
