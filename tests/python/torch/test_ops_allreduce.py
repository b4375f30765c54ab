"""allreduce in all its forms: every CPU dtype x every op, async, in place, fused, grouped, scaled,
compressed, non-contiguous inputs, and its errors (raised on every rank, runtime usable after)."""

import warnings

import pytest
import torch

import korovod.torch as hvd
from ops_helpers import (ALL_DTYPES, FLOAT_DTYPES, REDUCE_OPS, check_on_all_ranks, check_results,
                         dtype_id, raises_on_all_ranks, rank_input, reference_reduce, require_ranks, wide)

SHAPES = [(5,), (4, 3), (2, 3, 4)]


def every_rank_input(dtype, shape, seed, low=-3, high=4):
    return [rank_input(dtype, r, shape, seed, low, high) for r in range(hvd.size())]


@pytest.mark.parametrize("op_name", list(REDUCE_OPS))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_allreduce_every_dtype_and_op(dtype, op_name):
    op = REDUCE_OPS[op_name]
    # Product stays small (|x| <= 2) so that int8 and float16 hold it exactly.
    low, high = (-2, 3) if op_name == "Product" else (-3, 4)
    pairs = []
    for seed, shape in enumerate(SHAPES):
        inputs = every_rank_input(dtype, shape, seed, low, high)
        mine = inputs[hvd.rank()].clone()
        result = hvd.allreduce(mine, op=op, name=f"every_dtype.{op_name}.{dtype_id(dtype)}.{seed}")
        pairs.append((f"{shape}", result, reference_reduce(op, inputs, dtype)))
        pairs.append((f"{shape} input unchanged", mine, inputs[hvd.rank()]))
        check_on_all_ranks(result.dtype == dtype, lambda: f"result dtype {result.dtype}")
    check_results(pairs, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_allreduce_in_place_returns_the_same_tensor(dtype):
    inputs = every_rank_input(dtype, (3, 4), seed=3)
    tensor = inputs[hvd.rank()].clone()
    result = hvd.allreduce_(tensor, name=f"in_place.{dtype_id(dtype)}", op=hvd.Sum)
    check_on_all_ranks(result is tensor, lambda: "allreduce_ returned a new tensor")
    check_results([("in place", tensor, reference_reduce(hvd.Sum, inputs, dtype))], dtype)


def test_allreduce_positional_arguments_as_horovod_tests_use_them():
    # hvd.allreduce_(t, None, 'name', hvd.Sum): (average, name, op)
    result = hvd.allreduce_(torch.IntTensor([1]), None, "positional", hvd.Sum)
    check_results([("sum", result, torch.IntTensor([hvd.size()]))])


def test_deprecated_average_argument():
    inputs = every_rank_input(torch.float64, (6,), seed=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        averaged = hvd.allreduce(inputs[hvd.rank()], average=True, name="deprecated.average")
        summed = hvd.allreduce(inputs[hvd.rank()], average=False, name="deprecated.sum")
    check_results([("average=True", averaged, reference_reduce(hvd.Average, inputs, torch.float64)),
                   ("average=False", summed, reference_reduce(hvd.Sum, inputs, torch.float64))])
    check_on_all_ranks(any(issubclass(w.category, DeprecationWarning) for w in caught), lambda: "no warning")
    raises_on_all_ranks(ValueError, lambda: hvd.allreduce(inputs[0], average=True, op=hvd.Sum))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_allreduce_async_fused(dtype):
    """Many async ops in flight at once (the runtime fuses them), then synchronize each."""
    inputs = [every_rank_input(dtype, (i + 1, 3), seed=10 + i) for i in range(8)]
    handles = [hvd.allreduce_async(per_rank[hvd.rank()], name=f"fused.{dtype_id(dtype)}.{i}", op=hvd.Sum)
               for i, per_rank in enumerate(inputs)]
    results = [hvd.synchronize(h) for h in handles]
    check_results([(f"tensor {i}", result, reference_reduce(hvd.Sum, per_rank, dtype))
                   for i, (result, per_rank) in enumerate(zip(results, inputs))], dtype)


def test_allreduce_async_in_place_and_poll():
    inputs = every_rank_input(torch.float32, (64,), seed=20)
    tensor = inputs[hvd.rank()].clone()
    handle = hvd.allreduce_async_(tensor, name="async_in_place", op=hvd.Max)
    while not hvd.poll(handle):
        pass
    result = hvd.synchronize(handle)
    check_on_all_ranks(result is tensor, lambda: "synchronize did not return the input tensor")
    check_results([("max", tensor, reference_reduce(hvd.Max, inputs, torch.float32))])
    check_on_all_ranks(hvd.synchronize(handle) is None, lambda: "a second synchronize returned a value")
    raises_on_all_ranks(ValueError, lambda: hvd.poll(handle))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int32, torch.int64], ids=dtype_id)
