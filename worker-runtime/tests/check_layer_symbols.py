#!/usr/bin/env python3
"""The layers' link-time direction (worker-runtime/README.md, "Layering").

The include paths keep a layer from including the headers of a layer above it, but not from
calling what a higher layer defines through a declaration of its own (a class declared in core
and defined in algorithms/, say): libkorovod.so links every layer's objects together, so such a
reference links and the cycle goes unnoticed. This check reads each layer's object files with
`nm` and fails when a layer's objects leave a symbol undefined that a layer ABOVE it (later in
the argument list, which follows the README's order bottom up) defines.

Usage: check_layer_symbols.py [--nm NM] LAYER=OBJ[;OBJ...] ...   (bottom layer first)
Prints each offending symbol (demangled) with the object that needs it and the layer that
defines it; exit 1 when there is one, 0 when there is none, 2 on a usage or nm error.
"""

import argparse
import os
import subprocess
import sys

# nm's POSIX format: "name type value size" (value and size absent for an undefined symbol).
# Strong definitions only: a weak one (an inline function, a template instance, a vtable without
# key function) is emitted by every object that uses it, so it says nothing about direction.
STRONG_DEFINED = set("TDBRGSCI")


def read_symbols(nm, objects):
    """(defined, undefined): defined = set of names; undefined = {name: first object needing it}."""
    defined, undefined = set(), {}
    # A handful of objects per call: the command line stays short, nm runs a few times only.
    for i in range(0, len(objects), 64):
        chunk = objects[i:i + 64]
        out = subprocess.run([nm, "--format=posix", "--print-file-name", *chunk],
                             check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            # "path/to/x.cc.o: symbol T 0000 0010"
            head, sep, rest = line.partition(": ")
            if not sep:
                continue
            fields = rest.split()
            if len(fields) < 2:
                continue
            name, kind = fields[0], fields[1]
            if kind == "U":
                undefined.setdefault(name, head)
            elif kind in STRONG_DEFINED:
                defined.add(name)
    return defined, undefined


def demangle(names):
    if not names:
        return {}
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True,
                             text=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {n: n for n in names}
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nm", default="nm")
    parser.add_argument("layers", nargs="+", metavar="LAYER=OBJECTS")
    args = parser.parse_args()

    # "LAYER=OBJ;OBJ" as one argument, or split at the semicolons into several (ctest expands a
    # list that a generator expression gives): an argument without "=" is one more object.
    specs = []  # (name, objects)
    for arg in args.layers:
        for item in arg.split(";"):
            if not item:
                continue
            name, sep, obj = item.partition("=")
            if sep:
                specs.append((name, [obj] if obj else []))
            elif specs:
                specs[-1][1].append(item)
            else:
                print(f"check_layer_symbols: object {item} before any LAYER=", file=sys.stderr)
                return 2

    layers = []  # (name, defined, undefined), bottom up
    for name, objects in specs:
        if not objects:
            print(f"check_layer_symbols: layer {name} names no objects", file=sys.stderr)
            return 2
        missing = [o for o in objects if not os.path.exists(o)]
        if missing:
            print(f"check_layer_symbols: {name}: no object {missing[0]} (build first)", file=sys.stderr)
            return 2
        try:
            defined, undefined = read_symbols(args.nm, objects)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"check_layer_symbols: {args.nm}: {e}", file=sys.stderr)
            return 2
        layers.append((name, defined, undefined))

    findings = []  # (lower layer, object, symbol, upper layer)
    for i, (lower, _, undefined) in enumerate(layers):
        for symbol, obj in sorted(undefined.items()):
            for upper, defined, _ in layers[i + 1:]:
                if symbol in defined:
                    findings.append((lower, obj, symbol, upper))
                    break
    names = demangle(sorted({f[2] for f in findings}))
    for lower, obj, symbol, upper in findings:
        print(f"layer {lower} uses {names.get(symbol, symbol)} ({symbol}), defined by layer {upper} above it "
              f"(needed by {os.path.basename(obj)})")
    if findings:
        print(f"FAIL: {len(findings)} symbol(s) run up the layers (worker-runtime/README.md, \"Layering\")")
        return 1
    print(f"OK: {len(layers)} layers, no symbol runs up: " + " < ".join(l[0] for l in layers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
