"""The collectives on eager tensors: what runs in eager mode, and inside the tf.py_function that
stands for a collective in a graph where korovod's own graph ops do not apply (_graph.py). Every function queues all of its operations
before it waits for any, so a list of tensors is negotiated and fused in one go.

Names are final here (the caller derived them); None lets the runtime name the op by its process
set's count of unnamed ops, which eager code on every member reaches in the same order.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import tensorflow as tf

from korovod.common import _lib
from korovod.common import native_ops
from korovod.common.basics import check_reduce_op, state
from korovod.tensorflow import _native


def allreduce_many(tensors: Sequence[tf.Tensor], names: Sequence[Optional[bytes]], op: int, prescale: float,
                   postscale: float, ps_id: int, grouped: bool = False) -> List[tf.Tensor]:
    """Reduces each tensor (each its own negotiation, or all as one group)."""
    groups = [list(range(len(tensors)))] if grouped else [[i] for i in range(len(tensors))]
    return allreduce_groups(tensors, groups, names, op, prescale, postscale, ps_id)


def allreduce_groups(tensors: Sequence[tf.Tensor], groups: Sequence[Sequence[int]],
                     names: Sequence[Optional[bytes]], op: int, prescale: float, postscale: float,
                     ps_id: int) -> List[tf.Tensor]:
    """Reduces every tensor; `groups` partitions their indices: a group of several is queued as
    one korovod group, a group of one alone. All are queued before any is waited for."""
    return _finish([_queue_allreduces(tensors, groups, names, op, prescale, postscale, ps_id)])


class _Queued:
    """Allreduces queued by _queue_allreduces, until _finish waits for them."""

    __slots__ = ("rt", "handles", "keep", "outputs")

    def __init__(self, rt, handles: List[int], keep, outputs: List[_native.Output]):
        self.rt = rt
        self.handles = handles
        self.keep = keep
        self.outputs = outputs


def _queue_allreduces(tensors: Sequence[tf.Tensor], groups: Sequence[Sequence[int]],
                      names: Sequence[Optional[bytes]], op: int, prescale: float, postscale: float,
                      ps_id: int) -> _Queued:
    check_reduce_op(op)
    rt = native_ops.runtime()
    inputs = _native.operands(tensors)
    outputs = [_native.Output(x) for x in inputs]
    _native.wait_for_gpu_inputs(inputs)
    keep = (inputs, outputs)
    handles: List[int] = []
    try:
        for members in groups:
            if len(members) == 1:
                i = members[0]
                handles.append(native_ops.enqueue(rt, _lib.OP_ALLREDUCE, names[i], inputs[i].buffer,
                                                  outputs[i].address, op, prescale, postscale,
                                                  process_set_id=ps_id))
            elif members:
                handles += native_ops.enqueue_group(rt, _lib.OP_ALLREDUCE, [names[i] for i in members],
                                                    [inputs[i].buffer for i in members],
                                                    [outputs[i].address for i in members], op, prescale,
                                                    postscale, ps_id)
    except BaseException:
        _drain(rt, handles, keep)
        raise
    return _Queued(rt, handles, keep, outputs)


def _finish(queued: Sequence[_Queued]) -> List[tf.Tensor]:
    """Waits for every queued op (all of them before the first error is raised) and returns the
    results in order."""
    rt = queued[0].rt
    handles = [h for q in queued for h in q.handles]
    native_ops.wait_all(rt, handles, queued)
    native_ops.release_all(rt, handles)
    return [o.result() for q in queued for o in q.outputs]


def start_allreduces(tensors: Sequence[tf.Tensor], names: Sequence[Optional[bytes]], op: int, prescale: float,
                     postscale: float, ps_id: int) -> int:
    """Queues each tensor's allreduce without waiting; returns a token for finish_allreduces
    (the first handle: unique while the runtime lives). The graph's gradient reductions start
    one bucket this way as soon as backprop has produced it, so the data moves while the
    earlier layers' gradients are still being computed."""
    if not tensors:
        raise ValueError("start_allreduces needs at least one tensor")
    queued = _queue_allreduces(tensors, [[i] for i in range(len(tensors))], names, op, prescale, postscale, ps_id)
    state.pending[queued.handles[0]] = queued
    return queued.handles[0]


