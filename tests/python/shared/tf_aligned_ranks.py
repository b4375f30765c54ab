"""The per-test fixture of the TensorFlow venv's tests (no torch there): hvd.init() before each
test, a barrier after it, so ranks leave each test together. tests/python/tensorflow/conftest.py
and tests/python/engines_tensorflow/conftest.py import it in place of the parent's."""

import pytest


@pytest.fixture(autouse=True)
def _aligned_ranks():
    import korovod.common.basics as basics
    from korovod.common import native_ops

    basics.init()
    yield
    if basics.is_initialized():
        native_ops.barrier()
