"""Broadcasting variables and exchanging Python objects (horovod/tensorflow/functions.py).

Objects travel as korovod.common.objects sends them for every binding (cloudpickle bytes, int64
lengths), straight through the runtime: in graph mode too, so `session` is not needed for them.
"""

from __future__ import annotations

from typing import Any, List, Optional

import tensorflow as tf

from korovod.common import objects
from korovod.common.process_sets import ProcessSet, global_process_set
from korovod.tensorflow import _eager, _graph


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


def broadcast_object(obj: Any, root_rank: int = 0, session=None, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """Returns root_rank's `obj` on every rank of the set (root_rank gets its own object back).
    `session` is accepted for Horovod's signature: objects do not go through the graph."""
    del session
    return objects.broadcast_object(obj, root_rank, name or type(obj).__name__, process_set)


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
    """Returns the list of every rank's `obj`, in rank order of the set. `session`: as in
    broadcast_object."""
    del session
    return objects.allgather_object(obj, name or type(obj).__name__, process_set)
