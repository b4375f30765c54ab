#!/bin/bash
# rt_capi_no_mpi: libkorovod.so loads and runs where no MPI is installed.
#   no_mpi_test.sh <dir of libkorovod.so and libkorovod_mpi.so> <rt_capi_check>
# 1. libkorovod.so has no libmpi (nor Open MPI's libopen-*) among its DT_NEEDED entries.
# 2. In a mount namespace where Open MPI is hidden (an empty tmpfs over its directory, /dev/null
#    over every libmpi* / libopen-* file, so loading them fails), with LD_LIBRARY_PATH naming only
#    a directory holding a copy of libkorovod.so: a world of one rank (no launcher) and a 2-rank
#    TCP world (two processes meeting at the rendezvous store) run every rt_capi_check check;
#    a process that looks started by mpirun fails init saying MPI could not be loaded (with and
#    without libkorovod_mpi.so next to libkorovod.so); and Python's ctypes loads the copy and
#    reduces in a one-rank world.
# Exits 77 (skipped) where mount namespaces cannot be made (not root, no CAP_SYS_ADMIN).
set -u
if [ "${1:-}" = --help ] || [ $# -ne 2 ]; then
  sed -n '2,12p' "$0"; exit $([ "${1:-}" = --help ] && echo 0 || echo 2)
fi
libdir=$(realpath "$1")
check=$(realpath "$2")

needed=$(readelf -d "$libdir/libkorovod.so" | grep NEEDED)
if echo "$needed" | grep -Eq 'libmpi|libopen-(rte|pal)'; then
  echo "FAIL: libkorovod.so links MPI:"; echo "$needed"; exit 1
fi
echo "ok: libkorovod.so's DT_NEEDED has no MPI ($(echo "$needed" | grep -o '\[.*\]' | tr '\n' ' '))"

if ! unshare -m true 2>/dev/null; then
  echo "skipped: cannot make a mount namespace here (unshare -m needs root / CAP_SYS_ADMIN)"; exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/alone" "$work/with_plugin"
cp "$libdir/libkorovod.so" "$work/alone/"
cp "$libdir/libkorovod.so" "$libdir/libkorovod_mpi.so" "$work/with_plugin/"

export work check needed
unshare -m --propagation private bash -c '
set -u
fail() { echo "FAIL: $*"; exit 1; }
multiarch=/usr/lib/x86_64-linux-gnu
[ -d $multiarch/openmpi ] && mount -t tmpfs none $multiarch/openmpi
for f in $multiarch/libmpi*.so* $multiarch/libopen-rte.so* $multiarch/libopen-pal.so*; do
  [ -f "$f" ] && [ ! -L "$f" ] && mount --bind /dev/null "$f"
done
if /usr/bin/python3 -c "import ctypes; ctypes.CDLL(\"libmpi.so.40\")" 2>/dev/null; then
  fail "libmpi.so.40 still loads inside the namespace"
fi
echo "ok: Open MPI hidden (libmpi.so.40 does not load)"
export LD_LIBRARY_PATH=$work/alone KOROVOD_LOG_LEVEL=error
ldd "$check" | grep -q "libkorovod.so => $work/alone/libkorovod.so" || fail "rt_capi_check does not load the copy: $(ldd "$check" | grep korovod)"

out=$(timeout 120 "$check" --expect-transport TCP 2>&1) || fail "one-rank world: $out"
echo "$out" | grep -q "CAPI-CHECK-OK rank 0 of 1" || fail "one-rank world: $out"
echo "ok: one-rank world without a launcher"

port=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])")
for r in 0 1; do
  KOROVOD_RENDEZVOUS_ADDR=127.0.0.1 KOROVOD_RENDEZVOUS_PORT=$port KOROVOD_RANK=$r KOROVOD_SIZE=2 \
    KOROVOD_START_TIMEOUT=20 timeout 120 "$check" --expect-transport TCP >"$work/tcp$r.log" 2>&1 &
done
wait
[ "$(cat "$work"/tcp*.log | grep -c "CAPI-CHECK-OK")" = 2 ] || fail "2-rank TCP world: $(cat "$work"/tcp*.log)"
echo "ok: 2-rank TCP world"

for dir in alone with_plugin; do
  out=$(LD_LIBRARY_PATH=$work/$dir OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 timeout 60 "$check" \
          --expect-init-error "started by mpirun (OMPI_COMM_WORLD_SIZE is set), but MPI could not be loaded" 2>&1) ||
    fail "started by mpirun, $dir: $out"
  echo "ok: under mpirun'"'"'s environment, $dir: ${out#CAPI-CHECK-OK }"
done
echo "$out" | grep -q "libmpi" || fail "the error should name the library that did not load: $out"

# CPython is not built with AddressSanitizer, so it cannot load a sanitized libkorovod.so (the
# ASan runtime must come first); scripts/sanitize asan leaves Python out for the same reason.
if echo "$needed" | grep -q libasan; then
  echo "skipped: Python ctypes (this libkorovod.so is built with AddressSanitizer, CPython is not)"
else
LD_LIBRARY_PATH=$work/alone /usr/bin/python3 - <<PY || fail "ctypes"
import ctypes
lib = ctypes.CDLL("libkorovod.so")
assert lib.korovod_mpi_built() == 0, "no libkorovod_mpi.so next to this copy"
why = ctypes.create_string_buffer(512)
assert lib.korovod_mpi_available(why, 512) == 0 and b"libkorovod_mpi.so" in why.value, why.value
rt, err = ctypes.c_void_p(), ctypes.create_string_buffer(512)
assert lib.korovod_init_ex(ctypes.byref(rt), None, err, 512) == 0, err.value
lib.korovod_size.argtypes = lib.korovod_destroy.argtypes = [ctypes.c_void_p]
lib.korovod_enqueue.restype = ctypes.c_int64
data, shape = (ctypes.c_float * 3)(1, 2, 3), (ctypes.c_int64 * 1)(3)
h = lib.korovod_enqueue(rt, 0, b"py", data, None, 7, 1, shape, -1, 1, ctypes.c_double(2.0), ctypes.c_double(1.0),
                        0, None, 0, 0, None)
assert h > 0 and lib.korovod_wait(rt, ctypes.c_int64(h)) == 0 and list(data) == [2, 4, 6], list(data)
assert lib.korovod_size(rt) == 1
lib.korovod_destroy(rt)
print("ok: Python ctypes, one-rank world, mpi_built 0, mpi_available 0:", why.value.decode()[:80])
PY
fi
'
rc=$?
[ $rc -eq 0 ] && echo "rt_capi_no_mpi passed"
exit $rc
