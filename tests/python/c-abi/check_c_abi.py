#!/usr/bin/env python3
"""Checks the Python package's ctypes declarations against the C ABI's header (ctest
python.c_abi_signatures).

worker-runtime/python/korovod/common/_lib.py declares libkorovod's signatures by hand; a wrong one
is not an error ctypes can see: an int64_t handle declared c_int is truncated, a pointer returned
as c_int loses its upper half, a void* returned as c_char_p comes back as bytes. This parses every
prototype in worker-runtime/include/korovod/c_api.h, runs _lib._declare on a recording stand-in
for the library (so what is checked is what the loader assigns), and compares function by
function: argument count, each argument's ctypes type, the restype, the fields of structures
passed by pointer and the signatures of CFUNCTYPE callbacks. It also reads the package's Python
code for calls of header functions (`lib.korovod_x`, `getattr(lib, "korovod_x")`) that _lib.py
does not declare. Header functions Python neither declares nor calls are listed, not failed.

Rules: scalars must agree in kind (signed, unsigned, floating) and size; char* is c_char_p (or
POINTER(c_char)); void* is c_void_p; any other pointer is POINTER(<its pointee>) or c_void_p (an
address, _lib.py's convention for opaque handles and caller-kept arrays); a function pointer is a
CFUNCTYPE of the typedef's signature or c_void_p; void returns None. Needs python3 only.
"""

from __future__ import annotations

import argparse
import ast
import ctypes
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Set, Tuple

REPO = Path(__file__).resolve().parents[3]
HEADER = REPO / "worker-runtime/include/korovod/c_api.h"
PACKAGE = REPO / "worker-runtime/python/korovod"
LIB_PY = PACKAGE / "common/_lib.py"

# C scalar types: (kind, size in bytes); kind i signed, u unsigned, f floating, c char.
SCALARS: Dict[str, Tuple[str, int]] = {
    "int": ("i", ctypes.sizeof(ctypes.c_int)), "unsigned": ("u", ctypes.sizeof(ctypes.c_uint)),
    "unsigned int": ("u", ctypes.sizeof(ctypes.c_uint)), "long": ("i", ctypes.sizeof(ctypes.c_long)),
    "int8_t": ("i", 1), "int16_t": ("i", 2), "int32_t": ("i", 4), "int64_t": ("i", 8),
    "uint8_t": ("u", 1), "uint16_t": ("u", 2), "uint32_t": ("u", 4), "uint64_t": ("u", 8),
    "size_t": ("u", ctypes.sizeof(ctypes.c_size_t)), "double": ("f", 8), "float": ("f", 4),
    "char": ("c", 1),
}
# ctypes' _type_ codes of simple types -> kind (size from ctypes.sizeof).
CTYPES_KINDS = {"b": "i", "h": "i", "i": "i", "l": "i", "q": "i", "B": "u", "H": "u", "I": "u",
                "L": "u", "Q": "u", "d": "f", "f": "f", "c": "c"}
KIND_NAMES = {"i": "signed", "u": "unsigned", "f": "floating", "c": "char"}


@dataclass(frozen=True)
class CType:
    base: str   # "int", "korovod_runtime", "korovod_alloc_fn", ...
    depth: int  # pointer levels
    text: str   # as written, for messages

    def pointee(self) -> "CType":
        return CType(self.base, self.depth - 1, f"{self.base}{'*' * (self.depth - 1)}")


@dataclass(frozen=True)
class Param:
    name: str
    type: CType


@dataclass
class Header:
    functions: Dict[str, Tuple[List[Param], CType]] = field(default_factory=dict)
    opaque: Set[str] = field(default_factory=set)
    structs: Dict[str, List[Param]] = field(default_factory=dict)
    callbacks: Dict[str, Tuple[List[Param], CType]] = field(default_factory=dict)


class HeaderError(ValueError):
    """A statement this parser does not understand: fail rather than skip it."""


def _parse_decl(text: str, named: bool) -> Param:
    """'const int64_t* shape' -> Param('shape', CType('int64_t', 1, ...))."""
    tokens = text.replace("*", " * ").split()
    words = [t for t in tokens if t not in ("*", "const", "struct")]
    depth = tokens.count("*")
    if named:
        if len(words) < 2:
            raise HeaderError(f"parameter without a name: {text!r}")
        name, words = words[-1], words[:-1]
    else:
        name = ""
    if not words or not all(re.fullmatch(r"[A-Za-z_]\w*", w) for w in words):
        raise HeaderError(f"cannot read the type of {text!r}")
    return Param(name, CType(" ".join(words), depth, " ".join(text.split()[:-1] if named else text.split())))


