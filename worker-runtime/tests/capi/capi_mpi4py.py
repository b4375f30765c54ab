#!/usr/bin/python3
"""One rank of rt_capi_mpi4py: the C ABI (over ctypes, as the Python package calls it) on an MPI
communicator that mpi4py made and initialised MPI for (Horovod's init(comm=...)).

Checks: korovod runs on the communicator passed as MPI._addressof(comm) (ranks in its order, not
the world's); korovod never finalizes MPI it did not initialise, so mpi4py keeps working after
korovod shut down, and korovod can start again on it. Prints CAPI-MPI4PY-OK.

usage: capi_mpi4py.py <directory of libkorovod.so>
"""
import ctypes
import sys

try:
    from mpi4py import MPI
except ImportError as e:  # the test needs mpi4py; say why it did not run
    print(f"skipped: mpi4py is not importable here ({e})")
    raise SystemExit(77)


class InitOptions(ctypes.Structure):
    _fields_ = [("controller", ctypes.c_int32), ("mpi_comm", ctypes.c_void_p),
                ("comm_ranks", ctypes.POINTER(ctypes.c_int32)), ("num_comm_ranks", ctypes.c_int32),
                ("set_ranks", ctypes.POINTER(ctypes.c_int32)), ("set_sizes", ctypes.POINTER(ctypes.c_int32)),
                ("num_sets", ctypes.c_int32)]


def load(libdir: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(f"{libdir}/libkorovod.so")
    lib.korovod_init_ex.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(InitOptions),
                                    ctypes.c_char_p, ctypes.c_int]
    lib.korovod_enqueue.restype = ctypes.c_int64
    lib.korovod_enqueue.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                    ctypes.c_int, ctypes.c_double, ctypes.c_double, ctypes.c_int, ctypes.c_void_p,
                                    ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.korovod_wait.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.korovod_release.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.korovod_handle_error.restype = ctypes.c_char_p
    lib.korovod_handle_error.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.korovod_transport_name.restype = ctypes.c_char_p
    for name in ("korovod_rank", "korovod_size", "korovod_shutdown", "korovod_mpi_enabled"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.korovod_transport_name.argtypes = [ctypes.c_void_p]
    lib.korovod_destroy.argtypes = [ctypes.c_void_p]
    return lib


def start(lib: ctypes.CDLL, comm: MPI.Comm) -> ctypes.c_void_p:
    rt = ctypes.c_void_p()
    err = ctypes.create_string_buffer(1024)
    options = InitOptions(controller=0, mpi_comm=MPI._addressof(comm))
    rc = lib.korovod_init_ex(ctypes.byref(rt), ctypes.byref(options), err, len(err))
    if rc != 0:
        raise SystemExit(f"korovod_init_ex: {rc} {err.value.decode()}")
    return rt


def allreduce_sum(lib: ctypes.CDLL, rt: ctypes.c_void_p, value: float, n: int = 4) -> list:
    data = (ctypes.c_float * n)(*([value] * n))
    shape = (ctypes.c_int64 * 1)(n)
    h = lib.korovod_enqueue(rt, 0, b"mpi4py.sum", data, None, 7, 1, shape, -1, 1, 1.0, 1.0, 0, None, 0, 0, None)
    if h <= 0 or lib.korovod_wait(rt, h) != 0:
        raise SystemExit(f"allreduce failed: {h} {lib.korovod_handle_error(rt, h) if h > 0 else ''}")
    lib.korovod_release(rt, h)
    return list(data)


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if len(sys.argv) == 2 else 2)
    lib = load(sys.argv[1])
    world = MPI.COMM_WORLD
    size = world.Get_size()
    # Ranks in reverse: korovod must follow the communicator, not MPI_COMM_WORLD.
    reversed_comm = world.Split(0, size - 1 - world.Get_rank())
    rt = start(lib, reversed_comm)
    checks = [
        (lib.korovod_transport_name(rt) == b"MPI" and lib.korovod_mpi_enabled(rt) == 1, "transport MPI"),
        (lib.korovod_rank(rt) == reversed_comm.Get_rank() == size - 1 - world.Get_rank(), "rank in comm order"),
        (lib.korovod_size(rt) == size, "size"),
        (allreduce_sum(lib, rt, float(lib.korovod_rank(rt) + 1)) == [size * (size + 1) / 2] * 4, "allreduce"),
    ]
    if lib.korovod_shutdown(rt) != 0:
        raise SystemExit("korovod_shutdown failed")
    lib.korovod_destroy(rt)
    checks.append((not MPI.Is_finalized() and world.allreduce(1) == size, "mpi4py usable after korovod's shutdown"))
    rt = start(lib, world)  # and korovod again, on the world this time
    checks.append((allreduce_sum(lib, rt, 2.0) == [2.0 * size] * 4, "allreduce after init again"))
    lib.korovod_shutdown(rt)
    lib.korovod_destroy(rt)
    checks.append((not MPI.Is_finalized(), "MPI still not finalized"))
    failed = [what for ok, what in checks if not ok]
    if failed:
        raise SystemExit(f"CAPI-MPI4PY-FAIL rank {world.Get_rank()}: {', '.join(failed)}")
    reversed_comm.Free()
    print(f"CAPI-MPI4PY-OK rank {world.Get_rank()} of {size}")


if __name__ == "__main__":
    main()
