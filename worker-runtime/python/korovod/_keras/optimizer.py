"""DistributedOptimizer for Keras 3: averages gradients across ranks before the wrapped optimizer
applies them (Horovod's horovod.keras / horovod.tensorflow.keras DistributedOptimizer).

Keras 3 sends every update through Optimizer.apply(grads, variables) (apply_gradients, model.fit's
train step, and stateless_apply on the JAX backend), so that is the one method overridden, on a
subclass of the wrapped optimizer's own class made from its config (as Horovod does): isinstance
checks, get_config and saving see the original optimizer class.

backward_passes_per_step > 1 sums the gradients of that many steps locally (Horovod's semantics;
their mean with average_aggregated_gradients) and reduces and applies them on the last one; the
steps in between only count the optimizer's iterations. Supported on the tensorflow and torch
backends (it needs a conditional update; the JAX backend's jitted step cannot hold a host
callback inside lax.cond reliably).

Each apply() is one training step for rank 0's progress lines (_progress.py; with
backward_passes_per_step > 1, each pass), except while korovod's callbacks feed a model.fit.
"""

from __future__ import annotations

import keras

from korovod._keras._progress import step_counter
from korovod._keras.compression import Compression
from korovod._keras.gradients import KerasGradientReducer
from korovod.common._state import state as runtime_state
from korovod.common.basics import Average, Sum
from korovod.common.process_sets import global_process_set


def _key(variable):
    return variable.ref() if hasattr(variable, "ref") else id(variable)


