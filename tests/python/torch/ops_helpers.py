"""Helpers for the collective-op tests: dtypes, per-rank inputs every rank can recompute, and
checks that fail on every rank together.

Each rank's input is a function of (rank, seed), so any rank can compute every rank's input and
the expected result locally: no test needs a second collective to know what is right.
"""

from typing import Callable, List, Sequence

import pytest
import torch

import korovod.torch as hvd

ALL_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
              torch.float32, torch.float64, torch.bool]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
REDUCE_OPS = {"Sum": hvd.Sum, "Average": hvd.Average, "Min": hvd.Min, "Max": hvd.Max, "Product": hvd.Product}


def require_ranks(count: int) -> None:
    """Skips the test (on every rank alike) when the job has fewer ranks."""
    if hvd.size() < count:
        pytest.skip(f"needs at least {count} ranks")


def dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def rank_input(dtype: torch.dtype, rank: int, shape: Sequence[int], seed: int = 0,
               low: int = -3, high: int = 4) -> torch.Tensor:
    """Small integer values (exact in every dtype), a function of (rank, seed, shape)."""
    generator = torch.Generator().manual_seed(1009 * seed + 31 * rank + 7)
    if dtype is torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=generator).bool()
    if dtype is torch.uint8:
        low = max(low, 0)
    return torch.randint(low, high, tuple(shape), generator=generator).to(dtype)


def wide(tensor: torch.Tensor) -> torch.Tensor:
    """float64 copy (bool -> 0/1) for comparing dtypes torch 1.13 cannot compute on (CPU half)."""
    return tensor.detach().to(torch.float64)


def tolerance(dtype: torch.dtype) -> float:
    return {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-5, torch.float64: 1e-12}.get(dtype, 0.0)


def close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype = None) -> bool:
    if tuple(actual.shape) != tuple(expected.shape):
        return False
    tol = tolerance(dtype or actual.dtype)
    return bool(torch.allclose(wide(actual), wide(expected), rtol=tol, atol=tol))


def describe(actual: torch.Tensor, expected: torch.Tensor) -> str:
    return f"got {actual.dtype} {tuple(actual.shape)} {actual.flatten()[:8].tolist()}, " \
           f"expected {expected.dtype} {tuple(expected.shape)} {expected.flatten()[:8].tolist()}"


def reference_reduce(op: int, inputs: List[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    """What allreduce computes, from every rank's input (the runtime's rules: integer Average
    truncates sum * (1/size); bool is logic: or for Sum/Max/Average, and for Min/Product)."""
    if dtype is torch.bool:
        stacked = torch.stack([t.bool() for t in inputs])
        if op in (hvd.Min, hvd.Product):
            return stacked.all(dim=0)
        return stacked.any(dim=0)
    stacked = torch.stack([wide(t) for t in inputs])
    if op == hvd.Sum:
        result = stacked.sum(dim=0)
    elif op == hvd.Average:
        result = stacked.sum(dim=0) * (1.0 / len(inputs))
        if not dtype.is_floating_point:
            result = result.trunc()
    elif op == hvd.Min:
        result = stacked.min(dim=0).values
    elif op == hvd.Max:
        result = stacked.max(dim=0).values
    else:
        result = stacked.prod(dim=0)
    return result.to(dtype)


def check_on_all_ranks(ok: bool, message: Callable[[], str] = lambda: "") -> None:
    """Fails on every rank when the check failed on any, with the failing ranks' messages, so no
    rank runs ahead into the next test's collectives."""
    local = "" if ok else f"rank {hvd.rank()}: {message()}"
    encoded = torch.tensor(list(local.encode()), dtype=torch.uint8)
    lengths = hvd.allgather(torch.tensor([encoded.numel()], dtype=torch.int64), name="check.lengths")
    texts = hvd.allgather(encoded, name="check.texts") if int(lengths.sum()) > 0 else torch.empty(0, dtype=torch.uint8)
    failures, offset = [], 0
    for n in lengths.tolist():
        if n:
            failures.append(bytes(texts[offset:offset + n].tolist()).decode())
        offset += n
    assert not failures, "\n".join(failures)


def check_results(pairs: Sequence, dtype: torch.dtype = None) -> None:
    """pairs of (what, actual, expected): every one must match on every rank."""
    bad = [f"{what}: {describe(actual, expected)}" for what, actual, expected in pairs
           if not close(actual, expected, dtype)]
    check_on_all_ranks(not bad, lambda: "; ".join(bad))


def raises_on_all_ranks(error_types, action: Callable[[], object]) -> str:
    """Runs `action`, which must raise one of error_types here; checked on every rank together.
    Returns the error text."""
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
