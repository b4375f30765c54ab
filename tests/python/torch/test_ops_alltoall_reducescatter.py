"""alltoall (even and explicit splits, received splits) and reducescatter (Average/Sum, uneven
dim 0, scales, grouped) on every CPU dtype, and their errors."""

import pytest
import torch

import korovod.torch as hvd
from ops_helpers import (ALL_DTYPES, check_on_all_ranks, check_results, dtype_id, raises_on_all_ranks, rank_input,
                         reference_reduce, require_ranks, wide)


def splits_of(sender, receiver):
    # Rows sender sends to receiver: uneven, with some zeros.
    return (sender + 2 * receiver) % 3


def alltoall_expected(inputs, splits_by_sender, me):
    blocks = []
    for sender, tensor in enumerate(inputs):
        offsets = [0] + torch.tensor(splits_by_sender[sender]).cumsum(0).tolist()
        blocks.append(tensor[offsets[me]:offsets[me + 1]])
    return torch.cat(blocks)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_alltoall_with_splits_every_dtype(dtype):
    size, me = hvd.size(), hvd.rank()
    splits = [[splits_of(s, r) for r in range(size)] for s in range(size)]
    pairs = []
    for seed, trailing in enumerate([(), (2,), (2, 3)]):
        # One spare row at the end: splits may sum to less than dim 0.
        inputs = [rank_input(dtype, s, (sum(splits[s]) + 1,) + trailing, seed) for s in range(size)]
        output, received = hvd.alltoall(inputs[me], torch.tensor(splits[me], dtype=torch.int32),
                                        name=f"alltoall.{dtype_id(dtype)}.{seed}")
        pairs.append((f"trailing {trailing}", output, alltoall_expected(inputs, splits, me)))
        pairs.append(("received splits", received, torch.tensor([splits[s][me] for s in range(size)],
                                                                 dtype=torch.int32)))
    check_results(pairs, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_alltoall_even_split_returns_a_tensor(dtype):
    size, me = hvd.size(), hvd.rank()
    inputs = [rank_input(dtype, s, (2 * size, 3), seed=5) for s in range(size)]
    output = hvd.alltoall(inputs[me], name=f"alltoall.even.{dtype_id(dtype)}")
    check_on_all_ranks(isinstance(output, torch.Tensor), lambda: f"returned {type(output)}")
    expected = torch.cat([t[2 * me:2 * me + 2] for t in inputs])
    output_async, received = hvd.synchronize(hvd.alltoall_async(inputs[me], name=f"alltoall.async.{dtype_id(dtype)}"))
    check_results([("even split", output, expected), ("async", output_async, expected),
                   ("received", received, torch.full((size,), 2, dtype=torch.int32))], dtype)


def test_alltoall_splits_as_a_list():
    size, me = hvd.size(), hvd.rank()
    inputs = [torch.arange(size, dtype=torch.float32) + 10 * s for s in range(size)]
    output, received = hvd.alltoall(inputs[me], [1] * size, name="alltoall.list")
    check_results([("list splits", output, torch.tensor([10.0 * s + me for s in range(size)])),
                   ("received", received, torch.ones(size, dtype=torch.int32))])


def test_alltoall_argument_errors_are_value_errors():
    size = hvd.size()
    raises_on_all_ranks(ValueError, lambda: hvd.alltoall(torch.ones(size - 1 if size > 1 else 0),
                                                         torch.ones(size, dtype=torch.int32)))
    raises_on_all_ranks(ValueError, lambda: hvd.alltoall(torch.ones(size), torch.ones(size, dtype=torch.float32)))
    raises_on_all_ranks(ValueError, lambda: hvd.alltoall(torch.ones(size), torch.ones(size + 1, dtype=torch.int32)))
    raises_on_all_ranks(ValueError, lambda: hvd.alltoall(torch.tensor(1.0)))
    require_ranks(2)
    raises_on_all_ranks(ValueError, lambda: hvd.alltoall(torch.ones(size + 1)))


def test_alltoall_cross_rank_mismatch_raises_runtime_error():
    require_ranks(2)
    size = hvd.size()
    shape = [2 * size, 10 * (hvd.rank() + 1)]
    raises_on_all_ranks(RuntimeError, lambda: hvd.alltoall(torch.ones(shape), name="alltoall.dims"))
    dtype = torch.int32 if hvd.rank() % 2 else torch.float32
    raises_on_all_ranks(RuntimeError, lambda: hvd.alltoall(torch.ones(size, dtype=dtype), name="alltoall.dtype"))
    check_results([("after", hvd.alltoall(torch.ones(size)), torch.ones(size))])


def blocks(size, dim0):
    """Rows of each rank's block: ranks below dim0 % size get one extra (Horovod's rule)."""
    counts = [dim0 // size + (1 if r < dim0 % size else 0) for r in range(size)]
    starts = [sum(counts[:r]) for r in range(size)]
    return list(zip(starts, counts))


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_reducescatter_every_dtype_uneven_dim0(dtype, op_name):
    size, me = hvd.size(), hvd.rank()
    op = hvd.Sum if op_name == "Sum" else hvd.Average
    pairs = []
    for seed, shape in enumerate([(2 * size + 1,), (size + 2, 3), (3 * size, 2, 2)]):
        inputs = [rank_input(dtype, r, shape, seed) for r in range(size)]
        result = hvd.reducescatter(inputs[me], op=op, name=f"rs.{op_name}.{dtype_id(dtype)}.{seed}")
        start, count = blocks(size, shape[0])[me]
        pairs.append((f"{shape}", result, reference_reduce(op, inputs, dtype)[start:start + count]))
    check_results(pairs, dtype)


def test_reducescatter_default_op_is_average_and_scales_apply():
    size, me = hvd.size(), hvd.rank()
    inputs = [rank_input(torch.float64, r, (2 * size, 3), seed=40) for r in range(size)]
    start, count = blocks(size, 2 * size)[me]
    averaged = hvd.reducescatter(inputs[me], name="rs.default")
    scaled = hvd.reducescatter(inputs[me], op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0, name="rs.scaled")
    total = torch.stack([wide(t) for t in inputs]).sum(dim=0)[start:start + count]
    check_results([("average", averaged, total / size), ("scaled", scaled, total * 1.5)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16, torch.bool], ids=dtype_id)
def test_reducescatter_async_fused_and_grouped(dtype):
    size, me = hvd.size(), hvd.rank()
    shapes = [(size + 1, 2), (3 * size,), (size, 2, 2)]
    inputs = [[rank_input(dtype, r, shape, seed=50 + i) for r in range(size)] for i, shape in enumerate(shapes)]
    handles = [hvd.reducescatter_async(per_rank[me], op=hvd.Sum, name=f"rs.fused.{dtype_id(dtype)}.{i}")
               for i, per_rank in enumerate(inputs)]
    fused = [hvd.synchronize(h) for h in handles]
    grouped = hvd.grouped_reducescatter([p[me] for p in inputs], op=hvd.Sum, name=f"rs.grouped.{dtype_id(dtype)}")
    grouped_async = hvd.synchronize(hvd.grouped_reducescatter_async([p[me] for p in inputs], op=hvd.Sum))
    pairs = []
    for i, per_rank in enumerate(inputs):
        start, count = blocks(size, shapes[i][0])[me]
        expected = reference_reduce(hvd.Sum, per_rank, dtype)[start:start + count]
        pairs += [(f"fused {i}", fused[i], expected), (f"grouped {i}", grouped[i], expected),
                  (f"grouped async {i}", grouped_async[i], expected)]
    check_results(pairs, dtype)


def test_reducescatter_with_compression_restores_dtype():
    size, me = hvd.size(), hvd.rank()
    inputs = [rank_input(torch.float32, r, (2 * size,), seed=60) for r in range(size)]
    for compressor in (hvd.Compression.fp16, hvd.Compression.bf16):
        result = hvd.reducescatter(inputs[me], op=hvd.Sum, compression=compressor)
        start, count = blocks(size, 2 * size)[me]
        check_on_all_ranks(result.dtype == torch.float32, lambda: f"dtype {result.dtype}")
        check_results([("compressed", result, reference_reduce(hvd.Sum, inputs, torch.float32)[start:start + count])],
                      torch.bfloat16)


def test_reducescatter_errors():
    raises_on_all_ranks(ValueError, lambda: hvd.reducescatter(torch.tensor(float(hvd.rank()))))
    text = raises_on_all_ranks(RuntimeError, lambda: hvd.reducescatter(torch.ones(4), op=hvd.Adasum))
    check_on_all_ranks("Adasum" in text, lambda: text)
    require_ranks(2)
    raises_on_all_ranks(RuntimeError, lambda: hvd.reducescatter(torch.ones([17 + hvd.rank()] * 2), name="rs.shape"))
    dtype = torch.int32 if hvd.rank() % 2 else torch.float32
    raises_on_all_ranks(RuntimeError, lambda: hvd.reducescatter(torch.ones(4, dtype=dtype), name="rs.dtype"))
    check_results([("after", hvd.reducescatter(torch.ones(hvd.size()), op=hvd.Sum), torch.full((1,), 1.0 * hvd.size()))])
