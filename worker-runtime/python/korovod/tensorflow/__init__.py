"""korovod.tensorflow: Horovod's horovod.tensorflow API, so `import korovod.tensorflow as hvd` runs
Horovod TensorFlow scripts.

Python over libkorovod's C ABI, plus korovod's own graph ops written against TensorFlow's stable C
API: nothing is compiled against TensorFlow's headers, so one build serves every TensorFlow 2
(2.16 and newer are tested). Eager tensors cross by DLPack without copies; in graphs
(tf.function, tf.compat.v1 sessions) the collectives are asynchronous KorovodAllreduce, ...
kernels, or tf.py_functions where those do not apply (see _graph.py: no XLA either way).
Importing loads no native library; hvd.init() and the first graph collective do.

Progress: global rank 0 prints a `korovod-progress {...}` line (JSON: step, steps per second,
loss, ETA, ...) at the first counted step, then at most every KOROVOD_PROGRESS_INTERVAL_SECONDS
(10) and once at the end, for the operator to show in MPIJob.status. Each
DistributedGradientTape.gradient() call counts one step, inside a tf.function too (counter ops in
rank 0's graph), and so does each apply of a Keras DistributedOptimizer;
hvd.report_progress(step=, total_steps=, loss=, batch_size=, **metrics) adds what they cannot know
(docs/progress.md).
"""

from __future__ import annotations

import warnings
from typing import List

import tensorflow as tf

from korovod._keras.optimizer import DistributedOptimizer as _keras_distributed_optimizer
from korovod.common.basics import report_progress
from korovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from korovod.common.util import gpu_available
from korovod.tensorflow.compat_v1 import (BroadcastGlobalVariablesHook, broadcast_global_variables,
                                          is_legacy_optimizer, legacy_distributed_optimizer)
from korovod.tensorflow.compression import Compression
from korovod.tensorflow.functions import allgather_object, broadcast_object, broadcast_object_fn, broadcast_variables
from korovod.tensorflow.mpi_ops import (Adasum, Average, Max, Min, Product, ProcessSet, Sum, _allreduce,
                                        _grouped_allreduce, _grouped_reducescatter, _reducescatter, add_process_set,
                                        allgather, alltoall, barrier, broadcast, broadcast_, ccl_built, cross_rank,
                                        cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled,
                                        global_process_set, grouped_allgather, init, is_homogeneous, is_initialized,
                                        join, local_rank, local_rank_op, local_size, local_size_op, mpi_built,
                                        mpi_enabled, mpi_threads_supported, nccl_built, process_set_included_op,
                                        rank, rank_op, remove_process_set, rocm_built, shutdown, size, size_op,
                                        start_timeline, stop_timeline)
from korovod.tensorflow.sync_batch_norm import SyncBatchNormalization
from korovod.tensorflow.tape import DistributedGradientTape, PartialDistributedGradientTape
from korovod.tensorflow.util import _executing_eagerly  # noqa: F401 (Horovod's tests call hvd._executing_eagerly)
from korovod.tensorflow import elastic  # noqa: E402 (hvd.elastic, as Horovod's)


def _resolve_op(op, average):
    """Horovod's handling of the deprecated `average` argument (default: Average)."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of them.")
        return op
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed in v1.0",
                      DeprecationWarning)
        return Average if average else Sum
    return Average


def _check_registered(process_set) -> None:
    """ValueError unless the runtime knows process_set, before any op is made: Horovod's allreduce
    and grouped_allreduce ask process_set.size() first, which raises ValueError for a set that was
    never registered (or was removed), where the op would fail with InvalidArgumentError."""
    if process_set.process_set_id is None:
        raise ValueError(f"process_set: {process_set} has not been registered (pass it to hvd.init(process_sets=...) "
                         "or hvd.add_process_set())")
    process_set.size()  # ValueError naming the id for a set the runtime does not know


def _sparse_allreduce(slices: List[tf.IndexedSlices], op, prescale_factor, postscale_factor, process_set,
                      ignore_name_scope) -> List[tf.IndexedSlices]:
    """An allreduce of tf.IndexedSlices as Horovod does it: allgather values and indices; all of
    them as one grouped allgather (one op, negotiated and fused together)."""
    if op == Adasum:
        raise NotImplementedError("The Adasum reduction does not currently support sparse tensors. As a "
                                  "workaround please pass sparse_as_dense=True to DistributedOptimizer")
    if op not in (Sum, Average):
        raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
    parts = [p for t in slices for p in (t.values, t.indices)]
    gathered = grouped_allgather(parts, process_set=process_set, ignore_name_scope=ignore_name_scope)
    result = []
    for i, tensor in enumerate(slices):
        values, indices = gathered[2 * i], gathered[2 * i + 1]
        if op == Average:
            values = values / tf.cast(process_set.size(), values.dtype)
        result.append(tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape))
    return result


def allreduce(tensor, average=None, device_dense="", device_sparse="", compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, name=None, process_set=global_process_set,
              ignore_name_scope=False):
    """Reduces a tf.Tensor, tf.Variable or tf.IndexedSlices over the process set (op: Average by
    default, Sum, Min, Max, Product); differentiable. tf.IndexedSlices are allgathered.
    device_dense/device_sparse are accepted and ignored: the op runs on the tensor's device."""
    del device_dense, device_sparse
    op = _resolve_op(op, average)
    _check_registered(process_set)
    if isinstance(tensor, tf.IndexedSlices):
        return _sparse_allreduce([tensor], op, prescale_factor, postscale_factor, process_set, ignore_name_scope)[0]
    compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
    reduced = _allreduce(compressed, name=name, op=op, prescale_factor=prescale_factor,
                         postscale_factor=postscale_factor, ignore_name_scope=ignore_name_scope,
                         process_set=process_set)
    return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="", compression=Compression.none,
                      op=None, prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """allreduce of each tensor, the dense ones as one group (negotiated and fused together)."""
    del device_dense, device_sparse
    if not tensors:
        return tensors
    op = _resolve_op(op, average)
    _check_registered(process_set)
    result = [None] * len(tensors)
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    sparse = [i for i, t in enumerate(tensors) if isinstance(t, tf.IndexedSlices)]
    if sparse:
        reduced_slices = _sparse_allreduce([tensors[i] for i in sparse], op, prescale_factor, postscale_factor,
                                           process_set, ignore_name_scope)
        for i, r in zip(sparse, reduced_slices):
            result[i] = r
    if dense:
        pairs = [compression.compress(tf.convert_to_tensor(tensors[i])) for i in dense]
        reduced = _grouped_allreduce([c for c, _ in pairs], name=name, op=op, prescale_factor=prescale_factor,
                                     postscale_factor=postscale_factor, ignore_name_scope=ignore_name_scope,
                                     process_set=process_set)
        for i, r, (_, ctx) in zip(dense, reduced, pairs):
            result[i] = compression.decompress(r, ctx)
    return result