def _parse_params(text: str) -> List[Param]:
    text = text.strip()
    if text in ("", "void"):
        return []
    return [_parse_decl(part, named=True) for part in text.split(",")]


def _statements(source: str) -> List[str]:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    source = re.sub(r"//[^\n]*", " ", source)
    source = re.sub(r"#ifdef __cplusplus.*?#endif", " ", source, flags=re.S)
    source = re.sub(r"^\s*#[^\n]*", " ", source, flags=re.M)
    statements, depth, start = [], 0, 0
    for i, ch in enumerate(source):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            statements.append(" ".join(source[start:i].split()))
            start = i + 1
    if source[start:].strip():
        raise HeaderError(f"text after the last ';': {source[start:].strip()[:80]!r}")
    return statements


IDENT = r"[A-Za-z_]\w*"
RE_OPAQUE = re.compile(rf"typedef struct ({IDENT}) ({IDENT})")
RE_STRUCT = re.compile(rf"typedef struct (?:{IDENT} )?\{{(.*)\}} ({IDENT})")
RE_CALLBACK = re.compile(rf"typedef (.+?)\(\s*\*\s*({IDENT})\s*\)\s*\((.*)\)")
RE_FUNCTION = re.compile(rf"(.+?)\b({IDENT})\s*\((.*)\)")


def parse_header(source: str) -> Header:
    header = Header()
    for statement in _statements(source):
        if not statement or statement.startswith("enum"):
            continue
        if m := RE_OPAQUE.fullmatch(statement):
            header.opaque.add(m.group(2))
        elif m := RE_STRUCT.fullmatch(statement):
            fields = [f.strip() for f in m.group(1).split(";") if f.strip()]
            header.structs[m.group(2)] = [_parse_decl(f, named=True) for f in fields]
        elif m := RE_CALLBACK.fullmatch(statement):
            header.callbacks[m.group(2)] = (_parse_params(m.group(3)), _parse_decl(m.group(1), False).type)
        elif (m := RE_FUNCTION.fullmatch(statement)) and not statement.startswith("typedef"):
            header.functions[m.group(2)] = (_parse_params(m.group(3)), _parse_decl(m.group(1), False).type)
        else:
            raise HeaderError(f"not a typedef, enum or prototype this checker reads: {statement[:100]!r}")
    for params, ret in list(header.functions.values()) + list(header.callbacks.values()):
        for ctype in [p.type for p in params] + [ret]:
            known = ctype.base in SCALARS or ctype.base == "void" or ctype.base in header.opaque \
                or ctype.base in header.structs or ctype.base in header.callbacks
            if not known:
                raise HeaderError(f"unknown type {ctype.base!r} (add it to SCALARS or typedef it)")
    return header


# ---- ctypes side ----

def describe(py: Any) -> str:
    if py is None:
        return "None"
    if isinstance(py, type) and issubclass(py, ctypes._Pointer):
        return f"POINTER({describe(py._type_)})"
    if isinstance(py, type) and issubclass(py, ctypes._CFuncPtr):
        args = ", ".join(describe(a) for a in py._argtypes_)
        return f"CFUNCTYPE({describe(py._restype_)}, {args})"
    name = getattr(py, "__name__", repr(py))
    code = getattr(py, "_type_", None)
    if isinstance(code, str) and code in CTYPES_KINDS and CTYPES_KINDS[code] != "c":
        return f"{name} ({KIND_NAMES[CTYPES_KINDS[code]]}, {ctypes.sizeof(py)} bytes)"
    return name


def _simple(py: Any, code: str) -> bool:
    return isinstance(py, type) and issubclass(py, ctypes._SimpleCData) and py._type_ == code


