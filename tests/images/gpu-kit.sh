#!/usr/bin/env bash
# The GPU kit (tests/gpu/make-kit, tests/gpu/run-kit) on a machine like a lent GPU machine, less
# the GPU: a container of korovod-base/debian:bookworm with only Python 3, Debian's CPU torch and
# a torch-style NCCL wheel folder (site-packages/nvidia/nccl/lib) added; no MPI, no compiler, no
# TensorFlow, no NVIDIA driver, no network. Given a copy of the tree as a clone has it plus the
# kit, run-kit must load everything (libraries: PASS), skip every GPU part naming the real reason
# (dlopen of libcuda.so.1 fails; torch is a CPU build), and finish well within its 8 minutes.
# Then the failure paths: NCCL older than required, a missing library named with the loader's
# text, a fallback library switched on; and the kit's binaries on the bare base (no Python).
#   gpu-kit.sh [--help]          env: KOROVOD_SOURCE_DIR (set by ctest), KOROVOD_CACHE
case ${1:-} in
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
src=$KOROVOD_SOURCE_DIR
cache=${KOROVOD_CACHE:-$HOME/.cache/korovod}
base=korovod-base/debian:bookworm
require_image "$base"
begin=$SECONDS

# --- the tree as it reaches a GPU machine: tracked and untracked-not-ignored files, and the kit
tree=$TEST_DIR/tree
mkdir -p "$tree"
(cd "$src" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$src" && xargs -0 cp --parents -t "$tree" 2>/dev/null || true)
[[ -x $tree/tests/gpu/run-kit ]] || fail "could not copy the checkout"
kit_out=$("$src/tests/gpu/make-kit" --out "$tree/gpu-kit" 2>"$TEST_DIR/make-kit.log") \
  || { cat "$TEST_DIR/make-kit.log"; fail "tests/gpu/make-kit failed"; }
pass "make-kit: $kit_out ($((SECONDS - begin))s so far)"

# --- torch's NCCL wheel folder: the one of the project's CUDA torch venv (NCCL for CUDA 13, as a
# GPU machine's torch brings), else the wheel scripts/setup installs for the build.
nccl=""
for d in "$cache"/venv-torch*/lib/python3*/site-packages/nvidia/nccl "$cache"/nvidia-nccl*-cuda*/nvidia/nccl; do
  [[ -f $d/lib/libnccl.so.2 ]] && { nccl=$d; break; }
done
[[ -n $nccl ]] || fail "no nvidia/nccl/lib/libnccl.so.2 under $cache (scripts/setup --for-tests installs one)"
nccl_info=$(ls -d "$nccl"/../../nvidia_nccl_cu*.dist-info 2>/dev/null | head -1 || true)
nccl_name=$(basename "${nccl_info:-unknown-nccl-wheel}")
echo "torch-style NCCL for the image: $nccl ($nccl_name)"

# --- the image: the base plus python3, python3-torch (CPU), python3-numpy and the NCCL folder,
# installed with no network from the .debs kept in the apt archive cache (an indexed local
# repository), falling back to Debian's mirror only for what the cache lacks. Made once per
# recipe and kept.
packages="python3 python3-torch python3-numpy"
archives=$cache/images/apt-archives-bookworm
mkdir -p "$archives/partial"
recipe="$(docker image inspect --format '{{.Id}}' "$base") $packages $nccl_name $(stat -c %s "$nccl/lib/libnccl.so.2") v1"
key=$(sha256sum <<<"$recipe" | cut -c1-12)
image=korovod-test/gpu-kit-python:$key
if ! docker image inspect "$image" >/dev/null 2>&1; then
  start=$SECONDS
  repo=$TEST_DIR/repo
  mkdir -p "$repo/debs"
  (cd "$archives" && dpkg-scanpackages -m . /dev/null 2>/dev/null) | sed 's|^Filename: \./|Filename: debs/|' >"$repo/Packages"
  echo "deb [trusted=yes] file:/repo ./" >"$repo/sources.list"
  install='mkdir -p /usr/local/lib/python3.11/dist-packages/nvidia/nccl
cp -r /nccl/lib /usr/local/lib/python3.11/dist-packages/nvidia/nccl/
apt-get clean; rm -rf /var/lib/apt/lists/*'
  offline="apt-get -q -o Dir::Etc::SourceList=/repo/sources.list -o Dir::Etc::SourceParts=/dev/null update >/dev/null
apt-get -q -y -o Dir::Etc::SourceList=/repo/sources.list -o Dir::Etc::SourceParts=/dev/null install --no-install-recommends $packages >/dev/null"
  name=$RUN_ID-make-image
  if docker run --name "$name" --label "korovod.test=$RUN_ID" --network none -e DEBIAN_FRONTEND=noninteractive \
      -v "$repo:/repo:ro" -v "$archives:/repo/debs:ro" -v "$nccl:/nccl:ro" "$base" \
      bash -ec "$offline
$install" >"$TEST_DIR/image.log" 2>&1; then
    echo "image $image: from the apt archive cache, no network ($((SECONDS - start))s)"
  else
    tail -n 5 "$TEST_DIR/image.log"
    echo "the cache lacks some of them: again with Debian's mirror (the .debs it fetches are kept in $archives)"
    docker rm -f "$name" >/dev/null
    docker run --name "$name" --label "korovod.test=$RUN_ID" --network host -e DEBIAN_FRONTEND=noninteractive \
      -v "$archives:/var/cache/apt/archives" -v "$nccl:/nccl:ro" "$base" \
      bash -ec "apt-get -q update >/dev/null
apt-get -q -y install --no-install-recommends $packages >/dev/null
$install" >"$TEST_DIR/image.log" 2>&1 \
      || { tail -n 30 "$TEST_DIR/image.log"; fail "could not install $packages into $base"; }
    echo "image $image: with Debian's mirror ($((SECONDS - start))s)"
  fi
  docker commit --change 'CMD ["bash"]' "$name" "$image" >/dev/null
  docker rm "$name" >/dev/null
  # Older recipes' images go: one is kept.
  for old in $(docker image ls --format '{{.Repository}}:{{.Tag}}' korovod-test/gpu-kit-python); do
    [[ $old == "$image" ]] || docker image rm "$old" >/dev/null 2>&1 || true
  done
fi

# What the image must not have: MPI, a compiler, TensorFlow, an NVIDIA driver.
has=$(docker run --rm --label "korovod.test=$RUN_ID" --network none "$image" bash -c 'for c in mpirun mpiexec orterun cc gcc c++ g++ clang nvcc nvidia-smi; do command -v $c; done
ls /usr/lib/x86_64-linux-gnu /usr/local/lib 2>/dev/null | grep -E "^lib(mpi|cuda)\.so" || true
python3 -c "import tensorflow" 2>/dev/null && echo tensorflow
python3 -c "import torch; print(\"torch\", torch.__version__, torch.version.cuda)"' || true)
expect_text "$has" '^torch [0-9.a-z+]+ None$' "the image has a CPU torch"
[[ $(grep -vc '^torch ' <<<"$has") == 0 ]] || { echo "$has"; fail "the image has MPI, a compiler, TensorFlow or a driver"; }
pass "the image has python3 and a CPU torch, and no MPI, compiler, TensorFlow or NVIDIA driver"

# run_kit NAME ARGS...: run-kit in a container of the image, no network; output in $out, exit in $rc.
run_kit() {
  local what=$1
  shift
  local t0=$SECONDS
  set +e
  out=$(docker run --rm --label "korovod.test=$RUN_ID" --network none -v "$tree:/src" -w /src "$image" \
    tests/gpu/run-kit --out "/tmp/run-kit-$what" "$@" 2>&1)
  rc=$?
  set -e
  took=$((SECONDS - t0))
  printf '%s\n' "$out" | sed "s/^/  [$what] /"
}

# --- the whole kit, as on a GPU machine
run_kit all
((rc == 0)) || fail "run-kit exited $rc"
expect_text "$out" '^libraries: PASS \([0-9]+s\): python 3\.11\.[0-9]+ /usr/bin/python3 \(torch .*\); NCCL [0-9.]+ from /usr/local/lib/python3\.11/dist-packages/nvidia/nccl/lib/libnccl\.so\.2 \(kit.s headers [0-9.]+; required >= [0-9.]+\); korovod\.torch imports after torch; rt_gpu_test starts 2 ranks over korovodrun.s TCP rendezvous \(no MPI\); pytest from the kit$' \
  "everything loads, NCCL from the wheel folder, 2 ranks over TCP, the kit's pytest"
for part in cpp-nccl cpp-staging; do
  expect_text "$out" "^$part: SKIP: no GPU: no NVIDIA driver: dlopen\\(libcuda\\.so\\.1\\): libcuda\\.so\\.1: cannot open shared object file: No such file or directory$" \
    "$part skipped for the real reason"
done
for part in torch-nccl torch-staging; do
  expect_text "$out" "^$part: SKIP: no GPU: no NVIDIA driver: dlopen\\(libcuda\\.so\\.1\\): .*; /usr/bin/python3: torch [^ ]+ is a CPU build \\(torch\\.version\\.cuda is None\\)$" \
    "$part skipped for the real reason"
done
expect_text "$out" "^run-kit: the kit's CUDA runtime: 0 GPU\\(s\\) \\(cudaGetDeviceCount: .*\\)$" "the kit's CUDA runtime loads and answers"
[[ $(tail -n 1 <<<"$out") == "run-kit: 1 passed, 0 failed, 4 skipped" ]] || fail "run-kit's last line: $(tail -n 1 <<<"$out")"
missing=$(grep -E "cannot open shared object|not found" <<<"$out" | grep -v "libcuda\.so\.1" || true)
[[ -z $missing ]] || fail "a library is missing: $missing"
((took < 120)) || fail "run-kit took ${took}s with nothing to run (its budget is 480s)"
pass "run-kit: every library loads, the GPU parts skip naming libcuda.so.1 and the CPU torch (${took}s)"

run_kit require-gpu --require-gpu
((rc == 1)) && grep -q "^cpp-nccl: FAIL: skipped, and --require-gpu was given" <<<"$out" \
  || fail "--require-gpu without a GPU: exit $rc"
pass "--require-gpu fails where no GPU is"

# --- failure paths of the libraries part
run_kit old-nccl --part libraries --require-nccl 9.0.0
((rc == 1)) || fail "--require-nccl 9.0.0: exit $rc"
expect_text "$out" "^libraries: FAIL \\([0-9]+s\\): torch's NCCL is too old: /usr/local/lib/python3\\.11/dist-packages/nvidia/nccl/lib/libnccl\\.so\\.2 is NCCL [0-9.]+, older than --require-nccl 9\\.0\\.0" \
  "an NCCL older than required is named"
pass "an NCCL older than required fails the libraries part, naming both versions"

# libcudart.so.12 moved to a fallback folder: run-kit finds the loader's complaint and uses it.
cp -r "$tree/gpu-kit" "$tree/kit-moved"
mkdir -p "$tree/kit-moved/lib/fallback/cudart"
mv "$tree/kit-moved/lib/libcudart.so.12" "$tree/kit-moved/lib/fallback/cudart/"
run_kit fallback --kit /src/kit-moved --part libraries
((rc == 0)) || fail "a kit with libcudart.so.12 as a fallback: exit $rc"
expect_text "$out" "^libraries: PASS .*; the kit's libcudart\\.so\\.12 \\(the machine's: .*libcudart\\.so\\.12: cannot open shared object file: No such file or directory\\)$" \
  "the fallback is used and the loader's reason given"
pass "a library the machine lacks is taken from lib/fallback, saying why"

# ... and gone altogether: the libraries part fails with the loader's text, the GPU parts skip.
rm -r "$tree/kit-moved/lib/fallback/cudart"
run_kit missing --kit /src/kit-moved
((rc == 1)) || fail "a kit without libcudart.so.12: exit $rc"
expect_text "$out" "^libraries: FAIL \\([0-9]+s\\): rt_gpu_test does not start: .*libcudart\\.so\\.12: cannot open shared object file: No such file or directory$" \
  "the missing library named with the loader's text"
expect_text "$out" "^cpp-nccl: SKIP: the libraries part failed: rt_gpu_test does not start: .*libcudart\\.so\\.12: cannot open shared object file" \
  "the GPU parts say the libraries part failed"
pass "a missing library fails the libraries part with the loader's text; the GPU parts skip saying so"

# --- the binaries on the bare base (Debian minbase: no Python, no libfmt, maybe no libcrypto),
# with the kit's libraries and fallbacks and the NCCL folder: nothing else is needed.
bare=$(docker run --rm --label "korovod.test=$RUN_ID" --network none -v "$tree/gpu-kit:/kit:ro" -v "$nccl:/nccl:ro" \
  -e LD_LIBRARY_PATH=/kit/python/korovod/lib:/kit/lib:/nccl/lib:/kit/lib/fallback/libstdc++:/kit/lib/fallback/libcrypto \
  "$base" bash -c '/kit/bin/korovodrun --help >/dev/null && echo korovodrun-ok; /kit/bin/rt_gpu_test --count-gpus 2>&1' 2>&1 || true)
expect_text "$bare" '^korovodrun-ok$' "korovodrun starts on the bare base"
expect_text "$bare" '^0$' "rt_gpu_test --count-gpus runs on the bare base"
pass "the kit's binaries need nothing of the bare Debian base beyond glibc"

pass "the GPU kit where no GPU is, in $((SECONDS - begin))s"
