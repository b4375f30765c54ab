"""Python objects across ranks: broadcast_object and allgather_object for every binding.

Horovod's semantics (horovod/torch/functions.py, horovod/tensorflow/functions.py, 0.28.1): an
object travels as cloudpickle bytes (plain pickle where cloudpickle is missing, so lambdas and
local classes work where it is installed) in a uint8 array, after its length. Lengths are int64
(Horovod's are int32, which caps an object at 2 GiB). The arrays go through the runtime as numpy
arrays (numpy_ops), whatever the framework: the bytes are host data in every binding.
"""

from __future__ import annotations

import pickle
from typing import Any, List

import numpy as np

from korovod.common import numpy_ops
from korovod.common._state import query
from korovod.common.process_sets import ProcessSet, global_process_set

LENGTH_DTYPE = np.int64

try:
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover (every tested environment has it)
    _pickler = pickle


def to_bytes(obj: Any) -> np.ndarray:
    """``obj`` pickled (cloudpickle where installed), as a uint8 array."""
    return np.frombuffer(_pickler.dumps(obj), dtype=np.uint8)


def from_bytes(data: np.ndarray) -> Any:
    # cloudpickle output is plain pickle data: pickle.loads reads both.
    return pickle.loads(data.tobytes())


def _set_id(process_set: ProcessSet) -> int:
    ps_id = process_set.process_set_id
    if ps_id is None:
        raise ValueError(f"{process_set} is not registered with korovod (never added, or removed)")
    return ps_id


def broadcast_object(obj: Any, root_rank: int, name: str, process_set: ProcessSet = global_process_set) -> Any:
    """root_rank's ``obj`` on every rank of the set (the root gets its own object back)."""
    ps_id = _set_id(process_set)
    is_root = query("korovod_rank") == root_rank
    data = to_bytes(obj) if is_root else np.zeros(0, np.uint8)
    length = np.array([data.size], LENGTH_DTYPE)
    length = numpy_ops.broadcast([length], root_rank, name + ".sz", ps_id)[0]
    if not is_root:
        data = np.zeros(int(length[0]), np.uint8)
    received = numpy_ops.broadcast([data], root_rank, name + ".t", ps_id)[0]
    return obj if is_root else from_bytes(received)


def allgather_object(obj: Any, name: str, process_set: ProcessSet = global_process_set) -> List[Any]:
    """Every rank's ``obj``, in rank order of the set."""
    ps_id = _set_id(process_set)
    data = to_bytes(obj)
    lengths = numpy_ops.allgather(np.array([data.size], LENGTH_DTYPE), name + ".sz", ps_id)
    gathered = numpy_ops.allgather(data, name + ".t", ps_id)
    objects, start = [], 0
    for length in lengths.tolist():
        objects.append(from_bytes(gathered[start:start + length]))
        start += length
    return objects
