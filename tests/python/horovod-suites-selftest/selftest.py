#!/usr/bin/env python3
"""Self-test of scripts/horovod-suites without a Horovod tree: it makes a small fake one (a
test/parallel/test_torch.py and the helper files the runner copies) and runs the torch suite on
/usr/bin/python3 under mpirun, -np 2 and -np 3. The fake suite checks, on every rank, that `horovod.torch`
is korovod.torch and reduces across both ranks, and that horovod.common.util and
horovod.runner.common.util.env come from the given tree, not from korovod; one of its tests fails
on rank 1 only and one skips. The runner must count, for each job, 2 passed, 1 failed (a failure on
any rank is a failure), 1 skipped, mark the jobs failed and exit 1.

Usage: selftest.py <build dir> <python with torch and pytest>
Exit status: 0 the runner behaved, 1 it did not, 77 skipped (the interpreter lacks torch or pytest).
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parents[3]
FAKE_TEST = '''import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "utils"))
from common import FAKE_COMMON  # noqa: E402 (test/utils, as Horovod's tests import it)

import horovod.torch as hvd  # noqa: E402
from horovod.common.util import FAKE_TREE  # noqa: E402
from horovod.runner.common.util.env import get_env_rank_and_size  # noqa: E402


class FakeTests(unittest.TestCase):
    def test_redirected_to_korovod_and_reduces(self):
        hvd.init()
        self.assertEqual(hvd.__name__, "korovod.torch")
        total = hvd.allreduce(torch.ones(3), op=hvd.Sum)
        self.assertEqual(total.tolist(), [float(hvd.size())] * 3)

    def test_helpers_come_from_the_tree(self):
        self.assertEqual((FAKE_TREE, FAKE_COMMON), ("util", "common"))
        self.assertEqual(get_env_rank_and_size(), "env")

    def test_fails_on_rank_1_only(self):
        self.assertNotEqual(hvd.rank(), 1)

    def test_skips_itself(self):
        self.skipTest("the fake suite skips this one")
'''
FILES = {
    "test/parallel/test_torch.py": FAKE_TEST,
    "test/utils/common.py": 'FAKE_COMMON = "common"\n',
    "horovod/common/util.py": 'FAKE_TREE = "util"\n',
    "horovod/runner/common/util/env.py": 'def get_env_rank_and_size():\n    return "env"\n',
}
EMPTY = ["horovod/common/__init__.py", "horovod/common/exceptions.py", "horovod/runner/__init__.py",
         "horovod/runner/common/__init__.py", "horovod/runner/common/util/__init__.py",
         "horovod/runner/common/util/secret.py", "horovod/runner/util/__init__.py", "horovod/runner/util/threads.py"]
EXPECTED_ROWS = [f"| torch | torch1.13 | mpirun -np {n} | 2 | 1 | 1 | failed (rc 1) |" for n in (2, 3)]


def main(build_dir: str, python: str) -> int:
    has = subprocess.run([python, "-c", "import torch, pytest"], capture_output=True)
    if has.returncode != 0:
        print(f"horovod-suites selftest: skipped, {python} cannot import torch and pytest")
        return 77
    with tempfile.TemporaryDirectory(prefix="horovod-suites-selftest-") as tmp:
        tree = Path(tmp) / "horovod"
        for rel, text in [*FILES.items(), *((rel, "") for rel in EMPTY)]:
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_text(text)
        got = subprocess.run([sys.executable, str(SOURCE_DIR / "scripts" / "horovod-suites"), "--horovod-src",
                              str(tree), "--suite", "torch", "--framework", "torch1.13",
                              "--python", f"torch1.13={python}", "--launcher", "mpirun",
                              "--build-dir", build_dir, "--out", str(Path(tmp) / "out"), "--timeout", "300"],
                             capture_output=True, text=True)
    print(got.stdout + got.stderr)
    problems = []
    if got.returncode != 1:
        problems.append(f"exit status {got.returncode}, expected 1 (a test failed on rank 1)")
    for row in EXPECTED_ROWS:
        if not any(line.startswith(row) for line in got.stdout.splitlines()):
            problems.append(f"no table row starting {row!r}")
    for problem in problems:
        print(f"horovod-suites selftest: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0)
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
