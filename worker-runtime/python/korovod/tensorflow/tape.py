"""DistributedGradientTape: a tf.GradientTape whose gradient() returns gradients averaged across
ranks (Horovod's horovod.tensorflow.DistributedGradientTape), in eager mode and in tf.function.

The wrapper is an instance of a subclass of the wrapped tape's own class that takes over the
recording the wrapped tape made, so it is used after the `with` block as the original would be.
Each gradient() call is one training step for rank 0's progress lines (_progress.py).
"""

from __future__ import annotations

import warnings

import tensorflow as tf

from korovod.common.basics import Average
from korovod.common.process_sets import global_process_set
from korovod.common.progress import TAPE
from korovod.tensorflow._progress import count_step
from korovod.tensorflow.compression import Compression
from korovod.tensorflow.gradients import GradientReducer, variable_key


class _DistributedGradientTape(tf.GradientTape):
    """Mixed in front of the wrapped tape's class by DistributedGradientTape()."""

    def _korovod_setup(self, reducer: GradientReducer, process_set, scale_local_gradients: bool) -> None:
        self._korovod_reducer = reducer
        self._korovod_local_sources = set()
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients

    def register_local_source(self, source) -> None:
        """Marks `source` (a variable) worker-local: its gradient is not reduced across ranks
        (and, with scale_local_gradients, divided by the set's size as Horovod does)."""
        self._korovod_local_sources.add(variable_key(source))

    def gradient(self, target, sources, output_gradients=None, use_generic_names=False, **kwargs):
        del use_generic_names  # korovod's gradient names are always positional
        gradients = super().gradient(target, sources, output_gradients, **kwargs)
        flat_sources = tf.nest.flatten(sources)
        flat_grads = tf.nest.flatten(gradients, expand_composites=False)
        local = [variable_key(s) in self._korovod_local_sources for s in flat_sources]
        shared = [i for i, is_local in enumerate(local) if not is_local]
        reduced = self._korovod_reducer([flat_grads[i] for i in shared], [flat_sources[i] for i in shared])
        result = list(flat_grads)
        for i, grad in zip(shared, reduced):
            result[i] = grad
        if self.scale_local_gradients and any(local):
            size = float(self.process_set.size())
            for i, is_local in enumerate(local):
                if is_local and result[i] is not None:
                    result[i] = _scaled(result[i], 1.0 / size)
        count_step(TAPE)
        return tf.nest.pack_sequence_as(gradients, result)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None, use_generic_names=False):
        """([(local source, grad)], [(global source, grad)]) in the order of `sources`."""
        gradients = self.gradient(target, sources, output_gradients, use_generic_names)
        local, shared = [], []
        for source, grad in zip(sources, gradients):
            (local if variable_key(source) in self._korovod_local_sources else shared).append((source, grad))
        return local, shared


def _scaled(grad, factor: float):
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
    return grad * factor


def _check_groups_argument(op, gradient_predivide_factor, num_groups, groups):
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be removed in v0.23.0.",
                      DeprecationWarning)
        if groups is None:
            groups = num_groups
    return groups


def DistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                            sparse_as_dense=False, op=Average, gradient_predivide_factor=1.0, num_groups=0,
                            groups=None, process_set=global_process_set, scale_local_gradients=True):
    """Wraps `gradtape` so that gradient() averages the gradients across the process set.

    compression: Compression.none/fp16/bf16 for the wire; sparse_as_dense: reduce
    tf.IndexedSlices as dense tensors (else they are allgathered); op: Average (default), Sum, ...;
    gradient_predivide_factor: with Average, scale by 1/f before the sum and f/size after it;
    groups: an int (that many fused groups) or lists of variables reduced together; process_set:
    the ranks to reduce over. device_dense/device_sparse are accepted and ignored (korovod reduces
    each tensor on the device it is on).
    """
    del device_dense, device_sparse
    groups = _check_groups_argument(op, gradient_predivide_factor, num_groups, groups)
    reducer = GradientReducer("DistributedGradientTape", compression, sparse_as_dense, op, gradient_predivide_factor,
                              groups, process_set)
    cls = type(gradtape.__class__.__name__, (_DistributedGradientTape, gradtape.__class__), {})
    tape = cls(persistent=gradtape._persistent, watch_accessed_variables=gradtape._watch_accessed_variables)
    # Take over what the wrapped tape recorded (it may be used after its `with` block).
    tape._tape = gradtape._tape
    tape._recording = gradtape._recording
    tape._watched_variables = getattr(gradtape, "_watched_variables", ())
    tape._korovod_setup(reducer, process_set, scale_local_gradients)
    return tape


def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                                   sparse_as_dense=False, op=Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=global_process_set, local_layers=None,
                                   scale_local_gradients=True):
    """DistributedGradientTape that leaves the gradients of `local_layers` (Keras layers) local."""
    if local_layers is None:
        local_layers = []
    elif not isinstance(local_layers, (list, tuple)):
        local_layers = [local_layers]
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups, process_set,
                                   scale_local_gradients)
    for layer in local_layers:
        if not hasattr(layer, "trainable_weights"):
            raise ValueError("All local layers must be Keras layers.")
        for variable in layer.trainable_weights:
            tape.register_local_source(variable)
    return tape
