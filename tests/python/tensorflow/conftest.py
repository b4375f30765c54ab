"""pytest setup for the korovod.tensorflow / korovod.keras tests (run by tests/python/run-pytest
--framework tensorflow on the TensorFlow venv). The parent conftest's settings apply; its
per-test barrier is replaced by one that needs no torch."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no oneDNN/CPU-feature banners in every rank's log
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import tensorflow as tf  # noqa: E402

# Ranks share few cores: one intra-op thread each. Two inter-op threads, so a blocking collective
# in a graph never holds the only one (the tests with one thread say so themselves).
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)

from tf_aligned_ranks import _aligned_ranks  # noqa: E402,F401 -- the per-test fixture, without torch
