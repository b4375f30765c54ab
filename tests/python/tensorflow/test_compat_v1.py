"""The TF1-style pieces under tf.compat.v1: broadcast_global_variables and
BroadcastGlobalVariablesHook with MonitoredTrainingSession (graph mode, sessions)."""

import numpy as np
import pytest
import tensorflow as tf

import korovod.tensorflow as hvd
from tf_helpers import check_results


def test_broadcast_global_variables_needs_a_graph():
    with pytest.raises(RuntimeError, match="does not support eager execution"):
        hvd.broadcast_global_variables(0)


def test_broadcast_global_variables_op_in_a_session():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.get_variable("v", initializer=tf.fill([3], float(hvd.rank() + 1)), use_resource=True)
        bcast = hvd.broadcast_global_variables(hvd.size() - 1)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(bcast)
            value = session.run(v)
    check_results([("v", tf.constant(value), np.full(3, float(hvd.size())))])


def test_hook_broadcasts_when_monitored_training_session_starts():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.get_variable("w", initializer=tf.fill([2], float(hvd.rank() + 1)), use_resource=True)
        tf.compat.v1.train.get_or_create_global_step()
        hooks = [hvd.BroadcastGlobalVariablesHook(0)]
        with tf.compat.v1.train.MonitoredTrainingSession(hooks=hooks) as session:
            value = session.run(v)
    check_results([("w", tf.constant(value), np.full(2, 1.0))])


def test_broadcast_object_and_allgather_object_with_a_session():
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        obj = hvd.broadcast_object({"from": hvd.rank()}, root_rank=0, session=session)
        gathered = hvd.allgather_object(hvd.rank(), session=session)
    assert obj == {"from": 0}
    assert gathered == list(range(hvd.size()))


def test_sparse_and_reducescatter_gradients_in_a_session_are_one_op_each():
    """In a TF1 graph, independent collectives fetched together can deadlock (each rank starts a
    different few on its inter-op threads; docs/tensorflow.md). Sparse allreduces of a group and
    the gradients of a grouped reducescatter are therefore one grouped allgather each: with 6
    IndexedSlices (12 allgathers before) and 4 reducescatter inputs, one run completes."""
    n, rank = hvd.size(), hvd.rank()
    graph = tf.Graph()
    with graph.as_default():
        slices = [tf.IndexedSlices(tf.fill([1, 2], float(rank + k)), tf.constant([k]), tf.constant([8, 2]))
                  for k in range(6)]
        reduced = hvd.grouped_allreduce(slices, op=hvd.Sum)
        xs = [tf.fill([2 * n, 3], float(k + 1)) for k in range(4)]
        scattered = hvd.grouped_reducescatter(xs, op=hvd.Sum)
        grads = tf.gradients([tf.reduce_sum(s) for s in scattered], xs)
        ops = [len([op for op in graph.get_operations() if op.type == "EagerPyFunc"])]
        with tf.compat.v1.Session(graph=graph) as session:
            values, grad_values = session.run([[r.values for r in reduced], grads])
    assert ops[0] == 3, f"{ops[0]} py_function ops, want 3 (allgather group, reducescatter, its gradient)"
    for k, v in enumerate(values):
        np.testing.assert_allclose(v, np.stack([np.full(2, float(r + k)) for r in range(n)]))
    for g in grad_values:  # Horovod's gradient of a Sum reducescatter: size everywhere (its test's expectation)
        np.testing.assert_allclose(g, np.full([2 * n, 3], float(n)))
