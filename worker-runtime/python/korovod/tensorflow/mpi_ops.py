"""Horovod's horovod.tensorflow.mpi_ops over libkorovod: the collectives on tf.Tensor and
tf.Variable, in eager mode and in graphs, with the gradients Horovod registers for them.

The underscore functions take Horovod's low-level defaults (op=Sum); korovod.tensorflow's
allreduce/reducescatter wrap them with compression, IndexedSlices and op=Average.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import tensorflow as tf

from korovod.common.basics import (Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank, cross_size,
                                   cuda_built, ddl_built, gloo_built, gloo_enabled, init, is_homogeneous,
                                   is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
                                   mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size,
                                   start_timeline, stop_timeline)
from korovod.common.basics import check_reduce_op
from korovod.common.process_sets import process_set_included as _process_set_included
from korovod.common.process_sets import process_set_size as _process_set_size
from korovod.common.process_sets import (ProcessSet, RuntimeBasics, _temp_process_set_object, add_process_set,
                                         global_process_set, remove_process_set)
from korovod.tensorflow import _eager, _graph
from korovod.tensorflow._native import names_for_group

# Horovod's module-level HorovodBasics; its process-set tests call _basics._get_process_set_ids_and_ranks().
_basics = RuntimeBasics()

__all__ = [
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "ProcessSet", "global_process_set", "add_process_set",
    "remove_process_set", "init", "shutdown", "is_initialized", "start_timeline", "stop_timeline", "size",
    "local_size", "cross_size", "rank", "local_rank", "cross_rank", "is_homogeneous", "mpi_threads_supported",
    "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built",
    "cuda_built", "rocm_built", "allgather", "grouped_allgather", "broadcast", "broadcast_", "alltoall", "join",
    "barrier", "size_op", "local_size_op", "rank_op", "local_rank_op", "process_set_included_op",
]


def _ps_id(process_set: ProcessSet) -> int:
    ps_id = process_set.process_set_id
    if ps_id is None:
        raise ValueError(f"{process_set} is not registered with korovod (never added, or removed)")
    return ps_id


def _as_tensor(value) -> tf.Tensor:
    # A tf.Variable is read (the read is what a tape records, so gradients reach the variable).
    return value if isinstance(value, tf.Tensor) else tf.convert_to_tensor(value)


def _start(prefix: str, tensor, name: Optional[str], ignore_name_scope: bool,
           process_set: ProcessSet) -> Tuple[tf.Tensor, int, str, Optional[bytes]]:
    """What a one-tensor collective starts from: `tensor` read, the set's id (checked registered),
    the graph op's name and the collective's name for the runtime (None: the runtime names it)."""
    tensor = _as_tensor(tensor)
    ps_id = _ps_id(process_set)
    key = _graph.op_name(prefix, None if _graph.executing_eagerly() else tensor.name, name, ignore_name_scope)
    return tensor, ps_id, key or prefix, _graph.encode(key)


def _start_group(prefix: str, tensors: Sequence[tf.Tensor], name: Optional[str], ignore_name_scope: bool,
                 process_set: ProcessSet) -> Tuple[int, str, List[Optional[bytes]]]:
    """What a grouped collective over `tensors` (read, not empty) starts from: the set's id, the
    graph op's name and the members' names for the runtime (Horovod's <name>_<i>of<n>)."""
    ps_id = _ps_id(process_set)
    first_last = None if _graph.executing_eagerly() else f"{tensors[0].name}_{tensors[-1].name}"
    key = _graph.op_name(prefix, first_last, name, ignore_name_scope)
    return ps_id, key or prefix, names_for_group(key, len(tensors))


def _rows_unknown(x: tf.Tensor) -> Optional[tf.TensorShape]:
    """x's shape with dim 0 unknown (None when x's rank is): allgather's, alltoall's and
    reducescatter's output."""
    return tf.TensorShape([None]).concatenate(x.shape[1:]) if x.shape.rank else None


def _or_zeros(grad, like: tf.Tensor) -> tf.Tensor:
    # TensorFlow hands None for an output no gradient reached.
    return tf.zeros_like(like) if grad is None else grad


def _differentiable(tensors: Sequence[tf.Tensor]) -> bool:
    if not any(t.dtype.is_floating for t in tensors):
        return False
    return not _graph.executing_eagerly() or _graph.tape_may_record()


def _with_gradient(forward, grad_fn, tensors: Sequence[tf.Tensor]):
    """forward(*tensors) with grad_fn(*dys) -> list of input gradients, as tf.custom_gradient;
    plain forward when no gradient can be asked for."""
    if not _differentiable(tensors):
        return forward(*tensors)

    @tf.custom_gradient
    def differentiable(*xs):
        result = forward(*xs)

        def grad(*dys):
            grads = grad_fn(*dys)
            return grads if len(xs) > 1 else grads[0]

        return result, grad

    return differentiable(*tensors)


# ---------------------------------------------------------------- allreduce


def _allreduce(tensor, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0, ignore_name_scope=False,
               process_set=global_process_set) -> tf.Tensor:
    """Reduces `tensor` over the process set (default op Sum, as Horovod's low-level op).
    The gradient is the same allreduce of the incoming gradient."""
    tensor, ps_id, op_name, encoded = _start("HorovodAllreduce", tensor, name, ignore_name_scope, process_set)
    check_reduce_op(op)

    native = _graph.Native("allreduce", encoded, ps_id, reduce_op=op, prescale=prescale_factor,
                           postscale=postscale_factor)

    def forward(x):
        return _graph.run(lambda v: [_eager.allreduce(v, encoded, op, prescale_factor, postscale_factor, ps_id)],
                          [x], [x.dtype], [x.shape], op_name, native)[0]

    def grad(dy):
        return [_allreduce(dy, op=op, prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                           ignore_name_scope=ignore_name_scope, process_set=_temp_process_set_object(ps_id))]

    return _with_gradient(forward, grad, [tensor])


def _grouped_allreduce(tensors, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
                       ignore_name_scope=False, process_set=global_process_set) -> List[tf.Tensor]:
    """Reduces a list of tensors as one group (negotiated and fused together)."""
    tensors = [_as_tensor(t) for t in tensors]
    if not tensors:
        return []
    ps_id, op_name, names = _start_group("HorovodGroupedAllreduce", tensors, name, ignore_name_scope, process_set)

    def forward(*xs):
        return _graph.run(
            lambda *vs: _eager.allreduce_many(vs, names, op, prescale_factor, postscale_factor, ps_id, grouped=True),
            xs, [x.dtype for x in xs], [x.shape for x in xs], op_name)

    def grad(*dys):
        dys = [_or_zeros(d, t) for d, t in zip(dys, tensors)]
        return _grouped_allreduce(dys, op=op, prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                  ignore_name_scope=ignore_name_scope, process_set=_temp_process_set_object(ps_id))

    return list(_with_gradient(forward, grad, tensors))


# ---------------------------------------------------------------- allgather


def _split_for_this_rank(grad: tf.Tensor, first_dims: tf.Tensor, process_set: ProcessSet) -> tf.Tensor:
    """This rank's block of an allgathered gradient, given every rank's dim 0."""
    with tf.device("/cpu:0"):
        offsets = tf.concat([[0], tf.cumsum(first_dims)], axis=0)
    index = process_set.rank()
    return grad[offsets[index]:offsets[index + 1]]


def _allgathered_first_dims(x: tf.Tensor, ignore_name_scope: bool, process_set: ProcessSet) -> tf.Tensor:
    with tf.device("/cpu:0"):
        first = tf.reshape(tf.shape(x, out_type=tf.int64)[0], [1])
        return allgather(first, ignore_name_scope=ignore_name_scope, process_set=process_set)


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set) -> tf.Tensor:
    """Concatenates `tensor` from every rank of the set along dim 0 (dim 0 may differ per rank).
    The gradient averages the incoming gradient and returns this rank's block of it."""
    tensor, ps_id, op_name, encoded = _start("HorovodAllgather", tensor, name, ignore_name_scope, process_set)

    def forward(x):
        return _graph.run(lambda v: _eager.allgather_many([v], [encoded], ps_id), [x], [x.dtype], [_rows_unknown(x)],
                          op_name, _graph.Native("allgather", encoded, ps_id))[0]

    def grad(dy):
        ps = _temp_process_set_object(ps_id)
        reduced = _allreduce(dy, op=Average, ignore_name_scope=ignore_name_scope, process_set=ps)
        return [_split_for_this_rank(reduced, _allgathered_first_dims(tensor, ignore_name_scope, ps), ps)]

    return _with_gradient(forward, grad, [tensor])


