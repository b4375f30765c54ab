"""korovod.torch.elastic: Horovod's horovod.torch.elastic (run, TorchState, ElasticSampler).

    @hvd.elastic.run
    def train(state):
        ...  # train from state.epoch / state.batch; state.commit() every few batches

    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
    train(state)

Under `korovodrun --min-np/--max-np/--host-discovery-script` workers may come and go: a failure
rolls the survivors back to the last commit, a change of hosts interrupts everyone at a commit;
both reset the runtime into the driver's next round and sync the state from rank 0.
"""

from korovod.common.elastic import reset_runtime, run_fn
from korovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from korovod.torch.elastic.sampler import ElasticSampler
from korovod.torch.elastic.state import TorchState
from korovod.torch.mpi_ops import init, shutdown


def run(func):
    """Decorator running `func(state, ...)` elastically: it is retried after every reset, from
    the last commit (failures) or from where it was interrupted (host changes), with the state
    synced from rank 0 first.

    `func` must not be preceded by collectives the other workers skip: a worker that joins runs
    the sync while the others are in it. The first argument must be a korovod State.
    """
    return run_fn(func, _reset)


def _reset() -> None:
    reset_runtime(shutdown, init)


__all__ = ["ElasticSampler", "HorovodInternalError", "HostsUpdatedInterrupt", "TorchState", "run"]
