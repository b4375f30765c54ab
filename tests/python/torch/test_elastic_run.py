"""hvd.elastic.run's retry loop on a job of fixed membership (mpirun, korovodrun or one process).

A reset is shutdown + init, which on a plain job brings the same ranks back: enough to check what
the loop does around a failure or a host update without an elastic driver. Failures are injected
by raising HorovodInternalError inside the training function (on every rank, or on one rank
only, whose shutdown then fails the others' next collective). Every run must end with the
weights of a run without failures, identical on all ranks, having redone only the steps since
the last commit.
"""

import pytest
import torch
import torch.nn.functional as F

import korovod.common.basics as basics
import korovod.torch as hvd
from korovod.common.elastic import HostUpdateResult
from training_checks import check_on_all_ranks

TOTAL_STEPS = 12
COMMIT_EVERY = 3


class Trainer:
    """A small model trained by DistributedOptimizer inside hvd.elastic.run, recording what ran.

    inject: {completed steps: action} where action(state) runs on this rank once, at the top of
    the step after that many steps completed (e.g. raises HorovodInternalError).
    """

    def __init__(self, inject=None):
        torch.manual_seed(100 + hvd.rank())  # ranks start apart: the first sync must align them
        self.model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
        base = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        self.optimizer = hvd.DistributedOptimizer(base, named_parameters=self.model.named_parameters())
        self.inject = dict(inject or {})
        self.executed = []  # step index of every completed optimizer step, redone ones included
        self.events = []    # "sync", "reset", "callback" in the order they happened
        self.runtimes = set()

    def batch(self, step: int):
        generator = torch.Generator().manual_seed(1000 * step + hvd.rank())
        return torch.randn(5, 6, generator=generator), torch.randn(5, 3, generator=generator)

    def run(self):
        state = hvd.elastic.TorchState(self.model, self.optimizer, step=0)
        original_sync, original_reset = state.sync, state.reset

        def recording_sync():
            self.events.append("sync")
            original_sync()

        def recording_reset():
            self.events.append("reset")
            original_reset()

        state.sync, state.reset = recording_sync, recording_reset
        state.register_reset_callbacks([lambda: self.events.append("callback")])

        @hvd.elastic.run
        def train(state, total):
            self.runtimes.add(id(basics.state.runtime))
            while state.step < total:
                action = self.inject.pop(state.step, None)
                if action is not None:
                    action(state)
                inputs, targets = self.batch(state.step)
                self.optimizer.zero_grad()
                F.mse_loss(self.model(inputs), targets).backward()
                self.optimizer.step()
                self.executed.append(state.step)
                state.step += 1
                if state.step % COMMIT_EVERY == 0:
                    state.commit()
            return "finished"

        assert train(state, TOTAL_STEPS) == "finished"
        return state

    def weights(self):
        return [p.detach().clone() for p in self.model.parameters()]


def reference_weights():
    trainer = Trainer()
    trainer.run()
    assert trainer.executed == list(range(TOTAL_STEPS))
    assert trainer.events == ["sync"]
    return trainer.weights()


def check_result(trainer, state, expected_weights, executed, events):
    everyone = hvd.allgather_object(trainer.weights(), name="test_elastic_run.weights")

    def check():
        assert state.step == TOTAL_STEPS
        assert trainer.executed == executed, f"steps executed {trainer.executed}, expected {executed}"
        assert trainer.events == events, f"events {trainer.events}, expected {events}"
        for rank, weights in enumerate(everyone):
            for index, (mine, theirs) in enumerate(zip(trainer.weights(), weights)):
                assert torch.equal(mine, theirs), f"parameter {index} differs from rank {rank}'s"
        for index, (mine, expected) in enumerate(zip(trainer.weights(), expected_weights)):
            assert torch.allclose(mine, expected, rtol=1e-6, atol=1e-7), \
                f"parameter {index} differs from the run without failures"

    check_on_all_ranks(check)


def fail(state):
    raise hvd.HorovodInternalError(f"injected failure at step {state.step} on rank {hvd.rank()}")