def grouped_allgather(tensors, name=None, ignore_name_scope=False, process_set=global_process_set) -> List[tf.Tensor]:
    """allgather of each tensor, done as one group."""
    tensors = [_as_tensor(t) for t in tensors]
    if not tensors:
        return []
    ps_id, op_name, names = _start_group("HorovodGroupedAllgather", tensors, name, ignore_name_scope, process_set)

    def forward(*xs):
        return _graph.run(lambda *vs: _eager.allgather_many(vs, names, ps_id, grouped=True), xs,
                          [x.dtype for x in xs], [_rows_unknown(x) for x in xs], op_name)

    def grad(*dys):
        ps = _temp_process_set_object(ps_id)
        # One allreduce per gradient: TensorFlow may hand float32 zeros for a float64 output.
        reduced = [_allreduce(_or_zeros(d, t), op=Average, ignore_name_scope=ignore_name_scope, process_set=ps)
                   for d, t in zip(dys, tensors)]
        return [_split_for_this_rank(r, _allgathered_first_dims(t, ignore_name_scope, ps), ps)
                for r, t in zip(reduced, tensors)]

    return list(_with_gradient(forward, grad, tensors))


# ---------------------------------------------------------------- broadcast


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False, process_set=global_process_set) -> tf.Tensor:
    """root_rank's `tensor` on every rank of the set (root_rank: a global rank). The gradient is
    the average of the incoming gradients on the root and zero elsewhere."""
    tensor, ps_id, op_name, encoded = _start("HorovodBroadcast", tensor, name, ignore_name_scope, process_set)

    def forward(x):
        return _graph.run(lambda v: _eager.broadcast_many([v], [encoded], root_rank, ps_id), [x], [x.dtype],
                          [x.shape], op_name, _graph.Native("broadcast", encoded, ps_id, root_rank=root_rank))[0]

    def grad(dy):
        reduced = _allreduce(dy, op=Average, ignore_name_scope=ignore_name_scope,
                             process_set=_temp_process_set_object(ps_id))
        return [reduced if rank() == root_rank else reduced * 0]

    return _with_gradient(forward, grad, [tensor])


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Writes root_rank's values into `variables` (a list of tf.Variable) on every rank and
    returns their new values."""
    variables = list(variables)
    if not variables:
        return []
    ps_id = _ps_id(process_set)
    key = _graph.op_name("HorovodBroadcastInplace", None if _graph.executing_eagerly() else variables[0].name,
                         name, False)
    names = [None if key is None else f"{key}.{i}".encode() for i in range(len(variables))]
    values = [tf.convert_to_tensor(v) for v in variables]
    received = _graph.run(lambda *vs: _eager.broadcast_many(vs, names, root_rank, ps_id), values,
                          [v.dtype for v in values], [v.shape for v in values], key or "HorovodBroadcastInplace")
    assigns = [var.assign(value) for var, value in zip(variables, received)]
    if _graph.executing_eagerly():
        return [var.read_value() for var in variables]
    with tf.control_dependencies(assigns):
        return [tf.identity(var.read_value()) for var in variables]


# ---------------------------------------------------------------- alltoall


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Rows of `tensor` go to the set's ranks in order, splits[i] rows to rank i (None: an even
    split). Returns the rows received, in rank order, and with `splits` given also the rows
    received from each rank. The gradient is the alltoall back along the received splits."""
    tensor, ps_id, op_name, encoded = _start("HorovodAlltoall", tensor, name, ignore_name_scope, process_set)
    splits_tensor = None if splits is None else tf.cast(_as_tensor(splits), tf.int32)
    received = []

    def forward(x):
        inputs = [x] if splits_tensor is None else [x, splits_tensor]
        output, received_splits = _graph.run(
            lambda v, s=None: _eager.alltoall(v, s, encoded, ps_id), inputs, [x.dtype, tf.int32],
            [_rows_unknown(x), tf.TensorShape([None])], op_name, _graph.Native("alltoall", encoded, ps_id))
        received.append(received_splits)
        return output

    def grad(dy):
        back, _ = alltoall(dy, splits=received[0], ignore_name_scope=ignore_name_scope,
                           process_set=_temp_process_set_object(ps_id))
        return [back]

    output = _with_gradient(forward, grad, [tensor])
    return output if splits is None else (output, received[0])


