"""korovod's own TensorFlow graph ops (libkorovod_tf_ops.so, korovod/tensorflow/_graph.py
native_op): asynchronous kernels, so the independent collectives of one Session.run never wait
for an inter-op thread each, a disagreement among ranks arrives as FailedPreconditionError in a
graph too, and a graph traced before shutdown() runs on the runtime of the next init()."""

import os

import numpy as np
import pytest
import tensorflow as tf

import korovod.tensorflow as hvd
from korovod.tensorflow import _graph
from tf_helpers import check_on_all_ranks, check_results, raises_on_all_ranks, require_ranks

OP_TYPES = {"KorovodAllreduce", "KorovodAllgather", "KorovodBroadcast", "KorovodAlltoall", "KorovodReducescatter"}


def require_native():
    status = _graph.native_status()
    if os.environ.get("KOROVOD_TF_NATIVE_OPS") == "0" or status.startswith("a GPU is visible"):
        pytest.skip(f"graph collectives run as tf.py_function in this configuration: {status}")
    # Anywhere else the ops must load: a package without them is a broken build.
    assert status == "", status


def test_graph_collectives_are_korovods_asynchronous_ops():
    require_native()
    size, rank = hvd.size(), hvd.rank()

    def f(x):
        return (hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0),
                hvd.allgather(x), hvd.broadcast(x, size - 1),
                hvd.alltoall(tf.tile(x, [size, 1])),
                hvd.reducescatter(tf.tile(x, [size, 1]), op=hvd.Sum))

    x = tf.fill([2, 3], float(rank + 1))
    traced = tf.function(f)
    types = {op.type for op in traced.get_concrete_function(x).graph.get_operations()}
    check_on_all_ranks(OP_TYPES <= types and "EagerPyFunc" not in types, lambda: f"graph op types {sorted(types)}")
    reduced, gathered, broadcast, exchanged, scattered = traced(x)
    total = size * (size + 1) / 2
    rows = np.repeat(np.arange(1, size + 1, dtype=np.float64), 2)
    check_results([
        ("allreduce", reduced, np.full([2, 3], 1.5 * total)),
        ("allgather", gathered, np.repeat(rows[:, None], 3, axis=1)),
        ("broadcast", broadcast, np.full([2, 3], float(size))),
        ("alltoall", exchanged, np.repeat(rows[:, None], 3, axis=1)),
        ("reducescatter", scattered, np.full([2, 3], total)),
    ])
    # The static shapes the ops leave: known where the input says, rows unknown where ranks decide.
    check_on_all_ranks(gathered.shape == [2 * size, 3] and reduced.shape == [2, 3])
    graph_out = traced.get_concrete_function(x).structured_outputs
    check_on_all_ranks(graph_out[1].shape.as_list() == [None, 3] and graph_out[0].shape.as_list() == [2, 3],
                       lambda: f"static shapes {[o.shape for o in graph_out]}")


def test_alltoall_with_splits_returns_the_received_splits():
    require_ranks(2)
    require_native()
    size, rank = hvd.size(), hvd.rank()
    # Rank r sends r + 1 + i rows to rank i, each row holding r.
    splits = [rank + 1 + i for i in range(size)]
    x = tf.fill([sum(splits), 2], float(rank))

    @tf.function
    def f(t, s):
        return hvd.alltoall(t, splits=s, name="graph.alltoall.splits")

    output, received = f(x, tf.constant(splits, tf.int32))
    expected_received = [r + 1 + rank for r in range(size)]
    expected = np.concatenate([np.full([n, 2], float(r)) for r, n in enumerate(expected_received)])
    check_results([("rows", output, expected), ("received_splits", received, np.array(expected_received))])


def test_independent_collectives_in_one_session_run_need_no_thread_each():
    """More independent collectives than inter-op threads, queued in opposite orders on
    neighbouring ranks: a kernel that held its thread while waiting (a tf.py_function) would
    hold the only one on each rank, waiting for an op the other rank cannot start."""
    require_ranks(2)
    require_native()
    count = 24
    size, rank = hvd.size(), hvd.rank()
    graph = tf.Graph()
    with graph.as_default():
        order = list(range(count)) if rank % 2 == 0 else list(reversed(range(count)))
        outputs = {i: hvd.allgather(tf.fill([1 + i % 3, 2], float(rank * 100 + i)), name=f"independent.{i}")
                   for i in order}
        config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            results = session.run(outputs)
    failures = []
    for i in range(count):
        expected = np.concatenate([np.full([1 + i % 3, 2], float(r * 100 + i)) for r in range(size)])
        if results[i].shape != expected.shape or not np.array_equal(results[i], expected):
            failures.append(f"independent.{i}: got {results[i].tolist()}")
    check_on_all_ranks(not failures, lambda: "; ".join(failures[:3]))


def test_disagreement_in_a_graph_is_failed_precondition_on_every_rank():
    require_ranks(2)
    require_native()

    @tf.function
    def f(x):
        return hvd.allreduce(x, name="graph.mismatch")

    text = raises_on_all_ranks(tf.errors.FailedPreconditionError, lambda: f(tf.ones([3 + hvd.rank()])))
    check_on_all_ranks("graph.mismatch" in text and "rank" in text, lambda: f"error text: {text}")
    graph = tf.Graph()
    with graph.as_default():
        mismatch = hvd.broadcast(tf.ones([2]), hvd.rank(), name="session.root.mismatch")
        with tf.compat.v1.Session(graph=graph) as session:
            text = raises_on_all_ranks(tf.errors.FailedPreconditionError, lambda: session.run(mismatch))
    check_on_all_ranks("session.root.mismatch" in text, lambda: f"error text: {text}")
    check_results([("after", hvd.allreduce(tf.ones([3]), op=hvd.Sum), np.full(3, float(hvd.size())))])


def test_a_graph_traced_before_shutdown_runs_on_the_next_init():
    require_native()
    f = tf.function(lambda x: hvd.allreduce(x, op=hvd.Sum, name="graph.reinit"))
    check_results([("before", f(tf.ones([2])), np.full(2, float(hvd.size())))])
    hvd.shutdown()
    try:
        with pytest.raises(tf.errors.FailedPreconditionError, match="hvd.init"):
            f(tf.ones([2]))
    finally:
        hvd.init()
    check_results([("after init", f(tf.ones([2])), np.full(2, float(hvd.size())))])


def test_unsupported_dtype_is_refused_when_the_graph_is_built():
    require_native()
    with pytest.raises(ValueError, match="not supported"):
        tf.function(lambda x: hvd.allreduce(x))(tf.constant([1 + 2j]))
