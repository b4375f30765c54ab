"""pytest setup for TensorFlow ranks on Spark and Ray (the TensorFlow venv, which has no torch):
the parent conftest's settings apply; its per-test barrier is replaced by one that needs no torch,
as tests/python/tensorflow/conftest.py does."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no oneDNN/CPU-feature banners in every rank's log
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _aligned_ranks():
    """The driver's own one-rank world, as the parent's fixture makes it, without torch."""
    import korovod.common.basics as basics
    from korovod.common import native_ops

    basics.init()
    yield
    if basics.is_initialized():
        native_ops.barrier()
