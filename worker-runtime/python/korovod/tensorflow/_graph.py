"""How a korovod collective becomes part of a TensorFlow program.

Eager mode calls _eager directly. In a graph (a tf.function, or a TF1 graph run by a Session) each
collective is one tf.py_function whose body is the same eager code: nothing is compiled against
TensorFlow, so one korovod build serves every TensorFlow version. What that costs and rules out:
- a Python call per collective at run time (tens of microseconds; the gradient reductions of a
  tape or optimizer are one call per bucket of gradients, which only queues, and one that waits
  for all: gradients.py), made with the GIL held except while waiting;
- tf.function's automatic control dependencies run stateful ops, these among them, in program
  order, so every rank queues its collectives in the same order (what keeps a graph with one
  inter-op thread from deadlocking) but two collectives of one graph never overlap;
- XLA (jit_compile=True) cannot compile EagerPyFunc: such a function fails with TensorFlow's
  "unsupported operations" error, which check_not_xla() replaces with one that says what to do;
- a graph holding them cannot be exported to a SavedModel that runs without Python.
Names: in a graph an unnamed collective is named after its input tensor as Horovod names it
(HorovodAllreduce_<tensor name>, in the current name scope, made unique in the graph), so every
rank that traces the same code uses the same names.
"""

from __future__ import annotations

import re
from typing import Callable, List, Optional, Sequence

import tensorflow as tf
from tensorflow.python.eager import record

from korovod.common import _lib

XLA_MESSAGE = ("korovod collectives run as tf.py_function graph ops, which XLA cannot compile; use "
               "tf.function(jit_compile=False) (Keras: model.compile(..., jit_compile=False))")


def executing_eagerly() -> bool:
    return tf.executing_eagerly()


def tape_may_record() -> bool:
    """Whether an active GradientTape could record an eager op (else gradients are not needed)."""
    return record.could_possibly_record()


def normalize_name(name: str) -> str:
    """Horovod's rule: anything but letters, digits and '_' becomes '_'."""
    return re.sub("[^a-zA-Z0-9_]", "_", name)


def op_name(prefix: str, tensor_name: Optional[str], name: Optional[str], ignore_name_scope: bool) -> Optional[str]:
    """The collective's name: eager -> `name` (None: the runtime names it by handle); in a graph
    -> `name` or <prefix>_<tensor name>, inside the current name scope unless ignore_name_scope,
    unique within the graph."""
    if tf.executing_eagerly():
        return name
    base = name if name is not None else f"{prefix}_{normalize_name(tensor_name or 'tensor')}"
    if ignore_name_scope:
        return base
    return tf.compat.v1.get_default_graph().unique_name(base)


def check_not_xla() -> None:
    if tf.executing_eagerly():
        return
    from tensorflow.python.ops import control_flow_util

    if control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
        raise NotImplementedError(XLA_MESSAGE)


def as_tensorflow_error(error: BaseException) -> Optional[tf.errors.OpError]:
    """The error Horovod's TensorFlow ops give for what the runtime refused: ranks that disagree
    (shape, dtype, root rank) -> tf.errors.FailedPreconditionError; an invalid argument (alltoall
    splits, a scalar to reducescatter) -> tf.errors.InvalidArgumentError. None for anything else."""
    code = getattr(error, "korovod_code", None)
    if code == _lib.ERR_PRECONDITION:
        return tf.errors.FailedPreconditionError(None, None, str(error))
    if code == _lib.ERR_INVALID_ARGUMENT:
        return tf.errors.InvalidArgumentError(None, None, str(error))
    return None


def run(body: Callable[..., Sequence[tf.Tensor]], inputs: Sequence[tf.Tensor], out_dtypes: Sequence[tf.DType],
        out_shapes: Sequence[Optional[tf.TensorShape]], name: str) -> List[tf.Tensor]:
    """body(*eager inputs) -> list of eager outputs; as one graph op outside eager mode.

    Errors: eagerly, the runtime's refusals become Horovod's tf.errors types (as_tensorflow_error).
    In a graph TensorFlow maps the py_function's Python exception itself: ValueError ->
    InvalidArgumentError as Horovod's, anything else (a disagreement among ranks too) ->
    UnknownError, with the runtime's message that names tensor and ranks."""
    if tf.executing_eagerly():
        try:
            return list(body(*inputs))
        except (ValueError, RuntimeError) as error:
            mapped = as_tensorflow_error(error)
            if mapped is None:
                raise
            raise mapped from error
    check_not_xla()
    outputs = tf.py_function(func=lambda *xs: list(body(*xs)), inp=list(inputs), Tout=list(out_dtypes),
                             name=normalize_name(name))
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    for output, shape in zip(outputs, out_shapes):
        if shape is not None:
            output.set_shape(shape)
    return outputs


def encode(name: Optional[str]) -> Optional[bytes]:
    return None if name is None else name.encode()