def finish_allreduces(tokens: Sequence[int]) -> List[tf.Tensor]:
    """Waits for what start_allreduces queued under `tokens` and returns every result, in
    token order. Every op is waited for before the first error is raised."""
    queued = [state.pending.pop(int(token), None) for token in tokens]
    if any(q is None for q in queued):
        for q in queued:
            if q is not None:
                _drain(q.rt, q.handles, q.keep)
        raise RuntimeError("korovod: an allreduce started in this graph is unknown to the runtime "
                           "(korovod was shut down or initialized again between its start and its end)")
    return _finish(queued)


def _drain(rt, handles: Sequence[int], keep) -> None:
    """After a failed enqueue: the ops already queued still run; wait for them quietly."""
    try:
        native_ops.wait_all(rt, handles, keep)
        native_ops.release_all(rt, handles)
    except (ValueError, RuntimeError):
        pass


def allreduce(tensor: tf.Tensor, name: Optional[bytes], op: int, prescale: float, postscale: float,
              ps_id: int) -> tf.Tensor:
    return allreduce_many([tensor], [name], op, prescale, postscale, ps_id)[0]


def _gathered(op_type: int, tensors: Sequence[tf.Tensor], names: Sequence[Optional[bytes]], ps_id: int,
              op: int = _lib.AVERAGE, prescale: float = 1.0, postscale: float = 1.0,
              grouped: bool = False) -> List[tf.Tensor]:
    """allgather / reducescatter: outputs the runtime allocates, moved into TensorFlow."""
    if op_type == _lib.OP_REDUCESCATTER:
        check_reduce_op(op)
    rt = native_ops.runtime()
    inputs = _native.operands(tensors)
    _native.wait_for_gpu_inputs(inputs)
    if grouped:
        handles = native_ops.enqueue_group(rt, op_type, names, [x.buffer for x in inputs], None, op, prescale,
                                           postscale, ps_id)
    else:
        handles = []
        try:
            for x, name in zip(inputs, names):
                handles.append(native_ops.enqueue(rt, op_type, name, x.buffer, None, op, prescale, postscale,
                                                  process_set_id=ps_id))
        except BaseException:
            _drain(rt, handles, inputs)
            raise
    native_ops.wait_all(rt, handles, inputs)
    try:
        return [_native.take_output(rt, h, t.dtype) for h, t in zip(handles, tensors)]
    finally:
        native_ops.release_all(rt, handles)


def allgather_many(tensors, names, ps_id, grouped=False) -> List[tf.Tensor]:
    return _gathered(_lib.OP_ALLGATHER, tensors, names, ps_id, grouped=grouped)


def reducescatter_many(tensors, names, op, prescale, postscale, ps_id, grouped=False) -> List[tf.Tensor]:
    return _gathered(_lib.OP_REDUCESCATTER, tensors, names, ps_id, op, prescale, postscale, grouped)


def broadcast_many(tensors: Sequence[tf.Tensor], names: Sequence[Optional[bytes]], root_rank: int,
                   ps_id: int) -> List[tf.Tensor]:
    rt = native_ops.runtime()
    inputs = _native.operands(tensors)
    outputs = [_native.Output(x) for x in inputs]
    _native.wait_for_gpu_inputs(inputs)
    keep = (inputs, outputs)
    handles = []
    try:
        for x, o, name in zip(inputs, outputs, names):
            handles.append(native_ops.enqueue(rt, _lib.OP_BROADCAST, name, x.buffer, o.address,
                                              root_rank=int(root_rank), process_set_id=ps_id))
    except BaseException:
        _drain(rt, handles, keep)
        raise
    native_ops.wait_all(rt, handles, keep)
    native_ops.release_all(rt, handles)
    return [o.result() for o in outputs]


def alltoall(tensor: tf.Tensor, splits, name: Optional[bytes], ps_id: int) -> Tuple[tf.Tensor, tf.Tensor]:
    """(output, received_splits as int32)."""
    rt = native_ops.runtime()
    source = _native.Operand(tensor)
    _native.wait_for_gpu_inputs([source])
    handle = native_ops.enqueue(rt, _lib.OP_ALLTOALL, name, source.buffer, None,
                                splits=_native.splits_list(splits), process_set_id=ps_id)
    native_ops.wait(rt, handle, source)
    try:
        output = _native.take_output(rt, handle, tensor.dtype)
        received = native_ops.received_splits(rt, handle, rt.lib.korovod_process_set_size(rt.ptr, ps_id))
    finally:
        native_ops.release(rt, handle)
    return output, tf.constant(received, dtype=tf.int32)


def join() -> tf.Tensor:
    return tf.constant(native_ops.join(), dtype=tf.int32)


def barrier(ps_id: int) -> None:
    native_ops.barrier(ps_id)
