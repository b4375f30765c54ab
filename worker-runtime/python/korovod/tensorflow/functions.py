"""Broadcasting variables and exchanging Python objects (horovod/tensorflow/functions.py).

Objects travel as cloudpickle bytes (plain pickle where cloudpickle is missing) in a uint8
tensor, preceded by their length.
"""

from __future__ import annotations

import io
import pickle
from typing import Any, List, Optional

import numpy as np
import tensorflow as tf

from korovod.common.process_sets import ProcessSet, global_process_set
from korovod.tensorflow import _eager, _graph
from korovod.tensorflow.mpi_ops import allgather, broadcast, rank


def _pickler():
    try:
        import cloudpickle
        return cloudpickle
    except ImportError:
        return pickle


def _dumps(obj) -> bytes:
    buffer = io.BytesIO()
    _pickler().dump(obj, buffer)
    return buffer.getvalue()


def broadcast_variables(variables, root_rank: int, process_set: ProcessSet = global_process_set, inplace=False):
    """Assigns root_rank's values to `variables` on every rank of the set.

    Eager: done when it returns. In a graph: returns the op that does it. `inplace` is accepted
    for Horovod compatibility; the values are always written into the variables.
    """
    del inplace
    variables = list(variables)
    if not variables:
        return None if _graph.executing_eagerly() else tf.no_op()
    ps_id = process_set.process_set_id
    # Positional names: Keras variable names repeat ("kernel") and may differ between ranks.
    names = [f"broadcast_variables.{i}".encode() for i in range(len(variables))]
    values = [tf.convert_to_tensor(v) for v in variables]
    received = _graph.run(lambda *vs: _eager.broadcast_many(vs, names, root_rank, ps_id), values,
                          [v.dtype for v in values], [v.shape for v in values], "HorovodBroadcastVariables")
    assigns = [var.assign(value) for var, value in zip(variables, received)]
    if _graph.executing_eagerly():
        return None
    return tf.group(*assigns)


def _to_numpy(value, session):
    if _graph.executing_eagerly():
        return value.numpy()
    session = session or tf.compat.v1.get_default_session()
    if session is None:
        raise ValueError("outside eager mode broadcast_object/allgather_object need a session "
                         "(session= or a default session)")
    return session.run(value)


def broadcast_object(obj: Any, root_rank: int = 0, session=None, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """Returns root_rank's `obj` on every rank of the set (root_rank gets its own object back)."""
    name = name or type(obj).__name__
    is_root = rank() == root_rank
    if is_root:
        data = np.frombuffer(_dumps(obj), dtype=np.uint8)
        length = np.array([data.size], dtype=np.int32)
    else:
        length = np.zeros(1, dtype=np.int32)
    length = _to_numpy(broadcast(tf.constant(length), root_rank, name + ".sz", process_set=process_set), session)
    if not is_root:
        data = np.zeros(int(length[0]), dtype=np.uint8)
    data = _to_numpy(broadcast(tf.constant(data), root_rank, name + ".t", process_set=process_set), session)
    return obj if is_root else pickle.loads(data.tobytes())


def broadcast_object_fn(root_rank: int = 0, session=None, name: Optional[str] = None,
                        process_set: ProcessSet = global_process_set):
    """Horovod's TF1 helper: a function obj -> root_rank's obj. korovod's broadcast_object works in
    eager mode and with a session, so this returns it bound to these arguments."""
    name = name or "broadcast_object_fn"

    def broadcast_fn(obj):
        return broadcast_object(obj, root_rank, session, name, process_set)

    return broadcast_fn


def allgather_object(obj: Any, session=None, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> List[Any]:
    """Returns the list of every rank's `obj`, in rank order of the set."""
    name = name or type(obj).__name__
    data = np.frombuffer(_dumps(obj), dtype=np.uint8)
    sizes = _to_numpy(allgather(tf.constant([data.size], dtype=tf.int32), name=name + ".sz",
                                process_set=process_set), session)
    gathered = _to_numpy(allgather(tf.constant(data), name=name + ".t", process_set=process_set), session)
    objects, start = [], 0
    for size in sizes.tolist():
        objects.append(pickle.loads(gathered[start:start + size].tobytes()))
        start += size
    return objects
