#!/usr/bin/env python3
"""check_c_abi.py itself (ctest python.c_abi_signatures_selftest): each kind of wrong declaration,
fed to the checker as a mutated copy of _lib.py's table, is reported naming the function, the
argument and both types; a correct callback and the unmutated table pass; a header statement the
parser cannot read fails instead of being skipped. Needs python3 only."""

from __future__ import annotations

import argparse
import ctypes
import sys
from ctypes import CFUNCTYPE, POINTER, c_char_p, c_double, c_float, c_int, c_int64, c_void_p
from pathlib import Path
from typing import Callable, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_c_abi  # noqa: E402

HEADER = check_c_abi.parse_header(check_c_abi.HEADER.read_text())
USED = check_c_abi.uses(check_c_abi.PACKAGE, set(HEADER.functions), check_c_abi.LIB_PY)


def problems_after(mutate: Callable[[dict, object], None]) -> List[str]:
    module = check_c_abi.load_lib_module()
    mutate(module._SIGNATURES, module)
    problems, _ = check_c_abi.compare(HEADER, check_c_abi.declarations(module), USED)
    return problems


def op_args(sigs: dict) -> list:
    return list(sigs["korovod_enqueue"][0][2:])  # korovod_enqueue's after (rt, type)


def async_signature(sigs: dict, alloc: type) -> None:
    done = CFUNCTYPE(None, c_void_p, c_void_p)
    sigs["korovod_enqueue_async"] = ([c_void_p, c_int] + op_args(sigs) + [alloc, done, c_void_p], c_int)


class BadOptions(ctypes.Structure):
    """korovod_init_options with comm_ranks as int64 (the C field is const int32_t*)."""
    _fields_ = [("controller", ctypes.c_int32), ("mpi_comm", c_void_p), ("comm_ranks", POINTER(c_int64)),
                ("num_comm_ranks", ctypes.c_int32), ("set_ranks", POINTER(ctypes.c_int32)),
                ("set_sizes", POINTER(ctypes.c_int32)), ("num_sets", ctypes.c_int32)]


def set_arg(name: str, index: int, ctype: object) -> Callable[[dict, object], None]:
    def mutate(sigs: dict, _module: object) -> None:
        args, ret = sigs[name]
        args = list(args)
        args[index] = ctype
        sigs[name] = (args, ret)
    return mutate


def set_restype(name: str, ctype: object) -> Callable[[dict, object], None]:
    def mutate(sigs: dict, _module: object) -> None:
        sigs[name] = (sigs[name][0], ctype)
    return mutate


def drop_last_arg(name: str) -> Callable[[dict, object], None]:
    def mutate(sigs: dict, _module: object) -> None:
        sigs[name] = (list(sigs[name][0])[:-1], sigs[name][1])
    return mutate


good_alloc = CFUNCTYPE(c_int, c_void_p, c_int, POINTER(c_int64), POINTER(c_void_p))
bad_alloc = CFUNCTYPE(c_int, c_void_p, c_int64, POINTER(c_int64), POINTER(c_void_p))

# (what is wrong, mutation, substrings the report must contain)
CASES = [
    ("an int64_t handle declared c_int", set_arg("korovod_poll", 1, c_int),
     ["korovod_poll argument 1 (handle)", "int64_t", "c_int"]),
    ("a dropped argument", drop_last_arg("korovod_wait_for"),
     ["korovod_wait_for: 2 argument(s) declared, c_api.h has 3"]),
    ("an int64_t restype declared c_int", set_restype("korovod_enqueue", c_int),
     ["korovod_enqueue restype", "int64_t", "c_int"]),
    ("a pointer restype declared c_int (truncated)", set_restype("korovod_group_new", c_int),
     ["korovod_group_new restype", "korovod_group*", "c_int"]),
    ("double declared float", set_arg("korovod_wait_for", 2, c_float),
     ["korovod_wait_for argument 2 (timeout_seconds)", "double", "c_float"]),
    ("a void* restype declared c_char_p (returned as bytes)", set_restype("korovod_handle_take_dlpack", c_char_p),
     ["korovod_handle_take_dlpack restype", "void*", "c_char_p"]),
    ("a const char* restype declared c_void_p", set_restype("korovod_version", c_void_p),
     ["korovod_version restype", "const char*", "c_void_p"]),
    ("a runtime pointer declared c_double", set_arg("korovod_rank", 0, c_double),
     ["korovod_rank argument 0 (rt)", "korovod_runtime*", "c_double"]),
    ("uint64_t* declared POINTER(c_int64)", set_arg("korovod_elastic_published_round", 0, POINTER(c_int64)),
     ["korovod_elastic_published_round argument 0 (round)", "uint64_t*", "POINTER(c_long"]),
    ("a wrong field of a structure passed by pointer", set_arg("korovod_init_ex", 1, POINTER(BadOptions)),
     ["korovod_init_ex argument 1 (options)", "korovod_init_options field 2 (comm_ranks)", "const int32_t*"]),
    ("a callback whose ndim is int64", lambda sigs, _m: async_signature(sigs, bad_alloc),
     ["korovod_enqueue_async argument 17 (alloc)", "korovod_alloc_fn argument 1 (ndim)", "c_long"]),
    ("a function the header does not have", lambda sigs, _m: sigs.update(korovod_frobnicate=([], c_int)),
     ["korovod_frobnicate: declared in _lib.py, not in c_api.h"]),
    ("a called function left undeclared", lambda sigs, _m: sigs.pop("korovod_release"),
     ["korovod_release: called at korovod/", "without a declaration"]),
]


def main() -> int:
    argparse.ArgumentParser(description=__doc__).parse_args()
    failures = []
    baseline = problems_after(lambda sigs, _m: None)
    if baseline:
        failures.append(f"the unmutated table must pass, got {baseline}")
    correct_callback = problems_after(lambda sigs, _m: async_signature(sigs, good_alloc))
    if correct_callback:
        failures.append(f"a correct CFUNCTYPE callback must pass, got {correct_callback}")
    for what, mutate, expected in CASES:
        report = problems_after(mutate)
        hits = [p for p in report if all(e in p for e in expected)]
        print(f"{what}:\n  " + ("\n  ".join(report) or "(nothing reported)"))
        if not hits:
            failures.append(f"{what}: no report line contains {expected}")
    try:
        check_c_abi.parse_header(check_c_abi.HEADER.read_text() + "\nstruct loose { int x; };\n")
        failures.append("a statement the parser does not read must fail the parse")
    except check_c_abi.HeaderError as e:
        print(f"unreadable statement: {e}")
    for failure in failures:
        print(f"selftest FAILED: {failure}")
    print("c-abi selftest: " + ("FAILED" if failures else f"passed ({len(CASES)} mutations reported)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
