"""Horovod's Keras callbacks for Keras 3, on every backend (values cross as numpy arrays: these
run once per epoch or once per job, not per step).

- BroadcastGlobalVariablesCallback: after the first batch (once the optimizer's state exists),
  every rank takes root_rank's model and optimizer variables.
- MetricAverageCallback: at the end of each epoch, the logged metrics become their mean over ranks.
- LearningRateScheduleCallback / LearningRateWarmupCallback: Horovod's schedules (Goyal et al.'s
  gradual warmup from lr/size to lr). Momentum correction: Keras 3 optimizers keep `momentum` as
  a Python number captured when the train step is traced, so instead of changing it for one batch
  korovod scales the momentum buffers (optimizer.momentums, e.g. SGD's) by new_lr/old_lr, which
  gives the same update; optimizers without such buffers get no correction.

Every one of them also feeds model.fit's steps, total steps and batch loss to rank 0's progress
lines (_progress.ProgressCallback: once per batch however many are in the fit).
"""

from __future__ import annotations

import keras
import numpy as np

from korovod._keras._progress import ProgressCallback
from korovod.common import basics, numpy_ops


def _key(variable):
    return variable.ref() if hasattr(variable, "ref") else id(variable)


class BroadcastGlobalVariablesCallback(ProgressCallback):
    """Broadcasts the model's and the optimizer's variables from root_rank after the first batch,
    so every worker continues from the same (random or restored) state."""

    def __init__(self, root_rank: int, device: str = "", local_variables=None):
        super().__init__()
        del device
        self.root_rank = root_rank
        self.broadcast_done = False
        self._local_vars = set()
        if local_variables is not None:
            for variable in (local_variables if isinstance(local_variables, (list, tuple)) else [local_variables]):
                if not hasattr(variable, "assign"):
                    raise ValueError("All local variables must be variables.")
                self.register_local_var(variable)

    def register_local_var(self, var) -> None:
        """`var` keeps this rank's value (it is not broadcast)."""
        self._local_vars.add(_key(var))

    def on_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        variables = [v for v in self.model.variables if _key(v) not in self._local_vars]
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            variables += list(optimizer.variables)
        broadcast_variables(variables, self.root_rank, name="BroadcastGlobalVariablesCallback")
        self.broadcast_done = True


def broadcast_variables(variables, root_rank: int, name: str = "broadcast_variables") -> None:
    """Assigns root_rank's values to Keras variables (any backend), in one batch of broadcasts."""
    if not variables:
        return
    values = [np.asarray(keras.ops.convert_to_numpy(v)) for v in variables]
    received = numpy_ops.broadcast(values, root_rank, name)
    for variable, value in zip(variables, received):
        variable.assign(value)


class MetricAverageCallback(ProgressCallback):
    """Replaces each metric in the epoch's logs by its mean over all ranks. Put it before
    callbacks that read the metrics (ReduceLROnPlateau, TensorBoard, checkpoints)."""

    # Keras may run batch ends on a thread of its own when every callback allows it: the progress
    # feed is safe there, and this callback works at epoch ends only.
    async_safe = True

    def __init__(self, device: str = ""):
        super().__init__()
        del device

    def _average_metrics_in_place(self, logs):
        if not logs:
            return
        names = sorted(k for k, v in logs.items() if np.ndim(_plain(v)) == 0)
        if not names:
            return
        values = np.array([float(_plain(logs[k])) for k in names], dtype=np.float64)
        averaged = numpy_ops.allreduce([values], "MetricAverageCallback", basics.Average)[0]
        for name, value in zip(names, averaged):
            logs[name] = float(value)

    def on_epoch_end(self, epoch, logs=None):
        self._average_metrics_in_place(logs)


def _plain(value):
    return keras.ops.convert_to_numpy(value) if hasattr(value, "dtype") and not isinstance(value, np.ndarray) \
        else value


def _get_lr(optimizer) -> float:
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))


class LearningRateScheduleCallback(ProgressCallback):
    """Sets the learning rate to initial_lr * multiplier(epoch) between start_epoch and end_epoch
    (exclusive): per epoch with staircase=True, per batch (fractional epochs) otherwise.
    multiplier is a number (exponential decay: multiplier ** (epoch - start_epoch)) or a function."""

    async_safe = True  # it changes the rate at batch begins, which Keras always calls in order

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        if callable(multiplier):
            self.multiplier = multiplier
        else:
            self.multiplier = lambda epoch: multiplier ** (epoch - start_epoch)

    def _autodetect_steps_per_epoch(self) -> int:
        if self.params.get("steps"):
            return self.params["steps"]
        raise ValueError("Could not autodetect the number of steps per epoch. Please specify the steps_per_epoch "
                         f"parameter to the {type(self).__name__}().")

    def _adjust_learning_rate(self, epoch: float) -> None:
        optimizer = self.model.optimizer
        old_lr = _get_lr(optimizer)
        new_lr = self.initial_lr * self.multiplier(epoch)
        optimizer.learning_rate = new_lr
        momentums = getattr(optimizer, "momentums", None)
        if self.momentum_correction and momentums and old_lr > 0 and new_lr != old_lr:
            ratio = new_lr / old_lr
            for buffer in momentums:
                buffer.assign(buffer * ratio)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self.current_epoch = epoch

    def on_batch_begin(self, batch, logs=None):
        if self.current_epoch < self.start_epoch or (self.end_epoch is not None and self.current_epoch >= self.end_epoch):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _get_lr(self.model.optimizer)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Gradual warmup: lr goes from initial_lr / size() to initial_lr over warmup_epochs
    (per batch), as in "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour"."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            # Round numbers at the end of each epoch (epoch + 1/steps after the last batch).
            epoch += 1.0 / self.steps_per_epoch
            size = basics.size()
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs, staircase=False,
                         momentum_correction=momentum_correction, steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and basics.rank() == 0:
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {_get_lr(self.model.optimizer):g}.")
