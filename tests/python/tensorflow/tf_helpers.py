"""Helpers for the korovod.tensorflow tests: per-rank inputs every rank can recompute, running a
function eagerly or as a tf.function, and checks that fail on every rank together."""

from typing import Callable, Sequence

import numpy as np
import pytest
import tensorflow as tf

import korovod.tensorflow as hvd

ALL_DTYPES = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16, tf.bfloat16, tf.float32,
              tf.float64, tf.bool]
NUMERIC_DTYPES = [d for d in ALL_DTYPES if d != tf.bool]
FLOAT_DTYPES = [tf.float16, tf.bfloat16, tf.float32, tf.float64]
MODES = ["eager", "function"]
REDUCE_OPS = {"Sum": hvd.Sum, "Average": hvd.Average, "Min": hvd.Min, "Max": hvd.Max, "Product": hvd.Product}


def require_ranks(count: int) -> None:
    if hvd.size() < count:
        pytest.skip(f"needs at least {count} ranks")


def run(mode: str, fn: Callable, *args):
    """fn(*args) eagerly, or traced and run as a tf.function (the collectives become graph ops)."""
    return fn(*args) if mode == "eager" else tf.function(fn)(*args)


def rank_values(dtype: tf.DType, rank: int, shape: Sequence[int], seed: int = 0) -> np.ndarray:
    """Small integers (exact in every dtype), a function of (rank, seed, shape), as float64."""
    rng = np.random.default_rng(1009 * seed + 31 * rank + 7)
    if dtype == tf.bool:
        return rng.integers(0, 2, size=shape).astype(np.float64)
    low = 0 if dtype.is_unsigned else -3
    return rng.integers(low, 4, size=shape).astype(np.float64)


def rank_tensor(dtype: tf.DType, rank: int, shape: Sequence[int], seed: int = 0) -> tf.Tensor:
    values = rank_values(dtype, rank, shape, seed)
    return tf.cast(tf.constant(values), dtype) if dtype != tf.bool else tf.constant(values.astype(bool))


def wide(tensor) -> np.ndarray:
    return np.asarray(tf.cast(tensor, tf.float64) if tensor.dtype != tf.bool else tf.cast(tensor, tf.float64))


def tolerance(dtype: tf.DType) -> float:
    return {tf.float16: 1e-2, tf.bfloat16: 2e-2, tf.float32: 1e-5, tf.float64: 1e-12}.get(dtype, 0.0)


def reference_reduce(op: int, inputs: Sequence[np.ndarray], dtype: tf.DType) -> np.ndarray:
    """What allreduce computes (bool: or for Sum/Max/Average, and for Min/Product; integer
    Average truncates)."""
    stacked = np.stack(inputs)
    if dtype == tf.bool:
        return (stacked.min(axis=0) if op in (hvd.Min, hvd.Product) else stacked.max(axis=0))
    if op == hvd.Sum:
        return stacked.sum(axis=0)
    if op == hvd.Average:
        result = stacked.sum(axis=0) * (1.0 / len(inputs))
        return result if dtype.is_floating else np.trunc(result)
    if op == hvd.Min:
        return stacked.min(axis=0)
    if op == hvd.Max:
        return stacked.max(axis=0)
    return stacked.prod(axis=0)


def check_on_all_ranks(ok: bool, message: Callable[[], str] = lambda: "") -> None:
    """Fails on every rank when the check failed on any, with the failing ranks' messages."""
    local = "" if ok else f"rank {hvd.rank()}: {message()}"
    failures = [text for text in hvd.allgather_object(local, name="check") if text]
    assert not failures, "\n".join(failures)


def describe(actual, expected) -> str:
    a, e = np.asarray(actual), np.asarray(expected)
    return f"got {a.shape} {a.flatten()[:8].tolist()}, expected {e.shape} {e.flatten()[:8].tolist()}"


def check_results(pairs: Sequence, dtype: tf.DType = None) -> None:
    """pairs of (what, actual tensor, expected float64 array): all must match on every rank."""
    bad = []
    for what, actual, expected in pairs:
        actual_dtype = dtype or actual.dtype
        a = wide(actual)
        tol = tolerance(actual_dtype)
        if a.shape != np.shape(expected) or not np.allclose(a, expected, rtol=tol, atol=tol):
            bad.append(f"{what}: {describe(a, expected)}")
    check_on_all_ranks(not bad, lambda: "; ".join(bad))


def raises_on_all_ranks(error_types, action: Callable[[], object]) -> str:
    """Runs `action`, which must raise one of error_types here; checked on every rank together."""
    try:
        action()
    except error_types as e:
        check_on_all_ranks(True)
        return str(e)
    except Exception as e:  # the wrong kind of error: fails on every rank
        text = f"raised {type(e).__name__}: {e}, expected {error_types}"
        check_on_all_ranks(False, lambda: text)
    check_on_all_ranks(False, lambda: f"did not raise {error_types}")
    return ""