# ---------------------------------------------------------------- reducescatter


def _reducescatter(tensor, name=None, op=Sum, ignore_name_scope=False, process_set=global_process_set,
                   prescale_factor=1.0, postscale_factor=1.0) -> tf.Tensor:
    """Reduces `tensor` over the set and scatters dim 0: rank i gets block i, ranks below
    dim0 % size one extra row. The gradient allgathers the incoming gradient (scaled as the op)."""
    tensor, ps_id, op_name, encoded = _start("HorovodReducescatter", tensor, name, ignore_name_scope, process_set)
    check_reduce_op(op)

    native = _graph.Native("reducescatter", encoded, ps_id, reduce_op=op, prescale=prescale_factor,
                           postscale=postscale_factor)

    def forward(x):
        return _graph.run(
            lambda v: _eager.reducescatter_many([v], [encoded], op, prescale_factor, postscale_factor, ps_id),
            [x], [x.dtype], [_rows_unknown(x)], op_name, native)[0]

    def grad(dy):
        ps = _temp_process_set_object(ps_id)
        return [allgather(_scaled_for_reducescatter(dy, op, prescale_factor, postscale_factor, ps),
                          ignore_name_scope=ignore_name_scope, process_set=ps)]

    return _with_gradient(forward, grad, [tensor])