class _DistributedOptimizer:
    """Mixed in front of the wrapped optimizer's class."""

    def _korovod_setup(self, reducer: KerasGradientReducer, backward_passes_per_step: int,
                       average_aggregated_gradients: bool, process_set, scale_local_gradients: bool) -> None:
        # Plain attributes, set without Keras' attribute tracking (they are not optimizer state).
        for name, value in (("_korovod_reducer", reducer), ("_korovod_passes", backward_passes_per_step),
                            ("_korovod_average_aggregated", average_aggregated_gradients),
                            ("_korovod_local", set()), ("process_set", process_set),
                            ("scale_local_gradients", scale_local_gradients),
                            ("_korovod_count_step", step_counter(reducer.backend))):
            object.__setattr__(self, name, value)

    @property
    def backward_passes_per_step(self) -> int:
        return self._korovod_passes

    def register_local_var(self, var) -> None:
        """Marks `var` worker-local: its gradient is not reduced across ranks."""
        self._korovod_local.add(_key(var))

    def build(self, variables):
        super().build(variables)
        if self._korovod_passes > 1:
            # Accumulators live with the optimizer's state (saved, broadcast by the callback).
            self._korovod_accumulators = [self.add_variable_from_reference(v, name="korovod_accumulated")
                                          for v in variables]
            self._korovod_counter = self.add_variable(shape=(), dtype="int64", initializer="zeros",
                                                      name="korovod_passes")

    def _korovod_reduce(self, grads, variables, postscale: float = 1.0):
        shared = [i for i, v in enumerate(variables) if _key(v) not in self._korovod_local]
        reduced = self._korovod_reducer([grads[i] for i in shared], [variables[i] for i in shared], postscale)
        result = list(grads)
        for i, grad in zip(shared, reduced):
            result[i] = grad
        if self.scale_local_gradients and len(shared) < len(result):
            size = float(self.process_set.size())
            result = [g if g is None or i in shared else g / size for i, g in enumerate(result)]
        return result

    def apply(self, grads, trainable_variables=None):
        variables = list(trainable_variables) if trainable_variables is not None else list(self._trainable_variables)
        grads = list(grads)
        if self._korovod_passes == 1:
            result = super().apply(self._korovod_reduce(grads, variables), trainable_variables)
        else:
            if not self.built:
                self.build(variables)
            result = self._korovod_apply_accumulated(grads, variables, trainable_variables)
        if runtime_state.progress.active:
            self._korovod_count_step()
        return result

    def _korovod_apply_accumulated(self, grads, variables, trainable_variables):
        passes = self._korovod_passes
        index = {_key(v): i for i, v in enumerate(self._trainable_variables)}
        accumulators = [self._korovod_accumulators[index[_key(v)]] for v in variables]
        summed = [acc if g is None else keras.ops.add(acc, keras.ops.cast(g, acc.dtype))
                  for acc, g in zip(accumulators, grads)]
        scale = 1.0 / passes if self._korovod_average_aggregated else 1.0

        def update():
            reduced = self._korovod_reduce(summed, variables, scale)
            super(_DistributedOptimizer, self).apply(reduced, trainable_variables)
            for acc in accumulators:
                acc.assign(keras.ops.zeros_like(acc))
            self._korovod_counter.assign(0)
            return keras.ops.convert_to_tensor(0)

        def accumulate():
            for acc, value in zip(accumulators, summed):
                acc.assign(value)
            self._korovod_counter.assign_add(1)
            self._iterations.assign_add(1)
            return keras.ops.convert_to_tensor(0)

        return keras.ops.cond(keras.ops.equal(self._korovod_counter + 1, passes), update, accumulate)


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=Compression.none,
                         sparse_as_dense=False, gradient_predivide_factor=1.0, op=Average,
                         backward_passes_per_step=1, average_aggregated_gradients=False, num_groups=0,
                         groups=None, process_set=global_process_set, scale_local_gradients=True):
    """Wraps a Keras 3 optimizer so that gradients are averaged across the process set before
    they are applied (tensorflow, torch and jax backends).

    name: prefix of the gradients' collective names (default "Distributed<class>"); compression:
    korovod.keras.Compression.none/fp16/bf16; op: Average (default) or Sum;
    gradient_predivide_factor: with Average, scale by 1/f before the sum and f/size after it;
    backward_passes_per_step / average_aggregated_gradients: see the module docstring; groups
    (tensorflow backend): an int or lists of variables reduced together. device_dense and
    device_sparse are accepted and ignored. Returns a new optimizer built from `optimizer`'s config
    (its state, if any, is not carried over: wrap before training, as with Horovod).
    """
    del device_dense, device_sparse
    if op not in (Average, Sum):
        raise ValueError("op currently only supports Average and Sum")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0 and groups is None:
        groups = num_groups
    if groups is not None and not isinstance(groups, list) and not (isinstance(groups, int) and groups > 0):
        raise ValueError("groups should be a non-negative integer or a list of list of tf.Variable.")
    if not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
        raise ValueError(f"backward_passes_per_step must be an integer >= 1, not {backward_passes_per_step!r}")
    if backward_passes_per_step > 1 and keras.backend.backend() == "jax":
        raise NotImplementedError("backward_passes_per_step > 1 is not supported on Keras' JAX backend by korovod; "
                                  "use the tensorflow or torch backend")
    base = optimizer.__class__
    cls = type(base.__name__, (_DistributedOptimizer, base), {"__module__": base.__module__})
    distributed = cls.from_config(optimizer.get_config())
    reducer = KerasGradientReducer(name or f"Distributed{base.__name__}", compression, sparse_as_dense, op,
                                   gradient_predivide_factor, groups, process_set)
    distributed._korovod_setup(reducer, backward_passes_per_step, average_aggregated_gradients, process_set,
                               scale_local_gradients)
    return distributed


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                                compression=Compression.none, sparse_as_dense=False, gradient_predivide_factor=1.0,
                                op=Average, backward_passes_per_step=1, average_aggregated_gradients=False,
                                groups=None, process_set=global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer whose `local_layers` (a keras.layers.Layer or a list of them) keep
    their gradients unreduced, as Horovod's: their trainable weights are registered with
    register_local_var, so each rank applies its own gradient of them (divided by the process
    set's size when scale_local_gradients, Horovod's default). Without local_layers it is
    DistributedOptimizer. The other arguments are DistributedOptimizer's."""
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, keras.layers.Layer):
        local_layers = [local_layers]
    else:
        local_layers = list(local_layers)
        for i, layer in enumerate(local_layers):
            if not isinstance(layer, keras.layers.Layer):
                raise ValueError(f"local_layers[{i}] is a {type(layer).__name__}: all local layers must be of "
                                 "keras.layers.Layer type")
    distributed = DistributedOptimizer(optimizer, name, device_dense, device_sparse, compression, sparse_as_dense,
                                       gradient_predivide_factor, op, backward_passes_per_step,
                                       average_aggregated_gradients, groups=groups, process_set=process_set,
                                       scale_local_gradients=scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            distributed.register_local_var(var)
    return distributed