def test_allreduce_prescale_and_postscale(dtype):
    pre, post = (2.0, 3.0) if not dtype.is_floating_point else (0.5, 1.5)
    inputs = every_rank_input(dtype, (4, 5), seed=30)
    result = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, prescale_factor=pre, postscale_factor=post,
                           name=f"scaled.{dtype_id(dtype)}")
    expected = (torch.stack([wide(t) for t in inputs]) * pre).sum(dim=0) * post
    averaged = hvd.allreduce(inputs[hvd.rank()], op=hvd.Average, postscale_factor=post,
                             name=f"scaled.average.{dtype_id(dtype)}")
    expected_average = torch.stack([wide(t) for t in inputs]).sum(dim=0) * (post / hvd.size())
    if not dtype.is_floating_point:
        expected_average = expected_average.trunc()
    check_results([("sum", result, expected.to(dtype)), ("average", averaged, expected_average.to(dtype))], dtype)


def test_allreduce_non_contiguous_input_and_in_place_target():
    inputs = every_rank_input(torch.float64, (6, 4), seed=40)
    mine = inputs[hvd.rank()].clone()
    transposed = mine.t()  # non-contiguous view
    result = hvd.allreduce(transposed, op=hvd.Sum, name="non_contiguous")
    target = mine.clone().t()
    hvd.allreduce_(target, op=hvd.Sum, name="non_contiguous.in_place")
    expected = reference_reduce(hvd.Sum, inputs, torch.float64).t()
    check_results([("out of place", result, expected), ("in place", target, expected)])


