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
  # "[pod] final ..." from mpirun's untagged output, "[0]<stdout>:final ..." from korovodrun's.
  accuracy=$(sed -nE 's/.*(\] |<stdout>:)final test accuracy: ([0-9.]+) \(.*/\2/p' "$out" | head -1)
  [[ -n $accuracy ]] || fail "no final test accuracy line"
  awk -v a="$accuracy" -v min="$min" 'BEGIN { exit !(a > min) }' ||
    fail "final test accuracy $accuracy is not above $min"
  left=$(processes_of_run "$work")
  [[ -z $left ]] || fail "processes left behind: $left"
  echo "PASS: final test accuracy $accuracy > $min"
}

# expect_progress OUT SOURCE [KEY...]: rank 0's progress lines (docs/progress.md) are in OUT: at
# least two (the first step's and the final one), each `korovod-progress {JSON}` with a step, the
# steps rising (a second rank printing the same steps would repeat them), counted by SOURCE, and
# the last one with every KEY. Prints the lines' count and the last one.
expect_progress() {
  local out=$1 source=$2
  shift 2
  /usr/bin/python3 - "$out" "$source" "$@" <<'PY' || fail "progress lines (above)"
import json
import re
import sys

out, source, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
lines = [json.loads(m.group(1)) for m in (re.search(r"korovod-progress (\{.*\})\s*$", line)
                                          for line in open(out, errors="replace")) if m]
steps = [line.get("step") for line in lines]
problems = []
if len(lines) < 2:
    problems.append(f"{len(lines)} progress line(s), expected the first step's and a final one")
if None in steps or steps != sorted(set(steps)):
    problems.append(f"steps {steps} do not rise (or a line has none)")
if any(line.get("source") != source for line in lines):
    problems.append(f"sources {[line.get('source') for line in lines]}, expected {source}")
if lines and [key for key in keys if key not in lines[-1]]:
    problems.append(f"the last line lacks {[key for key in keys if key not in lines[-1]]}")
for problem in problems:
    print(f"progress: {problem}", file=sys.stderr)
if lines:
    print(f"progress: {len(lines)} line(s), the last {json.dumps(lines[-1])}")
sys.exit(1 if problems else 0)
PY
}