def mismatch(c: CType, py: Any, header: Header) -> Optional[str]:
    """None when ctypes type `py` passes or returns C type `c` correctly, else why not."""
    if c.depth == 0:
        if c.base == "void":
            return None if py is None else "void is None"
        if c.base in SCALARS:
            kind, size = SCALARS[c.base]
            code = getattr(py, "_type_", None)
            ok = isinstance(py, type) and issubclass(py, ctypes._SimpleCData) and isinstance(code, str) \
                and CTYPES_KINDS.get(code) == kind and ctypes.sizeof(py) == size
            return None if ok else f"{c.base} is {KIND_NAMES[kind]}, {size} bytes"
        if c.base in header.callbacks:
            return _callback_mismatch(c.base, py, header)
        if c.base in header.structs:
            return _struct_mismatch(c.base, py, header)
        return f"{c.base} cannot pass by value"
    if c.depth == 1 and c.base == "char":
        ok = _simple(py, "z") or (isinstance(py, type) and issubclass(py, ctypes._Pointer) and _simple(py._type_, "c"))
        return None if ok else "char* is text: c_char_p"
    if c.depth == 1 and c.base == "void":
        return None if _simple(py, "P") else "void* is c_void_p"
    if _simple(py, "P"):
        return None  # an address: opaque handles, arrays the caller keeps alive
    if isinstance(py, type) and issubclass(py, ctypes._Pointer):
        pointee = c.pointee()
        if pointee.depth == 0 and pointee.base in header.opaque:
            return f"{pointee.base} is opaque: its pointer is c_void_p"
        why = mismatch(pointee, py._type_, header)
        return None if why is None else f"pointee: {why}"
    return f"{c.text} is POINTER({c.pointee().text}) or c_void_p"


def _struct_mismatch(name: str, py: Any, header: Header) -> Optional[str]:
    if not (isinstance(py, type) and issubclass(py, ctypes.Structure)):
        return f"struct {name} is a ctypes.Structure"
    c_fields, py_fields = header.structs[name], list(getattr(py, "_fields_", []))
    if len(c_fields) != len(py_fields):
        return f"struct {name} has {len(c_fields)} fields, {py.__name__} {len(py_fields)}"
    for i, (cf, pf) in enumerate(zip(c_fields, py_fields)):
        why = mismatch(cf.type, pf[1], header)
        if pf[0] != cf.name or why:
            return (f"{name} field {i} ({cf.name}): header {cf.type.text}, {py.__name__} has "
                    f"{pf[0]}: {describe(pf[1])}" + (f" ({why})" if why else ""))
    return None


def _callback_mismatch(name: str, py: Any, header: Header) -> Optional[str]:
    if _simple(py, "P"):
        return None  # a C function's address
    if not (isinstance(py, type) and issubclass(py, ctypes._CFuncPtr)):
        return f"{name} is a CFUNCTYPE or c_void_p"
    if py._flags_ & ctypes._FUNCFLAG_PYTHONAPI:
        return f"{name} is called without the GIL held: CFUNCTYPE, not PYFUNCTYPE"
    params, ret = header.callbacks[name]
    if len(params) != len(py._argtypes_):
        return f"{name} takes {len(params)} arguments, the CFUNCTYPE {len(py._argtypes_)}"
    for i, (p, a) in enumerate(zip(params, py._argtypes_)):
        why = mismatch(p.type, a, header)
        if why:
            return f"{name} argument {i} ({p.name}): header {p.type.text}, CFUNCTYPE {describe(a)} ({why})"
    why = mismatch(ret, py._restype_, header)
    return None if why is None else f"{name} returns {ret.text}, CFUNCTYPE {describe(py._restype_)} ({why})"


# ---- what _lib.py declares ----

class _Recorder:
    """Stands in for one ctypes function: records the argtypes and restype assigned to it."""

    def __init__(self, name: str):
        self.name = name
        self.argtypes: Optional[list] = None
        self.restype: Any = ctypes.c_int  # ctypes' default
        self.restype_set = False

    def __setattr__(self, key: str, value: Any) -> None:
        if key == "restype":
            object.__setattr__(self, "restype_set", True)
        object.__setattr__(self, key, value)


class _RecordingLibrary:
    """Stands in for the ctypes.CDLL that _lib._declare declares: every name exists."""

    def __init__(self) -> None:
        object.__setattr__(self, "recorders", [])
        object.__setattr__(self, "aliases", {})

    def __getattr__(self, name: str) -> _Recorder:
        if name.startswith("_"):  # CDLL's own attributes (_name, _handle): not C functions
            raise AttributeError(name)
        for r in self.recorders:
            if r.name == name:
                return r
        recorder = _Recorder(name)
        self.recorders.append(recorder)
        return recorder

    def __getitem__(self, name: str) -> _Recorder:  # cdll["x"]: a new function object, as ctypes does
        recorder = _Recorder(name)
        self.recorders.append(recorder)
        return recorder

    def __setattr__(self, name: str, value: Any) -> None:
        self.aliases[name] = value


@dataclass
class Declared:
    name: str            # the C function
    attribute: str       # where the binding reaches it (an alias such as korovod_enqueue_unchecked)
    argtypes: Optional[list]
    restype: Any
    restype_set: bool


