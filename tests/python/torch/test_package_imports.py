"""The korovod package's imports (read with ast, nothing imported; shared/package_imports.py):
korovod.torch, korovod.tensorflow and korovod.keras never import one another, and no import loop
exists anywhere in the package. Runs in the torch suites, which every configuration has; it needs
no framework."""

from pathlib import Path

import korovod
from package_imports import problems


def test_framework_packages_do_not_import_each_other_and_no_import_loops():
    package_dir = Path(korovod.__file__).resolve().parent
    found = problems(package_dir)
    assert not found, "\n".join(found)


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / "korovod" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "korovod"


def test_the_check_reports_a_cross_framework_import_and_a_lazy_loop(tmp_path):
    package = _write(tmp_path, {
        "__init__.py": "",
        "common/__init__.py": "",
        "common/a.py": "from korovod.common import b\n",
        "common/b.py": "def f():\n    from korovod.common.a import x\n",
        "torch/__init__.py": "",
        "keras/__init__.py": "",
        "keras/reduce.py": "def g():\n    import korovod.torch as hvd\n",
        "_keras/__init__.py": "import korovod.torch\nimport korovod.keras\n",
    })
    found = problems(package)
    assert found == [
        "korovod.keras.reduce (line 2) imports korovod.torch: framework packages must not import each other",
        "import loop: korovod.common.a -> korovod.common.b -> korovod.common.a",
    ], found
