"""Errors as Horovod's TensorFlow ops give them: ranks that disagree get tf.errors.FailedPreconditionError
on every rank, naming the tensor and the ranks (inside a tf.function: a tf.errors.OpError with
that text), an argument the runtime refuses is tf.errors.InvalidArgumentError (in a graph too),
and the runtime stays usable."""

import numpy as np
import tensorflow as tf

import korovod.tensorflow as hvd
from tf_helpers import check_on_all_ranks, check_results, raises_on_all_ranks, require_ranks


def _still_works():
    check_results([("after", hvd.allreduce(tf.ones([3]), op=hvd.Sum), np.full(3, float(hvd.size())))])


def test_shape_mismatch_raises_on_every_rank_naming_tensor_and_ranks_then_recovers():
    require_ranks(2)
    tensor = tf.ones([2 + hvd.rank(), 3])
    text = raises_on_all_ranks(tf.errors.FailedPreconditionError, lambda: hvd.allreduce(tensor, name="mismatch.shape"))
    check_on_all_ranks("mismatch.shape" in text and "rank" in text, lambda: f"error text: {text}")
    _still_works()


def test_dtype_mismatch_raises_on_every_rank():
    require_ranks(2)
    tensor = tf.ones([4], tf.int32 if hvd.rank() % 2 else tf.float32)
    text = raises_on_all_ranks(tf.errors.FailedPreconditionError, lambda: hvd.allgather(tensor, name="mismatch.dtype"))
    check_on_all_ranks("mismatch.dtype" in text, lambda: f"error text: {text}")
    _still_works()


def test_mismatch_inside_a_tf_function_surfaces_as_a_tensorflow_error_naming_the_tensor():
    require_ranks(2)

    @tf.function
    def f(x):
        return hvd.allreduce(x, name="mismatch.in_graph")

    text = raises_on_all_ranks(tf.errors.OpError, lambda: f(tf.ones([3 + hvd.rank()])))
    check_on_all_ranks("mismatch.in_graph" in text, lambda: f"error text: {text}")
    _still_works()


def test_broadcast_root_mismatch_raises_on_every_rank():
    require_ranks(2)
    raises_on_all_ranks(tf.errors.FailedPreconditionError,
                        lambda: hvd.broadcast(tf.ones([2]), hvd.rank(), name="mismatch.root"))
    _still_works()


def test_an_argument_the_runtime_refuses_is_invalid_argument_eagerly_and_in_a_graph():
    require_ranks(2)
    rows = tf.ones([hvd.size() + 1, 2])  # alltoall without splits: size + 1 rows do not divide

    @tf.function
    def f(x):
        return hvd.alltoall(x, name="refused.graph")

    for label, action in [("eager", lambda: hvd.alltoall(rows, name="refused.eager")), ("graph", lambda: f(rows))]:
        text = raises_on_all_ranks(tf.errors.InvalidArgumentError, action)
        check_on_all_ranks("not divisible" in text, lambda: f"{label}: error text: {text}")
    _still_works()


def test_an_unknown_process_set_is_a_value_error_as_horovods():
    """Horovod's allreduce asks process_set.size() first: ValueError for a set the runtime does not
    know (its test_horovod_allreduce_process_set_id_error), eagerly, in a tf.function, grouped."""
    fake = hvd.ProcessSet([0])
    fake.process_set_id = 10  # as Horovod's test does: an id no one registered
    tensor = tf.ones([4])

    @tf.function
    def in_graph(x):
        return hvd.allreduce(x, process_set=fake)

    for label, action in [("eager", lambda: hvd.allreduce(tensor, process_set=fake)),
                          ("tf.function", lambda: in_graph(tensor)),
                          ("grouped", lambda: hvd.grouped_allreduce([tensor], process_set=fake)),
                          ("unregistered", lambda: hvd.allreduce(tensor, process_set=hvd.ProcessSet([0])))]:
        text = raises_on_all_ranks(ValueError, action)
        check_on_all_ranks("10" in text or "registered" in text, lambda: f"{label}: error text: {text}")
    _still_works()


def test_horovods_private_executing_eagerly_is_there():
    assert hvd._executing_eagerly() is True