def load_lib_module(path: Path = LIB_PY) -> ModuleType:
    spec = importlib.util.spec_from_file_location("korovod_c_abi_check_lib", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def declarations(lib_module: ModuleType) -> List[Declared]:
    """What lib_module._declare assigns, one entry per function object it touched."""
    fake = _RecordingLibrary()
    lib_module._declare(fake)
    alias_of = {id(v): k for k, v in fake.aliases.items() if isinstance(v, _Recorder)}
    return [Declared(r.name, alias_of.get(id(r), r.name), r.argtypes, r.restype, r.restype_set)
            for r in fake.recorders]


# ---- where the package calls header functions ----

LIB_RECEIVER = re.compile(r"(?:^|\.)(?:lib|cdll)$|(?:^|\.)load\(\)$")


def uses(package: Path, functions: Set[str], skip: Path) -> Dict[str, str]:
    """Header function -> the first 'file:line' that reaches it: an attribute of a library object
    (lib, rt.lib, cdll, _lib.load()) or a string naming it."""
    found: Dict[str, str] = {}
    for path in sorted(package.rglob("*.py")):
        if path.resolve() == skip.resolve():
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            name = None
            if isinstance(node, ast.Attribute) and node.attr in functions \
                    and LIB_RECEIVER.search(ast.unparse(node.value)):
                name = node.attr
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in functions:
                name = node.value  # getattr(lib, "korovod_x", None), lib["korovod_x"], a helper's argument
            if name and name not in found:
                found[name] = f"{path.relative_to(package.parent)}:{node.lineno}"
    return found


# ---- the comparison ----

def compare(header: Header, declared: List[Declared], used: Dict[str, str]) -> Tuple[List[str], List[str]]:
    """(problems, header functions Python does not use)."""
    problems: List[str] = []
    seen: Set[str] = set()
    for d in declared:
        seen.add(d.name)
        where = d.name if d.attribute == d.name else f"{d.name} (as {d.attribute})"
        if d.name not in header.functions:
            problems.append(f"{where}: declared in _lib.py, not in c_api.h")
            continue
        params, ret = header.functions[d.name]
        if d.argtypes is not None:
            if len(d.argtypes) != len(params):
                problems.append(f"{where}: {len(d.argtypes)} argument(s) declared, c_api.h has {len(params)}: "
                                f"({', '.join(p.type.text + ' ' + p.name for p in params)})")
            else:
                for i, (p, a) in enumerate(zip(params, d.argtypes)):
                    why = mismatch(p.type, a, header)
                    if why:
                        problems.append(f"{where} argument {i} ({p.name}): c_api.h {p.type.text}, "
                                        f"_lib.py {describe(a)}: {why}")
        elif params and d.attribute == d.name:
            problems.append(f"{where}: no argtypes declared (c_api.h: {len(params)} argument(s))")
        why = mismatch(ret, d.restype, header)
        if why:
            set_or_default = "" if d.restype_set else " (ctypes' default: restype never set)"
            problems.append(f"{where} restype: c_api.h {ret.text}, _lib.py {describe(d.restype)}"
                            f"{set_or_default}: {why}")
    for name, location in sorted(used.items()):
        if name not in seen:
            problems.append(f"{name}: called at {location} without a declaration in _lib.py")
    unused = sorted(set(header.functions) - seen - set(used))
    return problems, unused


def check(header_path: Path = HEADER, lib_path: Path = LIB_PY, package: Path = PACKAGE,
          lib_module: Optional[ModuleType] = None) -> Tuple[List[str], List[str], int]:
    """(problems, unused header functions, number of declarations checked)."""
    header = parse_header(header_path.read_text())
    module = lib_module or load_lib_module(lib_path)
    declared = declarations(module)
    problems, unused = compare(header, declared, uses(package, set(header.functions), lib_path))
    return problems, unused, len(declared)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--header", type=Path, default=HEADER, help="the C header (default: %(default)s)")
    parser.add_argument("--lib", type=Path, default=LIB_PY, help="the ctypes declarations (default: %(default)s)")
    parser.add_argument("--package", type=Path, default=PACKAGE,
                        help="Python code searched for calls of header functions (default: %(default)s)")
    args = parser.parse_args()
    problems, unused, count = check(args.header, args.lib, args.package)
    print(f"c-abi: {count} ctypes declaration(s) in {args.lib.name} against "
          f"{len(parse_header(args.header.read_text()).functions)} prototypes in {args.header.name}")
    if unused:
        print(f"c-abi: header functions Python neither declares nor calls ({len(unused)}): {', '.join(unused)}")
    for problem in problems:
        print(f"MISMATCH: {problem}")
    print(f"c-abi: {'FAILED, ' + str(len(problems)) + ' mismatch(es)' if problems else 'every declaration matches'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
