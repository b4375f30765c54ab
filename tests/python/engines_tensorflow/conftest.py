"""pytest setup for TensorFlow ranks on Spark and Ray (the TensorFlow venv, which has no torch):
the parent conftest's settings apply; its per-test barrier is replaced by one that needs no torch,
as tests/python/tensorflow/conftest.py does."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no oneDNN/CPU-feature banners in every rank's log
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from tf_aligned_ranks import _aligned_ranks  # noqa: E402,F401 -- the per-test fixture, without torch
