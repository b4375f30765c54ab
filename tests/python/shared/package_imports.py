"""The korovod package's import graph, read from its sources with ast (nothing is imported).

Two rules (issue 30): the framework packages korovod.torch, korovod.tensorflow and korovod.keras
never import one another (shared Keras code lives in korovod._keras, shared everything else in
korovod.common), and no module imports, directly or through others, a module that imports it.
Imports inside functions count too: a lazy import that closes a loop is still a loop.

    python3 tests/python/shared/package_imports.py [PACKAGE_DIR]   # prints what breaks a rule
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Set

FRAMEWORKS = ("korovod.torch", "korovod.tensorflow", "korovod.keras")


class Import(NamedTuple):
    source: str  # the importing module
    target: str  # the imported korovod module
    line: int


def module_names(package_dir: Path) -> Dict[str, Path]:
    """{dotted name: file} of every module of the package at package_dir (a folder named korovod)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _known(name: str, modules: Dict[str, Path]) -> str:
    """The module that `import name` runs last: name itself, or the nearest enclosing module."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(name: str, path: Path, modules: Dict[str, Path]) -> List[Import]:
    """Every korovod import in one module (at module level or inside functions)."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from package import module` imports the module; `from module import name` the module.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "korovod" or target.startswith("korovod."):
                found.append(Import(name, _known(target, modules), node.lineno))
    return found


def framework_of(module: str) -> str:
    for framework in FRAMEWORKS:
        if module == framework or module.startswith(framework + "."):
            return framework
    return ""


def cross_framework_imports(imports: List[Import]) -> List[Import]:
    return [i for i in imports
            if framework_of(i.source) and framework_of(i.target)
            and framework_of(i.source) != framework_of(i.target)]


def import_loops(imports: List[Import]) -> List[List[str]]:
    """Each loop once, as the modules along it (the first repeated at the end)."""
    graph: Dict[str, Set[str]] = {}
    for i in imports:
        if i.target != i.source:
            graph.setdefault(i.source, set()).add(i.target)
    loops, done, path, on_path = [], set(), [], set()

    def visit(node: str) -> None:
        path.append(node)
        on_path.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                loops.append(path[path.index(nxt):] + [nxt])
            elif nxt not in done:
                visit(nxt)
        on_path.discard(node)
        path.pop()
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node)
    return loops


def all_imports(package_dir: Path) -> List[Import]:
    modules = module_names(package_dir)
    return [i for name, path in modules.items() for i in imports_of(name, path, modules)]


def problems(package_dir: Path) -> List[str]:
    imports = all_imports(package_dir)
    found = sorted({f"{i.source} (line {i.line}) imports {i.target}: framework packages must not import "
                    "each other" for i in cross_framework_imports(imports)})
    found += ["import loop: " + " -> ".join(loop) for loop in import_loops(imports)]
    return found


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[3] / "worker-runtime" / "python" / "korovod"
    broken = problems(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
    print("\n".join(broken) or "ok")
    sys.exit(1 if broken else 0)
