#!/usr/bin/env bash
# scripts/dockerd leaves the machine as it found it: a second daemon of its own (own socket,
# state, data root and cgroup parent, so it can run beside the test suite's) starts, runs a
# container on a user-defined network, and after `stop` no process, mount, link, cgroup,
# firewall rule or sysctl of it is left. A daemon that already answers is used and never
# stopped, and `stop --claim` stops only what `start --claim` started.
set -euo pipefail
: "${KOROVOD_SOURCE_DIR:?}"
dockerd_script=$KOROVOD_SOURCE_DIR/scripts/dockerd
work=$(mktemp -d "${TMPDIR:-/tmp}/korovod-dockerd-test-XXXXXX")
export KOROVOD_DOCKERD_SOCKET=$work/docker.sock KOROVOD_DOCKERD_STATE=$work/state \
  KOROVOD_DOCKERD_CGROUP_PARENT=korovod-dockerd-test-$$ KOROVOD_CACHE=$work/cache
export DOCKER_HOST=unix://$KOROVOD_DOCKERD_SOCKET
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() { "$dockerd_script" stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

# What a Docker daemon may change on the host, and only that: the test runs beside other tests
# (RESOURCE_LOCK host_network keeps the kubelet node's tests, which change the firewall and
# ip_forward themselves, from running at the same time).
snapshot() {
  {
    echo "## ip_forward"; sysctl -n net.ipv4.ip_forward
    echo "## firewall"; { iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; } \
      | grep -E '^:FORWARD|^:DOCKER|-j DOCKER' | sed 's/\[[0-9]*:[0-9]*\]$//' || true
    echo "## cgroups"; find /sys/fs/cgroup -maxdepth 2 -name "$KOROVOD_DOCKERD_CGROUP_PARENT" 2>/dev/null | sort
    echo "## mounts"; awk -v w="$work" 'index($2, w) == 1 {print $2}' /proc/self/mounts
    echo "## processes"; pgrep -f -- "$work/" | grep -vx "$$" || true
  } 2>&1
}

# Docker-style links (a network's bridge br-<id>, docker0): the suite's own daemon makes and
# removes its networks meanwhile, so only a link that is new after stop counts.
docker_links() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(docker0|br-[0-9a-f]{12})$' | sort || true; }

before=$(snapshot)
links_before=$(docker_links)
claim=$work/claim
"$dockerd_script" start --claim "$claim"
[[ -f $claim ]] || fail "start --claim did not claim the daemon it started"
docker info >/dev/null || fail "the daemon does not answer on $KOROVOD_DOCKERD_SOCKET"

# A second start finds it answering: nothing is started or claimed.
"$dockerd_script" start --claim "$work/claim2" 2>"$work/start2.err"
grep -q 'already answers' "$work/start2.err" || { cat "$work/start2.err"; fail "a second start did not use the running daemon"; }
[[ ! -f $work/claim2 ]] || fail "a second start claimed a daemon it did not start"
"$dockerd_script" stop --claim "$work/claim2"
docker info >/dev/null || fail "stop --claim without a claim stopped the daemon"

# A container on a user-defined network: a one-binary image made from this host's /bin/sleep.
mkdir -p "$work/rootfs"
for f in /bin/sleep $(ldd /bin/sleep | awk '$2 == "=>" {print $3} $1 ~ /^\// {print $1}'); do
  mkdir -p "$work/rootfs$(dirname "$f")"
  cp -L "$f" "$work/rootfs$f"
done
tar -C "$work/rootfs" -c . | docker import - korovod-dockerd-test:sleep >/dev/null
docker network create korovod-dockerd-test >/dev/null
docker run -d --network korovod-dockerd-test --name sleeper korovod-dockerd-test:sleep /bin/sleep 600 >/dev/null
[[ $(docker inspect --format '{{.State.Running}}' sleeper) == true ]] || fail "the container is not running"
during=$(snapshot)
[[ $during != "$before" ]] || fail "the daemon and its container changed nothing that the test sees (is it really running?)"
[[ -n $(comm -13 <(echo "$links_before") <(docker_links)) ]] || fail "the test's network has no bridge"

"$dockerd_script" stop --claim "$claim"
[[ ! -f $claim ]] || fail "stop --claim left the claim"
! docker info >/dev/null 2>&1 || fail "the daemon still answers after stop"
after=$(snapshot)
left=$(comm -13 <(echo "$links_before") <(docker_links))
[[ -z $left ]] || fail "links left by the daemon: $left"
if [[ $after != "$before" ]]; then
  diff <(echo "$before") <(echo "$after") || true
  fail "the machine differs from before the daemon started"
fi
echo "PASS: dockerd started, ran a container on its own network, stopped; the host is as before"
