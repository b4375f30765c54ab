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
