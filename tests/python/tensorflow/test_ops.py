"""korovod.tensorflow collectives: every op x dtype, eagerly and inside tf.function (where each
collective is a graph op), against results every rank computes from every rank's input."""

import importlib

import numpy as np
import pytest
import tensorflow as tf

import korovod.tensorflow as hvd
from adasum_reference import adasum_tree
from tf_helpers import (ALL_DTYPES, FLOAT_DTYPES, MODES, NUMERIC_DTYPES, REDUCE_OPS, check_on_all_ranks,
                        check_results, rank_tensor, rank_values, reference_reduce, require_ranks, run)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op_name", sorted(REDUCE_OPS))
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_allreduce_every_op_and_dtype(dtype, op_name, mode):
    op = REDUCE_OPS[op_name]
    n, r = hvd.size(), hvd.rank()
    shape = [3, 4]
    result = run(mode, lambda x: hvd.allreduce(x, op=op, name=f"ar.{op_name}.{dtype.name}"),
                 rank_tensor(dtype, r, shape, seed=op))
    expected = reference_reduce(op, [rank_values(dtype, k, shape, seed=op) for k in range(n)], dtype)
    check_on_all_ranks(result.dtype == dtype, lambda: f"dtype {result.dtype}")
    check_results([("allreduce", result, expected)])


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_default_is_average_and_scales_apply(mode):
    n, r = hvd.size(), hvd.rank()
    x = tf.fill([5], float(r + 1))
    mean = sum(range(1, n + 1)) / n

    def f(x):
        return (hvd.allreduce(x), hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0),
                hvd.allreduce(tf.Variable(x) if mode == "eager" else x, op=hvd.Max))

    average, scaled, maximum = run(mode, f, x)
    check_results([("average", average, np.full(5, mean)),
                   ("scaled", scaled, np.full(5, 1.5 * sum(range(1, n + 1)))),
                   ("max", maximum, np.full(5, float(n)))])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("compression", ["fp16", "bf16"])
def test_allreduce_compression_keeps_the_dtype(compression, mode):
    n, r = hvd.size(), hvd.rank()
    x = tf.fill([4], float(r) + 0.5)
    result = run(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, compression=getattr(hvd.Compression, compression)), x)
    check_on_all_ranks(result.dtype == tf.float32, lambda: f"dtype {result.dtype}")
    check_results([("compressed", result, np.full(4, sum(k + 0.5 for k in range(n))))], dtype=tf.bfloat16)


