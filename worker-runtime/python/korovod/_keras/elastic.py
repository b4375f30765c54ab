"""korovod.keras.elastic (korovod.tensorflow.keras.elastic): Horovod's horovod.keras.elastic for
Keras 3, on any backend.

    state = hvd.elastic.KerasState(model, batch=0, epoch=0)

    @hvd.elastic.run
    def train(state):
        model.fit(x, y, initial_epoch=state.epoch, epochs=epochs,
                  callbacks=[hvd.elastic.CommitStateCallback(state, batches_per_commit=10),
                             hvd.elastic.UpdateBatchStateCallback(state),
                             hvd.elastic.UpdateEpochStateCallback(state)])

    train(state)

The state holds the model's and the optimizer's variables (as numpy copies in host memory) and any
keyword arguments; commit() saves them, restore() returns to the last commit, sync() makes every
rank's values rank 0's. Under `korovodrun --min-np/--max-np --host-discovery-script` a failure
rolls the survivors back to the last commit and a change of hosts interrupts everyone at a commit;
both reset the runtime into the driver's next round and sync from rank 0 (docs/elastic.md).
Everything crosses as numpy arrays, so the same state serves Keras' tensorflow, torch and jax
backends.
"""

from __future__ import annotations

from typing import Any, List

import keras
import numpy as np

from korovod._keras._progress import ProgressCallback
from korovod._keras.callbacks import broadcast_variables
from korovod.common import basics
from korovod.common.elastic import ObjectState, run_translating_errors
from korovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from korovod.common.objects import allgather_object, broadcast_object


# hvd.elastic.run (korovod.tensorflow's too): failures inside a graph or model.fit count.
run = run_translating_errors


def optimizer_variables(optimizer) -> List[Any]:
    """The optimizer's variables (Keras 3: a property; Horovod's Keras 2 code calls a method)."""
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


class VariablesState(ObjectState):
    """State of a list of variables (whatever _variables() returns: Keras variables of any
    backend, tf.Variable) and any other picklable keyword arguments, exposed as attributes.
    Values cross as numpy arrays: commit() copies them to host memory, restore() assigns them
    back, sync() broadcasts rank 0's."""

    def __init__(self, **kwargs):
        self._save_model()
        super().__init__(bcast_object=lambda obj: broadcast_object(obj, 0, "elastic.state"), get_rank=basics.rank,
                         **kwargs)

    def _variables(self) -> List[Any]:
        raise NotImplementedError()

    def save(self) -> None:
        self._save_model()
        super().save()

    def restore(self) -> None:
        self._load_model()
        super().restore()

    def sync(self) -> None:
        broadcast_variables(self._variables(), root_rank=0, name="elastic.variables")
        self._save_model()
        super().sync()

    def any_rank(self, flag: bool) -> bool:
        return any(allgather_object(bool(flag), "elastic.any_rank"))

    def _save_model(self) -> None:
        self._saved = [np.array(keras.ops.convert_to_numpy(v)) for v in self._variables()]

    def _load_model(self) -> None:
        variables = self._variables()
        if len(variables) != len(self._saved):
            raise RuntimeError(f"the state holds {len(variables)} variables, the last commit "
                               f"{len(self._saved)}: variables were added after the state was made")
        for variable, value in zip(variables, self._saved):
            variable.assign(value)


class KerasState(VariablesState):
    """State of a Keras model and its optimizer, and any other picklable keyword arguments
    (exposed as attributes: state.epoch, state.batch, ...).

    Args:
        model: a built Keras model (ValueError otherwise, as Horovod's).
        optimizer: its optimizer (default: model.optimizer); built here on the model's trainable
            variables if it is not yet, so its variables exist from the first commit on.
        backend: accepted for Horovod's signature (Keras 3 has no sessions).
    """

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        if not getattr(model, "built", True):
            raise ValueError("Model must be built first. Run `model.build(input_shape)`.")
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        if self.optimizer is None:
            raise ValueError("KerasState needs an optimizer: pass optimizer= or compile the model first")
        if not getattr(self.optimizer, "built", True):
            self.optimizer.build(model.trainable_variables)
        self.backend = backend
        super().__init__(**kwargs)

    def _variables(self) -> List[Any]:
        return list(self.model.variables) + optimizer_variables(self.optimizer)


class CommitStateCallback(ProgressCallback):
    """Commits `state` every `batches_per_commit` batches and at the end of every epoch."""

    def __init__(self, state, batches_per_commit: int = 1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self.batches_remaining = self.batches_per_commit  # the same count on every rank after a reset

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.state.commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()


class UpdateBatchStateCallback(ProgressCallback):
    """Keeps state.batch at the last finished batch of the epoch (0 after an epoch ends).

    Horovod's version also shortens the first epoch after a reset by the batches already done
    through params['steps']; Keras 3 reads steps_per_epoch once per fit, so that has no effect
    here: pass the remaining steps to fit yourself if an epoch must not be repeated in part."""

    def __init__(self, state):
        super().__init__()
        self.state = state

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(ProgressCallback):
    """Keeps state.epoch at the number of epochs finished, counted across resets (fit's own
    epoch numbers restart with every call)."""

    async_safe = True  # it works at epoch boundaries; its batch end is only the progress feed

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.initial_epoch = state.epoch
        self.first_epoch = None

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self.initial_epoch = self.state.epoch
        self.first_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        # fit numbers epochs from its initial_epoch argument (Horovod's examples pass none and
        # shorten `epochs` instead): count from the first one this fit runs, either way.
        if self.first_epoch is None:
            self.first_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        first = epoch if self.first_epoch is None else self.first_epoch
        self.state.epoch = self.initial_epoch + (epoch - first) + 1


__all__ = ["CommitStateCallback", "HorovodInternalError", "HostsUpdatedInterrupt", "KerasState", "VariablesState",
           "UpdateBatchStateCallback", "UpdateEpochStateCallback", "run"]
