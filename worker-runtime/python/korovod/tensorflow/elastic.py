"""korovod.tensorflow.elastic: Horovod's horovod.tensorflow.elastic (run, TensorFlowKerasState,
TensorFlowState) for TensorFlow 2 in eager mode, as Horovod's supports it there.

    state = hvd.elastic.TensorFlowKerasState(model, optimizer, batch=0, epoch=0)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            for state.batch in range(state.batch, batches):
                train_step(...)          # a tf.function with DistributedGradientTape, say
                if state.batch % 10 == 0:
                    state.commit()
            state.batch = 0

    train(state)

commit() saves the variables (host copies) and the keyword arguments, restore() returns to the
last commit, sync() broadcasts rank 0's. A failed collective -- HorovodInternalError eagerly, the
error of a korovod graph op inside a tf.function -- rolls every survivor back to the last commit;
under `korovodrun --min-np/--max-np --host-discovery-script` a change of hosts interrupts everyone
at a commit; both reset the runtime into the driver's next round and sync from rank 0
(docs/elastic.md). Traced tf.functions keep working across resets.
"""

from __future__ import annotations

from typing import List

import tensorflow as tf

from korovod._keras.elastic import KerasState, VariablesState
from korovod.common.elastic import run_translating_errors as run
from korovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt


def _require_eager(what: str) -> None:
    if not tf.executing_eagerly():
        raise NotImplementedError(f"{what} works in eager mode (TensorFlow 2), as Horovod's does")


class TensorFlowKerasState(KerasState):
    """State of a Keras model and optimizer (TensorFlow backend) and any other picklable keyword
    arguments. The model must be built; the optimizer (default: model.optimizer) is built on the
    model's trainable variables if it is not yet. `backend` is accepted for Horovod's signature."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        _require_eager("TensorFlowKerasState")
        super().__init__(model, optimizer=optimizer, backend=backend, **kwargs)


class TensorFlowState(VariablesState):
    """State of a list of tf.Variable (Horovod requires it: TF2 has no global variables to default
    to) and any other picklable keyword arguments."""

    def __init__(self, variables=None, session=None, **kwargs):
        _require_eager("TensorFlowState")
        if session is not None:
            raise NotImplementedError("TensorFlowState with a TF1 session is not supported by korovod (Horovod's "
                                      "TF2 support is eager mode); pass the variables of an eager program")
        if not variables:
            raise ValueError("TensorFlowState needs the variables to track (TensorFlow 2 has no global "
                             "variables to default to)")
        self.variables: List[tf.Variable] = list(variables)
        super().__init__(**kwargs)

    def _variables(self) -> List[tf.Variable]:
        return self.variables


__all__ = ["HorovodInternalError", "HostsUpdatedInterrupt", "TensorFlowKerasState", "TensorFlowState", "run"]
