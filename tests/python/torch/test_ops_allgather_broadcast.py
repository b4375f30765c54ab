"""allgather (variable dim 0, grouped, async) and broadcast (every root, in place) on every CPU
dtype, and their errors."""

import pytest
import torch

import korovod.torch as hvd
from ops_helpers import (ALL_DTYPES, check_on_all_ranks, check_results, dtype_id, raises_on_all_ranks, rank_input,
                         require_ranks)

TRAILING = [(), (3,), (2, 4)]


def rows_of(rank):
    # Ranks contribute different row counts, rank 1 none at all.
    return [3, 0, 2, 5, 1][rank % 5]


def every_rank_rows(dtype, trailing, seed):
    return [rank_input(dtype, r, (rows_of(r),) + trailing, seed) for r in range(hvd.size())]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_allgather_variable_dim0_every_dtype(dtype):
    pairs = []
    for seed, trailing in enumerate(TRAILING):
        inputs = every_rank_rows(dtype, trailing, seed)
        result = hvd.allgather(inputs[hvd.rank()], name=f"allgather.{dtype_id(dtype)}.{seed}")
        pairs.append((f"trailing {trailing}", result, torch.cat(inputs)))
        check_on_all_ranks(result.dtype == dtype, lambda: f"dtype {result.dtype}")
    check_results(pairs, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_allgather_async_fused_and_grouped(dtype):
    inputs = [every_rank_rows(dtype, (2,), seed=10 + i) for i in range(4)]
    handles = [hvd.allgather_async(per_rank[hvd.rank()], name=f"gather_fused.{dtype_id(dtype)}.{i}")
               for i, per_rank in enumerate(inputs)]
    fused = [hvd.synchronize(h) for h in handles]
    grouped = hvd.grouped_allgather([per_rank[hvd.rank()] for per_rank in inputs],
                                    name=f"gather_grouped.{dtype_id(dtype)}")
    grouped_async = hvd.synchronize(hvd.grouped_allgather_async([p[hvd.rank()] for p in inputs]))
    pairs = []
    for i, per_rank in enumerate(inputs):
        expected = torch.cat(per_rank)
        pairs += [(f"fused {i}", fused[i], expected), (f"grouped {i}", grouped[i], expected),
                  (f"grouped async {i}", grouped_async[i], expected)]
    check_results(pairs, dtype)


def test_allgather_output_owns_its_memory():
    """The runtime-allocated output outlives its handle and the input."""
    inputs = every_rank_rows(torch.float64, (64,), seed=20)
    result = hvd.allgather(inputs[hvd.rank()].clone(), name="owned")
    for _ in range(3):
        hvd.allgather(torch.zeros(7, 64, dtype=torch.float64))  # would reuse freed memory
    check_results([("kept", result, torch.cat(inputs))])


def test_allgather_of_a_scalar_is_a_value_error():
    raises_on_all_ranks(ValueError, lambda: hvd.allgather(torch.tensor(1.0)))


def test_allgather_mismatched_trailing_dims_or_dtype_raise_runtime_error():
    require_ranks(2)
    raises_on_all_ranks(RuntimeError, lambda: hvd.allgather(torch.ones(2, 3 + hvd.rank()), name="gather.dims"))
    dtype = torch.int32 if hvd.rank() % 2 else torch.float32
    raises_on_all_ranks(RuntimeError, lambda: hvd.allgather(torch.ones(2, dtype=dtype), name="gather.dtype"))
    check_results([("after", hvd.allgather(torch.ones(1)), torch.ones(hvd.size()))])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_broadcast_from_every_root(dtype):
    pairs = []
    for root in range(hvd.size()):
        inputs = [rank_input(dtype, r, (3, 4), seed=30 + root) for r in range(hvd.size())]
        mine = inputs[hvd.rank()].clone()
        result = hvd.broadcast(mine, root, name=f"broadcast.{dtype_id(dtype)}.{root}")
        in_place = inputs[hvd.rank()].clone()
        returned = hvd.broadcast_(in_place, root_rank=root, name=f"broadcast_.{dtype_id(dtype)}.{root}")
        pairs += [(f"root {root}", result, inputs[root]), (f"root {root} in place", in_place, inputs[root]),
                  (f"root {root} input unchanged", mine, inputs[hvd.rank()])]
        check_on_all_ranks(returned is in_place, lambda: "broadcast_ returned another tensor")
    check_results(pairs, dtype)


def test_broadcast_async_forms_and_scalars():
    root = hvd.size() - 1
    value = torch.tensor(float(hvd.rank()))
    handle = hvd.broadcast_async(value, root, name="broadcast.scalar")
    target = torch.full((5,), float(hvd.rank()))
    handle_ = hvd.broadcast_async_(target, root, name="broadcast.async_")
    result = hvd.synchronize(handle)
    hvd.synchronize(handle_)
    check_results([("scalar", result, torch.tensor(float(root))), ("in place", target, torch.full((5,), float(root)))])


def test_broadcast_non_contiguous_in_place():
    base = torch.arange(12.0).reshape(3, 4) + 100 * hvd.rank()
    view = base.t()
    hvd.broadcast_(view, 0, name="broadcast.non_contiguous")
    check_results([("in place through a view", base, torch.arange(12.0).reshape(3, 4))])


def test_broadcast_errors():
    raises_on_all_ranks(ValueError, lambda: hvd.broadcast(torch.ones(2), hvd.size(), name="broadcast.bad_root"))
    require_ranks(2)
    raises_on_all_ranks(RuntimeError, lambda: hvd.broadcast(torch.ones([4 + hvd.rank()]), 0, name="broadcast.shape"))
    dtype = torch.int32 if hvd.rank() % 2 else torch.float32
    raises_on_all_ranks(RuntimeError, lambda: hvd.broadcast(torch.ones(3, dtype=dtype), 0, name="broadcast.dtype"))
    raises_on_all_ranks(RuntimeError, lambda: hvd.broadcast(torch.ones(3), hvd.rank(), name="broadcast.roots"))
    check_results([("after", hvd.broadcast(torch.full((2,), float(hvd.rank())), 1), torch.ones(2))])