def test_allreduce_of_an_empty_and_a_scalar_tensor():
    empty = hvd.allreduce(torch.empty(0, 3), op=hvd.Sum, name="empty")
    scalar = hvd.allreduce(torch.tensor(float(hvd.rank() + 1)), op=hvd.Sum, name="scalar")
    check_results([("empty", empty, torch.empty(0, 3)),
                   ("scalar", scalar, torch.tensor(float(hvd.size() * (hvd.size() + 1) // 2)))])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_grouped_allreduce(dtype):
    inputs = [every_rank_input(dtype, shape, seed=50 + i) for i, shape in enumerate(SHAPES)]
    mine = [per_rank[hvd.rank()] for per_rank in inputs]
    results = hvd.grouped_allreduce(mine, op=hvd.Sum, name=f"grouped.{dtype_id(dtype)}")
    in_place = [t.clone() for t in mine]
    returned = hvd.grouped_allreduce_(in_place, op=hvd.Sum, name=f"grouped_.{dtype_id(dtype)}")
    handle = hvd.grouped_allreduce_async([t.clone() for t in mine], op=hvd.Min)
    async_results = hvd.synchronize(handle)
    pairs = []
    for i, per_rank in enumerate(inputs):
        expected = reference_reduce(hvd.Sum, per_rank, dtype)
        pairs += [(f"grouped {i}", results[i], expected), (f"in place {i}", in_place[i], expected),
                  (f"async min {i}", async_results[i], reference_reduce(hvd.Min, per_rank, dtype))]
    check_on_all_ranks(all(r is t for r, t in zip(returned, in_place)), lambda: "grouped_allreduce_ copied")
    check_results(pairs, dtype)


def test_grouped_allreduce_of_mixed_dtypes():
    inputs = [every_rank_input(torch.float32, (3,), 60), every_rank_input(torch.int64, (2, 2), 61),
              every_rank_input(torch.bfloat16, (5,), 62)]
    results = hvd.grouped_allreduce([per_rank[hvd.rank()] for per_rank in inputs], op=hvd.Sum)
    check_results([(f"{i}", r, reference_reduce(hvd.Sum, per_rank, per_rank[0].dtype))
                   for i, (r, per_rank) in enumerate(zip(results, inputs))])


@pytest.mark.parametrize("compression", ["fp16", "bf16", "none"])
def test_allreduce_with_compression(compression):
    compressor = getattr(hvd.Compression, compression)
    inputs = every_rank_input(torch.float32, (16,), seed=70)
    result = hvd.allreduce(inputs[hvd.rank()] / 4, op=hvd.Sum, compression=compressor,
                           name=f"compressed.{compression}")
    integers = every_rank_input(torch.int32, (4,), seed=71)
    int_result = hvd.allreduce(integers[hvd.rank()], op=hvd.Sum, compression=compressor,
                               name=f"compressed.int.{compression}")
    check_on_all_ranks(result.dtype == torch.float32 and int_result.dtype == torch.int32,
                       lambda: f"dtypes after decompress: {result.dtype}, {int_result.dtype}")
    check_results([("float", result, reference_reduce(hvd.Sum, [t / 4 for t in inputs], torch.float32)),
                   ("int", int_result, reference_reduce(hvd.Sum, integers, torch.int32))], torch.float16)


def test_compressors_cast_floats_only():
    for compressor, wire in ((hvd.Compression.fp16, torch.float16), (hvd.Compression.bf16, torch.bfloat16)):
        for dtype in (torch.float32, torch.float64):
            compressed, ctx = compressor.compress(torch.ones(3, dtype=dtype))
            assert compressed.dtype == wire
            assert compressor.decompress(compressed, ctx).dtype == dtype
        compressed, ctx = compressor.compress(torch.ones(3, dtype=torch.int64))
        assert compressed.dtype == torch.int64 and compressor.decompress(compressed, ctx).dtype == torch.int64
    # Horovod's names stay importable from korovod.torch.compression (one implementation in korovod.common).
    from korovod.torch import compression
    assert (compression.FP16Compressor, compression.BF16Compressor) == (hvd.Compression.fp16, hvd.Compression.bf16)
    assert issubclass(compression.FP16Compressor, compression.Compressor)
    assert hvd.Compression.none is compression.NoneCompressor


def test_grouped_allreduce_with_compression():
    inputs = [every_rank_input(torch.float64, (4,), 80), every_rank_input(torch.float32, (3,), 81)]
    results = hvd.grouped_allreduce([p[hvd.rank()] for p in inputs], op=hvd.Sum, compression=hvd.Compression.fp16)
    check_on_all_ranks([r.dtype for r in results] == [torch.float64, torch.float32], lambda: "dtypes not restored")
    check_results([(f"{i}", r, reference_reduce(hvd.Sum, p, p[0].dtype))
                   for i, (r, p) in enumerate(zip(results, inputs))], torch.float16)


def test_unknown_op_and_dtype_are_value_errors():
    raises_on_all_ranks(ValueError, lambda: hvd.allreduce(torch.ones(2), op=17))
    raises_on_all_ranks(ValueError, lambda: hvd.allreduce(torch.ones(2, dtype=torch.complex64)))


def test_shape_mismatch_raises_runtime_error_on_every_rank_then_recovers():
    require_ranks(2)
    tensor = torch.ones([17 + hvd.rank()] * 3)
    text = raises_on_all_ranks(RuntimeError, lambda: hvd.allreduce(tensor, name="mismatch.shape"))
    check_on_all_ranks("mismatch.shape" in text, lambda: f"error does not name the tensor: {text}")
    same_count = torch.ones([17, 23 * 57] if hvd.rank() == 0 else [17, 23, 57])
    raises_on_all_ranks(RuntimeError, lambda: hvd.allreduce(same_count, name="mismatch.rank"))
    check_results([("after", hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full((3,), float(hvd.size())))])


def test_dtype_and_op_mismatch_raise_runtime_error_on_every_rank():
    require_ranks(2)
    tensor = torch.ones(5, dtype=torch.int32 if hvd.rank() % 2 else torch.float32)
    raises_on_all_ranks(RuntimeError, lambda: hvd.allreduce(tensor, name="mismatch.dtype"))
    op = hvd.Sum if hvd.rank() == 0 else hvd.Max
    raises_on_all_ranks(RuntimeError, lambda: hvd.allreduce(torch.ones(5), op=op, name="mismatch.op"))
    check_results([("after", hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full((3,), float(hvd.size())))])


def test_duplicate_name_on_one_rank_raises_value_error():
    """A name queued twice on one rank: the second call raises ValueError there. Each rank takes a
    turn while the others have not queued that name yet (so the first cannot have completed)."""
    require_ranks(2)
    tensor = torch.ones(4)
    pending, outcomes = {}, []
    for turn in range(hvd.size()):
        if hvd.rank() == turn:
            pending[turn] = hvd.allreduce_async(tensor, name=f"duplicate_name.{turn}", op=hvd.Sum)
            try:
                hvd.allreduce_async(tensor, name=f"duplicate_name.{turn}")
                outcomes.append("no error")
            except ValueError as e:
                outcomes.append(f"duplicate_name.{turn}" in str(e) or str(e))
        hvd.barrier()
    for turn in range(hvd.size()):
        if hvd.rank() != turn:
            pending[turn] = hvd.allreduce_async(tensor, name=f"duplicate_name.{turn}", op=hvd.Sum)
    results = [hvd.synchronize(pending[turn]) for turn in range(hvd.size())]
    check_on_all_ranks(outcomes == [True], lambda: f"second enqueue: {outcomes}")
    check_results([(f"op {i}", r, torch.full((4,), float(hvd.size()))) for i, r in enumerate(results)])
