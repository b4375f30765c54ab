#!/usr/bin/env bash
# The documented install on a fresh Debian 12: a container of korovod-base/debian:bookworm (Debian's
# minbase, nothing else installed) runs docs/pytorch.md's install block exactly as written, from a
# copy of this checkout, as root; then a 1-rank job imports korovod.torch from the venv it made and
# allreduces. What a new user meets, with no package the project's own machines happen to have.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
base=korovod-base/debian:bookworm
require_image "$base"
block=$(python3 "$KOROVOD_SOURCE_DIR/tests/support/docs_blocks.py" --after 'run this block as it is' "$KOROVOD_SOURCE_DIR/docs/pytorch.md")
grep -x 'pip install ./worker-runtime/python' <<<"$block" >/dev/null \
  || { echo "$block"; fail "the docs' install block has no 'pip install ./worker-runtime/python' line"; }
echo "docs/pytorch.md's install block:"
sed 's/^/    /' <<<"$block"

# The checkout as a clone has it (tracked and untracked files, no build outputs).
mkdir -p "$TEST_DIR/src"
(cd "$KOROVOD_SOURCE_DIR" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$KOROVOD_SOURCE_DIR" && xargs -0 cp --parents -t "$TEST_DIR/src" 2>/dev/null || true)
[[ -f $TEST_DIR/src/worker-runtime/python/pyproject.toml ]] || fail "could not copy the checkout"
# Downloaded .debs are kept between runs (apt's own archive folder, nothing else of apt's state).
archives=${KOROVOD_CACHE:-$HOME/.cache/korovod}/images/apt-archives-bookworm
mkdir -p "$archives/partial"
# The machine's way out to PyPI (its proxy's CA, when pip has one): environment, not command.
cert_args=()
if [[ -n ${PIP_CERT:-} && -s ${PIP_CERT:-} ]]; then
  cert_args=(-v "$PIP_CERT:/etc/korovod-test-pip-ca.crt:ro" -e PIP_CERT=/etc/korovod-test-pip-ca.crt)
fi
cat >"$TEST_DIR/check.py" <<'PY'
import sys, torch, korovod, korovod.torch as hvd
assert "/root/korovod-venv/" in korovod.__file__, korovod.__file__
hvd.init()
x = torch.arange(6, dtype=torch.float32)
assert torch.equal(hvd.allreduce(x, op=hvd.Sum, name="fresh"), x)
hvd.shutdown()
print(f"fresh-debian: korovod {korovod.__version__} from {korovod.__file__}, torch {torch.__version__}: allreduce ok")
PY
start=$SECONDS
set +e
out=$(docker run --rm --label "korovod.test=$RUN_ID" --network host "${cert_args[@]}" \
  -e DEBIAN_FRONTEND=noninteractive -v "$archives:/var/cache/apt/archives" \
  -v "$TEST_DIR/src:/src" -v "$TEST_DIR/check.py:/check.py:ro" -w /src "$base" \
  bash -euo pipefail -c "$block
python /check.py
command -v korovodrun" 2>&1)
rc=$?
set -e
((rc == 0)) || { tail -n 80 <<<"$out"; fail "the documented install failed on a fresh Debian 12 container (exit $rc)"; }
expect_text "$out" '^fresh-debian: korovod [0-9.]+ from /root/korovod-venv/.*allreduce ok$' "the installed package works"
expect_text "$out" '^/root/korovod-venv/bin/korovodrun$' "korovodrun installed in the venv"
pass "docs/pytorch.md's install block works on a fresh Debian 12 in $((SECONDS - start))s"
