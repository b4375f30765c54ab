# Shared by the local-mode e2e scripts: paths, a per-test work dir, assertions.
# Env (set by CMakeLists.txt): KOROVOD_BIN_DIR, KOROVOD_SOURCE_DIR.
set -euo pipefail
: "${KOROVOD_BIN_DIR:?}" "${KOROVOD_SOURCE_DIR:?}"
KOROVOD="$KOROVOD_BIN_DIR/korovod"
MANIFESTS="$KOROVOD_SOURCE_DIR/tests/e2e/local/manifests"
TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/korovod-e2e-XXXXXX")
trap 'rm -rf "$TEST_DIR"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() {  # expect_in FILE REGEX WHAT
  grep -Eq -- "$2" "$1" || { cat "$1"; fail "$3: no line matching /$2/"; }
}

# Pids of processes whose environment names this run (every pod process carries
# KOROVOD_LOCAL_RUN=<work dir>), or whose command line names the work dir.
processes_of_run() {
  local work=$1 pid
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    [[ $pid == "$$" ]] && continue
    { if tr '\0' '\n' <"/proc/$pid/environ" | grep -xF "KOROVOD_LOCAL_RUN=$work" >/dev/null ||
         tr '\0' ' ' <"/proc/$pid/cmdline" | grep -F "$work/" >/dev/null; then
        echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline")"
      fi; } 2>/dev/null
  done
}

# expect_trained OUT MIN_ACCURACY WORK: a training example's run ended well: its "final test
# accuracy: A (" line from rank 0 has A above MIN_ACCURACY, and nothing of the run WORK is still
# running. Prints the PASS line.
expect_trained() {
  local out=$1 min=$2 work=$3 accuracy left
  accuracy=$(sed -nE 's/.*\] final test accuracy: ([0-9.]+) \(.*/\1/p' "$out" | head -1)
  [[ -n $accuracy ]] || fail "no final test accuracy line"
  awk -v a="$accuracy" -v min="$min" 'BEGIN { exit !(a > min) }' ||
    fail "final test accuracy $accuracy is not above $min"
  left=$(processes_of_run "$work")
  [[ -z $left ]] || fail "processes left behind: $left"
  echo "PASS: final test accuracy $accuracy > $min"
}