@pytest.mark.parametrize("framework", ["tensorflow", "keras"])
def test_compressors_cast_floats_only(framework):
    # korovod.common.compression with each framework's cast: tf.cast, keras.ops.cast.
    compression = importlib.import_module(f"korovod.{framework}").Compression
    for compressor, wire in ((compression.fp16, tf.float16), (compression.bf16, tf.bfloat16)):
        for dtype in (tf.float16, tf.float32, tf.float64):
            compressed, ctx = compressor.compress(tf.ones([3], dtype=dtype))
            assert compressed.dtype == wire, (compressor, dtype)
            restored = compressor.decompress(compressed, ctx)
            assert restored.dtype == dtype and restored.numpy().tolist() == [1, 1, 1], (compressor, dtype)
        compressed, ctx = compressor.compress(tf.ones([3], dtype=tf.int64))
        assert compressed.dtype == tf.int64 and compressor.decompress(compressed, ctx).dtype == tf.int64
    x = tf.ones([2])
    compressed, ctx = compression.none.compress(x)
    assert compressed is x and ctx is None and compression.none.decompress(x, None) is x
    assert compression.fp16.__name__ == "FP16Compressor"
    assert compression.fp16.__module__ == f"korovod.{framework}.compression"


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_of_mixed_shapes(mode):
    n, r = hvd.size(), hvd.rank()
    tensors = [tf.fill([2, 3], float(r)), tf.fill([7], float(2 * r)), tf.fill([], float(r + 1))]
    results = run(mode, lambda *ts: hvd.grouped_allreduce(list(ts), op=hvd.Sum, name="grouped"), *tensors)
    total = sum(range(n))
    check_results([("0", results[0], np.full([2, 3], float(total))), ("1", results[1], np.full([7], 2.0 * total)),
                   ("2", results[2], np.array(float(total + n)))])


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_of_indexed_slices_gathers_values_and_indices(mode):
    n, r = hvd.size(), hvd.rank()
    slices = tf.IndexedSlices(tf.fill([1, 3], float(r + 1)), tf.constant([r]), tf.constant([n, 3]))
    result = run(mode, lambda v, i: hvd.allreduce(tf.IndexedSlices(v, i, tf.constant([n, 3]))), slices.values,
                 slices.indices)
    dense = tf.convert_to_tensor(result)
    expected = np.array([[(k + 1) / n] * 3 for k in range(n)])
    check_results([("dense", dense, expected)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_allgather_every_dtype_with_uneven_first_dims(dtype, mode):
    n, r = hvd.size(), hvd.rank()
    result = run(mode, lambda x: hvd.allgather(x), rank_tensor(dtype, r, [r + 1, 2], seed=5))
    expected = np.concatenate([rank_values(dtype, k, [k + 1, 2], seed=5) for k in range(n)])
    check_on_all_ranks(result.dtype == dtype, lambda: f"dtype {result.dtype}")
    check_results([("allgather", result, expected)])


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allgather(mode):
    n, r = hvd.size(), hvd.rank()
    results = run(mode, lambda a, b: hvd.grouped_allgather([a, b]), tf.fill([r + 1], r), tf.fill([1, 2], 2.0 * r))
    check_results([("ints", results[0], np.concatenate([np.full(k + 1, k) for k in range(n)])),
                   ("floats", results[1], np.concatenate([np.full([1, 2], 2.0 * k) for k in range(n)]))])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_broadcast_every_dtype_from_every_root(dtype, mode):
    n, r = hvd.size(), hvd.rank()
    pairs = []
    for root in range(n):
        result = run(mode, lambda x: hvd.broadcast(x, root, name=f"bcast.{root}"), rank_tensor(dtype, r, [2, 3], 9))
        pairs.append((f"root {root}", result, rank_values(dtype, root, [2, 3], 9)))
    check_results(pairs)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_in_place_into_variables(mode):
    n, r = hvd.size(), hvd.rank()
    variables = [tf.Variable(tf.fill([3], float(r))), tf.Variable(tf.fill([2, 2], r))]
    values = run(mode, lambda: hvd.broadcast_(variables, n - 1))
    check_results([("v0", variables[0], np.full(3, float(n - 1))), ("v1", variables[1], np.full([2, 2], n - 1)),
                   ("returned", values[0], np.full(3, float(n - 1)))])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_alltoall_with_and_without_splits(dtype, mode):
    n, r = hvd.size(), hvd.rank()
    # Rank r sends k + 1 rows to rank k.
    splits = [k + 1 for k in range(n)]
    rows = sum(splits)
    x = rank_tensor(dtype, r, [rows, 2], seed=11)

    def f(x):
        output, received = hvd.alltoall(x, splits=tf.constant(splits, dtype=tf.int32))
        even = hvd.alltoall(x[:n])
        return output, received, even

    output, received, even = run(mode, f, x)
    expected = np.concatenate([rank_values(dtype, k, [rows, 2], 11)[sum(splits[:r]):sum(splits[:r + 1])]
                               for k in range(n)])
    expected_even = np.concatenate([rank_values(dtype, k, [rows, 2], 11)[r:r + 1] for k in range(n)])
    check_results([("alltoall", output, expected), ("received", received, np.full(n, r + 1)),
                   ("even", even, expected_even)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op_name", ["Sum", "Average"])
@pytest.mark.parametrize("dtype", [tf.int32, tf.int64] + FLOAT_DTYPES, ids=lambda d: d.name)
def test_reducescatter_uneven_rows(dtype, op_name, mode):
    n, r = hvd.size(), hvd.rank()
    op = REDUCE_OPS[op_name]
    rows = 2 * n + 1  # ranks below rows % n get one extra row
    result = run(mode, lambda x: hvd.reducescatter(x, op=op), rank_tensor(dtype, r, [rows, 3], seed=13))
    total = reference_reduce(op, [rank_values(dtype, k, [rows, 3], 13) for k in range(n)], dtype)
    counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
    start = sum(counts[:r])
    check_results([("block", result, total[start:start + counts[r]])])


@pytest.mark.parametrize("mode", MODES)
def test_grouped_reducescatter(mode):
    n, r = hvd.size(), hvd.rank()
    results = run(mode, lambda a, b: hvd.grouped_reducescatter([a, b], op=hvd.Sum),
                  tf.fill([n, 2], float(r)), tf.fill([2 * n], float(r + 1)))
    check_results([("a", results[0], np.full([1, 2], float(sum(range(n))))),
                   ("b", results[1], np.full([2], float(sum(range(1, n + 1)))))])


@pytest.mark.parametrize("mode", MODES)
def test_join_returns_the_last_rank_and_barrier_passes(mode):
    def f():
        hvd.barrier()
        return hvd.join()

    last = run(mode, f)
    check_on_all_ranks(0 <= int(last) < hvd.size(), lambda: f"join returned {int(last)}")


def test_runtime_valued_ops_in_a_function():
    values = tf.function(lambda: (hvd.size_op(), hvd.rank_op(), hvd.local_size_op(), hvd.local_rank_op(),
                                  hvd.process_set_included_op()))()
    check_on_all_ranks([int(v) for v in values] == [hvd.size(), hvd.rank(), hvd.local_size(), hvd.local_rank(), 1],
                       lambda: f"got {[int(v) for v in values]}")


@pytest.mark.parametrize("mode", MODES)
def test_process_set_of_the_even_ranks(mode):
    require_ranks(2)
    evens = hvd.add_process_set([k for k in range(hvd.size()) if k % 2 == 0])
    try:
        # Horovod's private table, which its test_tensorflow_process_sets_dynamic.py reads.
        table = hvd.mpi_ops._basics._get_process_set_ids_and_ranks()
        expected = {0: list(range(hvd.size())), evens.process_set_id: evens.ranks}
        check_on_all_ranks(table == expected, lambda: f"process set table {table}, expected {expected}")
        if hvd.rank() % 2 == 0:
            result = run(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, process_set=evens), tf.fill([3], 1.0))
            ok = np.allclose(result.numpy(), evens.size())
        else:
            ok = True
        check_on_all_ranks(ok, lambda: "evens allreduce")
    finally:
        hvd.remove_process_set(evens)


def test_graph_names_follow_horovod_and_are_unique_per_graph():
    captured = {}

    @tf.function
    def f(x):
        with tf.name_scope("outer"):
            a = hvd.allreduce(x)
            b = hvd.allreduce(x)
        captured["ops"] = [op.name for op in tf.compat.v1.get_default_graph().get_operations()
                           if op.type in ("KorovodAllreduce", "EagerPyFunc")]
        return a + b

    result = f(tf.ones([2]))
    names = captured["ops"]
    check_on_all_ranks(len(names) == 2 and len(set(names)) == 2 and all("HorovodAllreduce_x_0" in n for n in names),
                       lambda: f"graph ops {names}")
    check_results([("sum", result, np.full(2, 2.0))])


def test_xla_is_refused_with_a_message_that_says_what_to_do():
    with pytest.raises(NotImplementedError, match="jit_compile=False"):
        tf.function(lambda x: hvd.allreduce(x), jit_compile=True)(tf.ones([2]))


def test_unsupported_dtype_and_op_are_value_errors():
    with pytest.raises(ValueError, match="not supported"):
        hvd.allreduce(tf.constant([1 + 2j]))
    with pytest.raises(ValueError, match="unknown reduction op"):
        hvd.allreduce(tf.ones([2]), op=17)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64], ids=lambda d: d.name)
def test_allreduce_adasum_is_the_pairwise_tree(dtype, mode):
    n, r = hvd.size(), hvd.rank()
    values = [np.random.default_rng(50 + k).normal(0.2, 1.0, 37) for k in range(n)]
    held = [tf.cast(tf.constant(v), dtype).numpy().astype(np.float64) for v in values]  # what dtype keeps
    a, b = run(mode, lambda x, y: (hvd.allreduce(x, op=hvd.Adasum, name=f"adasum.{dtype.name}"),
                                   hvd.grouped_allreduce([x, y], op=hvd.Adasum, name=f"adasum.g.{dtype.name}")[1]),
               tf.cast(tf.constant(values[r]), dtype), tf.cast(tf.constant(values[r][:5]), dtype))
    check_on_all_ranks(a.dtype == dtype, lambda: f"dtype {a.dtype}")
    check_results([("allreduce", a, adasum_tree(held)),
                   ("grouped, second tensor", b, adasum_tree([h[:5] for h in held]))])


def test_adasum_of_an_integer_tensor_fails_on_every_rank_naming_it():
    with pytest.raises(tf.errors.OpError, match="Adasum reduces float16, bfloat16, float32 and float64 "
                                                 "tensors, not int32"):
        hvd.allreduce(tf.ones([2], tf.int32), op=hvd.Adasum, name="steps")
    check_results([("usable after", hvd.allreduce(tf.ones([2]), op=hvd.Adasum, name="adasum.after"), np.ones(2))])