def test_without_failures_the_function_runs_once():
    trainer = Trainer()
    state = trainer.run()
    check_result(trainer, state, reference_weights(), list(range(TOTAL_STEPS)), ["sync"])
    assert len(trainer.runtimes) == 1


def test_failure_on_every_rank_rolls_back_to_the_last_commit():
    expected = reference_weights()
    trainer = Trainer(inject={7: fail})
    before = id(basics.state.runtime)
    state = trainer.run()
    # Step 6 completed after the commit at 6 and is redone; the runtime was restarted.
    executed = list(range(7)) + list(range(6, TOTAL_STEPS))
    check_result(trainer, state, expected, executed, ["sync", "reset", "callback", "sync"])
    assert before in trainer.runtimes and len(trainer.runtimes) == 2


def test_failure_on_one_rank_fails_the_others_and_all_roll_back():
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks: the other ranks learn of the failure from their collectives")
    # Rank 1's reset (shutdown + init) ends rank 0's engine too, often before rank 0 has queued
    # step 8's allreduce: that allreduce must fail (HorovodInternalError) rather than wait on a
    # stopped engine -- it hung 3 of 13 jobs until the runtime failed such operations at their
    # wait (TcpRuntime.OperationAfterAnotherRanksShutdownFailsInsteadOfHanging).
    expected = reference_weights()
    last = hvd.size() - 1
    trainer = Trainer(inject={8: fail} if hvd.rank() == last else {})
    state = trainer.run()
    # The failing rank stops before step 8; the others fail inside step 8's allreduce, so none
    # completes it: all go back to the commit at 6 and redo steps 6 and 7.
    executed = list(range(8)) + list(range(6, TOTAL_STEPS))
    check_result(trainer, state, expected, executed, ["sync", "reset", "callback", "sync"])


def test_failures_in_a_row():
    expected = reference_weights()
    trainer = Trainer(inject={1: fail, 4: fail, 5: fail})
    state = trainer.run()
    # 1 fails before any commit: back to the start. 4 and 5 fail after the commit at 3.
    executed = [0] + list(range(0, 4)) + [3, 4] + list(range(3, TOTAL_STEPS))
    cycle = ["reset", "callback", "sync"]
    check_result(trainer, state, expected, executed, ["sync"] + cycle * 3)


def notice(update):
    def action(state):
        if hvd.rank() == 0:
            state.on_hosts_updated(50, update)
    return action


@pytest.mark.parametrize("update,synced", [(HostUpdateResult.added, True),
                                           (HostUpdateResult.removed, False)])
def test_host_update_interrupts_at_the_next_commit_without_rollback(update, synced):
    expected = reference_weights()
    trainer = Trainer(inject={4: notice(update)})
    state = trainer.run()
    # Interrupted at the commit after step 5: nothing is redone; a removal skips the sync.
    events = ["sync", "reset", "callback"] + (["sync"] if synced else [])
    check_result(trainer, state, expected, list(range(TOTAL_STEPS)), events)


def test_a_rank_that_needs_the_sync_makes_every_rank_sync():
    # As when a worker joins while the others were told "hosts removed": its first iteration
    # syncs, so the others must too (they would otherwise wait in different collectives).
    expected = reference_weights()
    last = hvd.size() - 1

    def interrupt(state):
        raise hvd.HostsUpdatedInterrupt(skip_sync=hvd.rank() != last)

    trainer = Trainer(inject={COMMIT_EVERY * 2: interrupt})
    state = trainer.run()
    check_result(trainer, state, expected, list(range(TOTAL_STEPS)),
                 ["sync", "reset", "callback", "sync"])


def test_other_exceptions_end_the_run_without_reset():
    def broken(state):
        raise KeyError("not elastic")

    trainer = Trainer(inject={2: broken})
    with pytest.raises(KeyError):
        trainer.run()
    assert trainer.events == ["sync"] and trainer.executed == [0, 1]
    assert len(trainer.runtimes) == 1