def _scaled_for_reducescatter(grad, op, prescale_factor, postscale_factor, process_set):
    if op == Sum:
        grad = grad * process_set.size()
    if prescale_factor != 1.0:
        grad = grad * prescale_factor
    if postscale_factor != 1.0:
        grad = grad * postscale_factor
    return grad


def _grouped_reducescatter(tensors, name=None, op=Sum, ignore_name_scope=False, process_set=global_process_set,
                           prescale_factor=1.0, postscale_factor=1.0) -> List[tf.Tensor]:
    """reducescatter of each tensor, done as one group."""
    tensors = [_as_tensor(t) for t in tensors]
    if not tensors:
        return []
    ps_id, op_name, names = _start_group("HorovodGroupedReducescatter", tensors, name, ignore_name_scope, process_set)

    def forward(*xs):
        return _graph.run(
            lambda *vs: _eager.reducescatter_many(vs, names, op, prescale_factor, postscale_factor, ps_id,
                                                  grouped=True),
            xs, [x.dtype for x in xs], [_rows_unknown(x) for x in xs], op_name)

    def grad(*dys):
        # One grouped allgather, not one op per tensor: one negotiation for all, and a single op
        # where graph collectives are tf.py_functions (which hold an inter-op thread while they wait).
        ps = _temp_process_set_object(ps_id)
        return grouped_allgather([_scaled_for_reducescatter(_or_zeros(d, t), op, prescale_factor, postscale_factor, ps)
                                  for d, t in zip(dys, tensors)], ignore_name_scope=ignore_name_scope, process_set=ps)

    return list(_with_gradient(forward, grad, tensors))


# ---------------------------------------------------------------- join, barrier, runtime-valued ops


def join() -> tf.Tensor:
    """Marks this rank done with its data: until every rank joined, it contributes zeros to the
    others' allreduces. Returns the rank that joined last (an int32 scalar, the same everywhere)."""
    return _graph.run(lambda: [_eager.join()], [], [tf.int32], [tf.TensorShape([])], "HorovodJoin")[0]


def barrier(process_set=global_process_set):
    """Blocks until every rank of the set reached it (in a graph: an op that does so when run)."""
    ps_id = _ps_id(process_set)

    def body():
        _eager.barrier(ps_id)
        return [tf.constant(0, dtype=tf.int32)]

    if _graph.executing_eagerly():
        body()
        return None
    return _graph.run(body, [], [tf.int32], [tf.TensorShape([])], "HorovodBarrier")[0].op


def _value_op(query, name: str, op_name: Optional[str]) -> tf.Tensor:
    """An int32 scalar computed when the op runs, not when the graph is built (Horovod's *_op)."""
    return _graph.run(lambda: [tf.constant(query(), dtype=tf.int32)], [], [tf.int32], [tf.TensorShape([])],
                      op_name or name)[0]


def size_op(process_set_id=0, name=None) -> tf.Tensor:
    """The number of processes in the set, evaluated at run time."""
    return _value_op(lambda: _process_set_size(process_set_id), "HorovodSize", name)


def local_size_op(name=None) -> tf.Tensor:
    return _value_op(local_size, "HorovodLocalSize", name)


def rank_op(name=None) -> tf.Tensor:
    return _value_op(rank, "HorovodRank", name)


def local_rank_op(name=None) -> tf.Tensor:
    return _value_op(local_rank, "HorovodLocalRank", name)


def process_set_included_op(process_set_id=0, name=None) -> tf.Tensor:
    """1 when this process belongs to the set, else 0."""
    return _value_op(lambda: int(_process_set_included(process_set_id)), "HorovodProcessSetIncluded", name)
