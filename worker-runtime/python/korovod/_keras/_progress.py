"""What Keras tells rank 0's progress lines (korovod/common/progress.py).

- ProgressCallback, the base of every korovod Keras callback: in model.fit it feeds the fit's step
  (from its epoch and batch counters), total steps (params' epochs x steps) and each batch's logs
  (Keras' running loss and metrics of the epoch) to the reporter, and writes the final line at
  on_train_end. The first korovod callback of a fit feeds it; the others do nothing, so a batch
  counts once however many there are. While a fit is fed, the optimizer's own counting is off.
- step_counter(backend): how DistributedOptimizer.apply() counts a step outside such a fit: on
  the tensorflow backend eagerly or as a tf.py_function in the traced step, on jax as a
  jax.debug.callback in the jitted step, on torch then and there.
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

import keras

from korovod.common._state import state
from korovod.common.progress import OPTIMIZER


class _FitSteps:
    """A fit's step count from Keras' counters: epoch x steps + batch + 1 when fit knows its
    steps per epoch (then total = epochs x steps), else the batches this fit has run."""

    def __init__(self, params: Optional[dict]):
        params = params or {}
        steps, epochs = params.get("steps"), params.get("epochs")
        self.steps: Optional[int] = int(steps) if steps else None
        self.total: Optional[int] = self.steps * int(epochs) if self.steps and epochs else None
        self.epoch = 0
        self.earlier_epochs = 0  # batches of this fit's finished epochs (steps per epoch unknown)
        self.last_batch = -1

    def epoch_begin(self, epoch: int) -> None:
        if self.steps is None:
            self.earlier_epochs += self.last_batch + 1
            self.last_batch = -1
        self.epoch = epoch

    def step_after(self, batch: int) -> int:
        if self.steps is not None:
            return self.epoch * self.steps + batch + 1
        self.last_batch = max(self.last_batch, batch)
        return self.earlier_epochs + batch + 1


class ProgressCallback(keras.callbacks.Callback):
    """Feeds model.fit's progress to rank 0's progress lines (module docstring). Subclasses that
    override on_train_begin, on_epoch_begin, on_train_batch_end or on_train_end call super()."""

    _korovod_fit: Optional[_FitSteps] = None  # while this callback feeds a fit (rank 0 only)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        reporter = state.progress
        if reporter.active:
            fit = _FitSteps(self.params)
            self._korovod_fit = fit if reporter.fit_begin(self, fit.total) else None

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        fit = self._korovod_fit
        if fit is not None:
            fit.epoch_begin(epoch)

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)  # Keras' calls on_batch_end (the broadcast callback's)
        fit = self._korovod_fit
        if fit is not None:
            state.progress.fit_batch(fit.step_after(batch), logs)

    def on_train_end(self, logs=None):
        super().on_train_end(logs)
        if self._korovod_fit is not None:
            self._korovod_fit = None
            state.progress.fit_end(self)


def _count(source: str) -> None:
    reporter = state.progress
    if reporter.active:
        reporter.count(source)


def _count_eagerly() -> None:
    _count(OPTIMIZER)


def _count_in_jax() -> None:
    if state.progress.enabled():  # decided at trace time, as for the tensorflow backend
        import jax

        jax.debug.callback(functools.partial(_count, OPTIMIZER))


def step_counter(backend: str) -> Callable[[], None]:
    """What DistributedOptimizer.apply() calls once per apply on `backend`."""
    if backend == "tensorflow":
        from korovod.tensorflow._progress import count_step

        return functools.partial(count_step, OPTIMIZER)
    if backend == "jax":
        return _count_in_jax
    return _count_eagerly
