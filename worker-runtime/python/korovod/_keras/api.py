"""The Keras API that korovod.keras and korovod.tensorflow.keras both are (Horovod's horovod.keras
and horovod.tensorflow.keras): the same objects under both names.

Works with model.fit on Keras 3's tensorflow backend (Horovod's case) and also on its torch and
jax backends: the optimizer reduces gradients with the backend's own tensors (see gradients.py),
the callbacks go through numpy. Nothing here imports TensorFlow unless the backend is tensorflow.

Progress: global rank 0 prints a `korovod-progress {...}` line (JSON: step, total steps, steps per
second, loss, ETA, ...) at the first step of model.fit, then at most every
KOROVOD_PROGRESS_INTERVAL_SECONDS (10) and at on_train_end, for the operator to show in
MPIJob.status. Any korovod callback in the fit feeds it fit's steps, total and batch loss;
without one, each DistributedOptimizer apply counts a step. report_progress(step=,
total_steps=, loss=, batch_size=, **metrics) adds the rest (docs/progress.md).
"""

from __future__ import annotations

import keras
import numpy as np

from korovod._keras import callbacks, elastic
from korovod._keras.compression import Compression
from korovod._keras.optimizer import DistributedOptimizer, PartialDistributedOptimizer
from korovod.common import numpy_ops
from korovod.common.basics import (Average, Sum, ccl_built, cross_rank, cross_size, cuda_built, ddl_built,
                                   gloo_built, gloo_enabled, init, is_homogeneous, is_initialized, local_rank,
                                   local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank,
                                   report_progress, rocm_built, shutdown, size, start_timeline, stop_timeline)
from korovod.common.exceptions import HorovodInternalError
from korovod.common.process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set


def _resolve_op(op, average):
    if op is not None and average is not None:
        raise ValueError("The op parameter supersedes average. Please provide only one of them.")
    if op is not None:
        return op
    if average is not None:
        return Average if average else Sum
    return Average


def _as_array(value) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(value) if hasattr(value, "dtype") and
                      not isinstance(value, np.ndarray) else value)


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=Compression.none):
    """The reduction of a tensor-compatible value over all ranks (op: Average by default), as a
    tensor of the current backend."""
    del compression  # a one-off value: sent as it is
    array = _as_array(value)
    reduced = numpy_ops.allreduce([array], name, _resolve_op(op, average), prescale_factor, postscale_factor)[0]
    return keras.ops.convert_to_tensor(reduced)


def allgather(value, name=None):
    """The concatenation along dim 0 of every rank's value."""
    return keras.ops.convert_to_tensor(numpy_ops.allgather(_as_array(value), name))


def broadcast(value, root_rank, name=None):
    """root_rank's value on every rank."""
    return keras.ops.convert_to_tensor(numpy_ops.broadcast([_as_array(value)], root_rank, name)[0])


def reducescatter(value, name=None, op=Average):
    """This rank's block of dim 0 of the reduction (Average or Sum) of every rank's value."""
    return keras.ops.convert_to_tensor(numpy_ops.reducescatter(_as_array(value), name, op))


def broadcast_global_variables(root_rank):
    """Not available with Keras 3, which has no global variables or session: use
    callbacks.BroadcastGlobalVariablesCallback, or callbacks.broadcast_variables(model.variables)."""
    raise RuntimeError("broadcast_global_variables() needs TF1 global variables and a session, which Keras 3 "
                       "does not have: use korovod.keras.callbacks.BroadcastGlobalVariablesCallback(root_rank) "
                       "in model.fit, or korovod.keras.callbacks.broadcast_variables(model.variables, root_rank)")


class _WrappingOptimizerClass:
    """Stands for an optimizer class in custom_objects: builds the class from a saved config and
    wraps it in DistributedOptimizer."""

    def __init__(self, cls, compression):
        self.cls = cls
        self.compression = compression
        self.__name__ = cls.__name__

    def from_config(self, config, custom_objects=None):
        return DistributedOptimizer(self.cls.from_config(config), compression=self.compression)

    def __call__(self, **kwargs):
        return DistributedOptimizer(self.cls(**kwargs), compression=self.compression)


def load_model(filepath, custom_optimizers=None, custom_objects=None, compression=Compression.none):
    """keras.models.load_model, with the saved model's optimizer wrapped in DistributedOptimizer
    (Keras' own optimizers, and the classes in custom_optimizers)."""
    classes = list(keras.optimizers.Optimizer.__subclasses__())
    classes += [getattr(keras.optimizers, n) for n in dir(keras.optimizers)
                if isinstance(getattr(keras.optimizers, n), type)
                and issubclass(getattr(keras.optimizers, n), keras.optimizers.Optimizer)]
    classes += list(custom_optimizers or [])
    objects = {cls.__name__: _WrappingOptimizerClass(cls, compression) for cls in classes}
    objects.update(custom_objects or {})
    return keras.models.load_model(filepath, custom_objects=objects)


__all__ = [
    "Average", "Compression", "DistributedOptimizer", "HorovodInternalError", "PartialDistributedOptimizer",
    "ProcessSet", "Sum",
    "add_process_set", "allgather", "allreduce", "broadcast", "broadcast_global_variables", "callbacks",
    "ccl_built", "cross_rank", "cross_size", "cuda_built", "ddl_built", "gloo_built", "gloo_enabled",
    "global_process_set", "init", "is_homogeneous", "is_initialized", "load_model", "local_rank", "local_size",
    "mpi_built", "mpi_enabled", "mpi_threads_supported", "nccl_built", "rank", "reducescatter",
    "remove_process_set", "report_progress", "rocm_built", "shutdown", "size", "start_timeline", "stop_timeline",
    "elastic",
]