def reducescatter(tensor, device_dense="", compression=Compression.none, op=Average, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces `tensor` over the set (Average by default, or Sum) and returns this rank's block of
    dim 0 (ranks below dim0 % size get one extra row); differentiable."""
    del device_dense
    compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
    reduced = _reducescatter(compressed, name=name, op=op, ignore_name_scope=ignore_name_scope,
                             process_set=process_set, prescale_factor=prescale_factor,
                             postscale_factor=postscale_factor)
    return compression.decompress(reduced, ctx)


def grouped_reducescatter(tensors, device_dense="", compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter of each tensor, done as one group."""
    del device_dense
    if not tensors:
        return tensors
    pairs = [compression.compress(tf.convert_to_tensor(t)) for t in tensors]
    reduced = _grouped_reducescatter([c for c, _ in pairs], op=op, process_set=process_set,
                                     prescale_factor=prescale_factor, postscale_factor=postscale_factor)
    return [compression.decompress(r, ctx) for r, (_, ctx) in zip(reduced, pairs)]


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False, backward_passes_per_step=1,
                         op=Average, gradient_predivide_factor=1.0, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=global_process_set, scale_local_gradients=True):
    """Wraps an optimizer so that gradients are averaged across ranks before they are applied:
    a tf.compat.v1.train.Optimizer (graph mode) or a Keras 3 optimizer (as korovod.keras does)."""
    del device_dense, device_sparse
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be removed in v0.23.0.",
                      DeprecationWarning)
        groups = num_groups if groups is None else groups
    if is_legacy_optimizer(optimizer):
        return legacy_distributed_optimizer(optimizer, name, use_locking, compression, sparse_as_dense, op,
                                            gradient_predivide_factor, backward_passes_per_step, groups,
                                            process_set, scale_local_gradients)
    if op == Adasum:
        raise ValueError("op == Adasum is not supported yet with Keras")
    return _keras_distributed_optimizer(optimizer, name=name, compression=compression,
                                        sparse_as_dense=sparse_as_dense,
                                        gradient_predivide_factor=gradient_predivide_factor, op=op,
                                        backward_passes_per_step=backward_passes_per_step,
                                        average_aggregated_gradients=average_aggregated_gradients, groups=groups,
                                        process_set=process_set, scale_local_gradients=scale_local_gradients)


__all__ = [
    "Adasum", "Average", "BroadcastGlobalVariablesHook", "Compression", "DistributedGradientTape",
    "DistributedOptimizer", "HorovodInternalError", "HostsUpdatedInterrupt", "Max", "Min",
    "PartialDistributedGradientTape", "ProcessSet", "Product", "Sum", "add_process_set", "allgather",
    "allgather_object", "allreduce", "alltoall", "barrier", "broadcast", "broadcast_", "broadcast_global_variables",
    "broadcast_object", "broadcast_object_fn", "broadcast_variables", "ccl_built", "cross_rank", "cross_size",
    "cuda_built", "ddl_built", "gloo_built", "gloo_enabled", "global_process_set", "gpu_available", "grouped_allgather",
    "grouped_allreduce", "grouped_reducescatter", "init", "is_homogeneous", "is_initialized", "join",
    "local_rank", "local_rank_op", "local_size", "local_size_op", "mpi_built", "mpi_enabled",
    "mpi_threads_supported", "nccl_built", "process_set_included_op", "rank", "rank_op", "reducescatter",
    "remove_process_set", "report_progress", "rocm_built", "shutdown", "size", "size_op", "start_timeline",
    "stop_timeline", "SyncBatchNormalization", "elastic",
]
