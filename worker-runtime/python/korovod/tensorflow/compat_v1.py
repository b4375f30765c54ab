"""The TF1-style pieces that TensorFlow 2 still runs under tf.compat.v1 (graphs run by a Session):
broadcast_global_variables, BroadcastGlobalVariablesHook (for MonitoredTrainingSession) and the
DistributedOptimizer for tf.compat.v1.train.Optimizer. tf.estimator is gone from TensorFlow 2.16+,
so the hook derives from tf.compat.v1.train.SessionRunHook.
"""

from __future__ import annotations

import tensorflow as tf

from korovod.common.basics import Adasum, Average
from korovod.common.process_sets import global_process_set
from korovod.tensorflow import _graph
from korovod.tensorflow.compression import Compression
from korovod.tensorflow.functions import broadcast_variables
from korovod.tensorflow.gradients import GradientReducer, variable_key


def broadcast_global_variables(root_rank: int):
    """The op that assigns root_rank's values to every global variable (graph mode only)."""
    if _graph.executing_eagerly():
        raise RuntimeError("hvd.broadcast_global_variables() does not support eager execution. "
                           "Please use `hvd.broadcast_variables(<model/optimizer variables>)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """SessionRunHook that broadcasts all global variables from root_rank once the session exists,
    so every worker starts from the same (random or restored) weights."""

    def __init__(self, root_rank: int, device: str = ""):
        super().__init__()
        self.root_rank = root_rank
        self.bcast_op = None
        self.device = device

    def begin(self):
        if not self.bcast_op or self.bcast_op.graph != tf.compat.v1.get_default_graph():
            with tf.device(self.device):
                self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)


class LegacyDistributedOptimizer(tf.compat.v1.train.Optimizer):
    """Wraps a tf.compat.v1.train.Optimizer: compute_gradients() returns gradients averaged across
    ranks; everything else is the wrapped optimizer's."""

    def __init__(self, optimizer, name=None, use_locking=False, compression=Compression.none,
                 sparse_as_dense=False, op=Average, gradient_predivide_factor=1.0, groups=None,
                 process_set=global_process_set, scale_local_gradients=True):
        name = name or f"Distributed{type(optimizer).__name__}"
        super().__init__(name=name, use_locking=use_locking)
        self._optimizer = optimizer
        self._reducer = GradientReducer(name, compression, sparse_as_dense, op, gradient_predivide_factor, groups,
                                        process_set)
        self._local_vars = set()
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients

    def register_local_var(self, var):
        """Marks `var` worker-local: its gradient is not reduced across ranks."""
        self._local_vars.add(variable_key(var))

    def compute_gradients(self, *args, **kwargs):
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        grads = [g for g, _ in grads_and_vars]
        variables = [v for _, v in grads_and_vars]
        shared = [i for i, v in enumerate(variables) if variable_key(v) not in self._local_vars]
        reduced = self._reducer([grads[i] for i in shared], [variables[i] for i in shared])
        for i, grad in zip(shared, reduced):
            grads[i] = grad
        if self.scale_local_gradients and len(shared) < len(variables):
            size = float(self.process_set.size())
            grads = [g / size if g is not None and i not in shared else g for i, g in enumerate(grads)]
        return list(zip(grads, variables))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def is_legacy_optimizer(optimizer) -> bool:
    return isinstance(optimizer, tf.compat.v1.train.Optimizer)


def legacy_distributed_optimizer(optimizer, name, use_locking, compression, sparse_as_dense, op,
                                 gradient_predivide_factor, backward_passes_per_step, groups, process_set,
                                 scale_local_gradients):
    if op == Adasum:
        raise NotImplementedError("op=Adasum with a tf.compat.v1 optimizer (Horovod's delta optimizer) is not "
                                  "supported by korovod; reduce the gradients with DistributedGradientTape(op=Adasum) "
                                  "instead")
    if backward_passes_per_step != 1:
        raise NotImplementedError("backward_passes_per_step > 1 is not supported for tf.compat.v1 optimizers "
                                  "by korovod; use a Keras optimizer with korovod.keras.DistributedOptimizer")
    return LegacyDistributedOptimizer(optimizer, name, use_locking, compression, sparse_as_dense, op,
                                      gradient_predivide_factor, groups, process_set, scale_local_gradients)
