#!/usr/bin/env bash
# `korovod run --profiles`: the job's profile fills what it leaves unset, as in a cluster (the
# launcher sees the Intel MPI slots from the profile's GPUs and its TCP network's interface);
# an unknown profile, or a profile without --profiles, is refused before any pod starts (exit 2)
# with a message naming the profiles that exist.
source "$(dirname "$0")/lib.sh"
case ${1:-} in -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

# The command docs/profiles.md ("Local mode") shows, plus a timeout and a work dir.
"$KOROVOD" run "$KOROVOD_SOURCE_DIR/tests/e2e/local/manifests/profiled.yaml" \
  --profiles "$KOROVOD_SOURCE_DIR/tests/e2e/local/manifests/profiles.yaml" --timeout 120 \
  --work-dir "$TEST_DIR/work" >"$TEST_DIR/out" 2>&1 || { cat "$TEST_DIR/out"; fail "korovod run --profiles failed"; }
cat "$TEST_DIR/out"
expect_in "$TEST_DIR/out" '\] perhost=3 ifname=eth7$' "the profile's slots (Intel MPI) and network in the launcher"

# refused NAME ARGS...: korovod run must exit 2, start no pod, and print the message ($TEST_DIR/NAME.out).
refused() {
  local name=$1 code=0
  shift
  "$KOROVOD" run "$@" --work-dir "$TEST_DIR/work-$name" >"$TEST_DIR/$name.out" 2>&1 || code=$?
  cat "$TEST_DIR/$name.out"
  [[ $code == 2 ]] || fail "$name: exit code $code, want 2"
  [[ ! -d $TEST_DIR/work-$name/pods ]] || fail "$name: pods were started"
}
sed 's/korovod.io\/profile: intel-tcp/korovod.io\/profile: intel-tpc/' "$MANIFESTS/profiled.yaml" >"$TEST_DIR/typo.yaml"
refused unknown "$TEST_DIR/typo.yaml" --profiles "$MANIFESTS/profiles.yaml"
expect_in "$TEST_DIR/unknown.out" 'profile "intel-tpc" does not exist; profiles: intel-tcp, other$' "unknown profile"
refused no-file "$MANIFESTS/profiled.yaml"
expect_in "$TEST_DIR/no-file.out" 'names profile "intel-tcp": pass the profiles with --profiles FILE' "no --profiles"
echo PASS
