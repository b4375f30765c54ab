"""How a korovod collective becomes part of a TensorFlow program.

Eager mode calls _eager directly. In a graph (a tf.function, or a TF1 graph run by a Session),
allreduce, allgather, broadcast, alltoall and reducescatter are korovod's own ops
(KorovodAllreduce, ...: libkorovod_tf_ops.so, asynchronous CPU kernels written against
TensorFlow's stable C API, so one build serves every TensorFlow from 2.16 on; native_op()). A
kernel queues its collective and gives its thread back to TensorFlow, as Horovod's ops do, so a
graph may run any number of independent collectives at once, and errors keep their TensorFlow
type. Where those ops do not apply -- a GPU is visible (GPU tensors keep crossing by DLPack),
KOROVOD_TF_NATIVE_OPS=0, the library or its TensorFlow functions are missing (native_status()
says why) -- and for the other collectives (grouped ops, join, barrier, the gradient buckets),
each collective is one tf.py_function whose body is the eager code, which holds its inter-op
thread while it waits. Both kinds are stateful ops: tf.function's automatic control dependencies
run them in program order, so every rank queues its collectives in the same order (two
collectives of one tf.function never overlap; the gradient buckets are how gradients do). What
the py_function path costs: a Python call per collective (tens of microseconds) with the GIL
held except while waiting, and in a TF1 Session more independent collectives than inter-op
threads can deadlock. Neither kind compiles under XLA (check_not_xla() says what to do instead
of TensorFlow's "unsupported operations"), and a graph holding either needs korovod loaded to
run (no SavedModel served without it).
Names: in a graph an unnamed collective is named after its input tensor as Horovod names it
(HorovodAllreduce_<tensor name>, in the current name scope, made unique in the graph), so every
rank that traces the same code uses the same names.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import re
from typing import Callable, List, Optional, Sequence, Tuple

import tensorflow as tf
from tensorflow.python.eager import record

from korovod.common import _lib, settings
from korovod.common.basics import state
from korovod.tensorflow import _native

XLA_MESSAGE = ("korovod collectives are graph ops XLA cannot compile (korovod's own asynchronous kernels, or "
               "tf.py_function); use tf.function(jit_compile=False) (Keras: model.compile(..., jit_compile=False))")


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


@dataclasses.dataclass(frozen=True)
class Native:
    """A collective korovod's own graph ops can run (native_op): the op's kind (allreduce,
    allgather, broadcast, alltoall, reducescatter), its name in the runtime and its attributes."""

    kind: str
    tensor_name: Optional[bytes]
    process_set_id: int
    reduce_op: int = 0
    prescale: float = 1.0
    postscale: float = 1.0
    root_rank: int = 0


def run(body: Callable[..., Sequence[tf.Tensor]], inputs: Sequence[tf.Tensor], out_dtypes: Sequence[tf.DType],
        out_shapes: Sequence[Optional[tf.TensorShape]], name: str, native: Optional[Native] = None
        ) -> List[tf.Tensor]:
    """body(*eager inputs) -> list of eager outputs; outside eager mode one graph op: korovod's own
    op when `native` says which and those ops apply here (native_op), else a tf.py_function.

    Errors: eagerly, the runtime's refusals become Horovod's tf.errors types (as_tensorflow_error);
    korovod's graph ops give the same types. In a py_function TensorFlow maps the Python exception
    itself: ValueError -> InvalidArgumentError as Horovod's, anything else (a disagreement among
    ranks too) -> UnknownError, with the runtime's message that names tensor and ranks."""
    if tf.executing_eagerly():
        try:
            return list(body(*inputs))
        except (ValueError, RuntimeError) as error:
            mapped = as_tensorflow_error(error)
            if mapped is None:
                raise
            raise mapped from error
    check_not_xla()
    outputs = native_op(native, inputs, name) if native is not None else None
    if outputs is None:
        outputs = tf.py_function(func=lambda *xs: list(body(*xs)), inp=list(inputs), Tout=list(out_dtypes),
                                 name=normalize_name(name))
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    for output, shape in zip(outputs, out_shapes):
        if shape is not None:
            output.set_shape(shape)
    return outputs


def encode(name: Optional[str]) -> Optional[bytes]:
    return None if name is None else name.encode()


# ---------------------------------------------------------------- korovod's own graph ops

_NATIVE_LIBRARY = "libkorovod_tf_ops.so"


@functools.lru_cache(maxsize=None)
def _load_native() -> Tuple[Optional[object], str]:
    """(the op module, "") once per process, or (None, why not)."""
    if not settings.current().tf_native_ops:
        return None, "KOROVOD_TF_NATIVE_OPS=0"
    if tf.config.list_physical_devices("GPU"):
        return None, "a GPU is visible: graph collectives run as tf.py_function, tensors crossing by DLPack"
    path = _lib.library_path(settings.current().library).parent / _NATIVE_LIBRARY
    if not path.exists():
        return None, f"{path} does not exist"
    try:
        # tf.load_op_library first: it collects the ops the library registers while it loads.
        module = tf.load_op_library(str(path))
        cdll = ctypes.CDLL(str(path))
    except (OSError, tf.errors.OpError) as error:
        return None, f"{path} does not load: {error}"
    cdll.korovod_tf_load_error.restype = ctypes.c_char_p
    cdll.korovod_tf_bind.argtypes = [ctypes.c_void_p]
    cdll.korovod_tf_bind.restype = None
    error = cdll.korovod_tf_load_error().decode()
    if error:
        return None, f"{path}: {error}"
    state.listeners.append(cdll.korovod_tf_bind)
    with state.lock:
        if state.runtime is not None:
            cdll.korovod_tf_bind(state.runtime.ptr)
    return module, ""


def native_status() -> str:
    """"" when graph collectives run as korovod's own ops, else why they run as tf.py_function."""
    return _load_native()[1]


def _scales(prescale: float, postscale: float) -> tf.Tensor:
    return tf.constant([prescale, postscale], dtype=tf.float64)


def native_op(spec: Native, inputs: Sequence[tf.Tensor], name: str) -> Optional[List[tf.Tensor]]:
    """The collective `spec` of inputs[0] (alltoall: inputs[1], if given, its splits) as korovod's
    asynchronous graph op named `name`; None where those ops do not apply (native_status)."""
    module = _load_native()[0]
    if module is None:
        return None
    tensor = inputs[0]
    _native.dtype_code(tensor.dtype)  # a ValueError naming what korovod supports, as eagerly
    tensor_name = "" if spec.tensor_name is None else spec.tensor_name.decode()  # always named in a graph
    common = dict(tensor_name=tensor_name, process_set_id=spec.process_set_id, name=normalize_name(name))
    if spec.kind == "allreduce":
        return [module.korovod_allreduce(tensor, _scales(spec.prescale, spec.postscale), reduce_op=spec.reduce_op,
                                         **common)]
    if spec.kind == "reducescatter":
        return [module.korovod_reducescatter(tensor, _scales(spec.prescale, spec.postscale),
                                             reduce_op=spec.reduce_op, **common)]
    if spec.kind == "allgather":
        return [module.korovod_allgather(tensor, **common)]
    if spec.kind == "broadcast":
        return [module.korovod_broadcast(tensor, root_rank=spec.root_rank, **common)]
    if spec.kind == "alltoall":
        splits = inputs[1] if len(inputs) > 1 else tf.zeros([0], tf.int32)  # none: an even split
        return list(module.korovod_alltoall(tensor, splits, **common))
    raise ValueError(f"no korovod graph op for {spec.kind!r}")
