"""korovod.torch.elastic.TorchState and korovod.common.elastic.State without an elastic driver.

Commit / restore / sync semantics of horovod.torch.elastic.TorchState (0.28.1) on whatever job
runs the suite (1 rank, or N ranks that start from different values so that sync must make them
rank 0's), and check_host_updates fed through Horovod's on_hosts_updated entry point.
"""

import copy

import pytest
import torch
import torch.nn.functional as F

import korovod.torch as hvd
from korovod.common.elastic import HostUpdateResult, ObjectState, State
from korovod.torch.elastic.state import (ModelStateHandler, StateHandler, get_handler_registry,
                                         set_handler_registry)
from training_checks import check_on_all_ranks


def rank_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(1000 * seed + hvd.rank())
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))


def one_step(model, optimizer, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    inputs, targets = torch.randn(8, 4, generator=generator), torch.randn(8, 2, generator=generator)
    optimizer.zero_grad()
    F.mse_loss(model(inputs), targets).backward()
    optimizer.step()


def snapshot(model, optimizer):
    return copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict())


def assert_same_state(model, optimizer, expected, what: str) -> None:
    model_state, optimizer_state = expected
    for name, value in model.state_dict().items():
        assert torch.equal(value, model_state[name]), f"{what}: model {name} differs"
    actual = optimizer.state_dict()
    assert actual["param_groups"] == optimizer_state["param_groups"], f"{what}: param_groups differ"
    assert actual["state"].keys() == optimizer_state["state"].keys(), f"{what}: optimizer state keys"
    for index, entry in actual["state"].items():
        for key, value in entry.items():
            expected_value = optimizer_state["state"][index][key]
            same = torch.equal(value, expected_value) if torch.is_tensor(value) else value == expected_value
            assert same, f"{what}: optimizer state {index}.{key} differs"


def gathered(obj):
    return hvd.allgather_object(obj, name="test_elastic_state.gathered")


def test_restore_returns_to_the_last_commit():
    model = rank_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    one_step(model, optimizer, seed=1)  # momentum buffers exist from here on
    state = hvd.elastic.TorchState(model, optimizer, epoch=1, batch=5, history=[1, 2])
    committed = snapshot(model, optimizer)

    one_step(model, optimizer, seed=2)
    state.epoch, state.batch = 2, 0
    state.history = [9]
    state.restore()

    def check():
        assert_same_state(model, optimizer, committed, "after restore")
        assert (state.epoch, state.batch, state.history) == (1, 5, [1, 2])
        assert state.model is model and state.optimizer is optimizer

    check_on_all_ranks(check)


def test_commit_then_restore_keeps_the_committed_values():
    model = rank_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    one_step(model, optimizer, seed=3)
    state.epoch = 7
    state.commit()
    committed = snapshot(model, optimizer)
    one_step(model, optimizer, seed=4)
    state.epoch = 8
    state.restore()

    def check():
        assert_same_state(model, optimizer, committed, "commit then restore")
        assert state.epoch == 7

    check_on_all_ranks(check)


def test_sync_makes_every_rank_rank_0s_state():
    model = rank_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * (hvd.rank() + 1), momentum=0.5)
    one_step(model, optimizer, seed=10 + hvd.rank())
    state = hvd.elastic.TorchState(model, optimizer, epoch=10 + hvd.rank(), batch=20 + hvd.rank(),
                                   note={"rank": hvd.rank()})
    state.sync()
    mine = snapshot(model, optimizer)
    ranks = gathered((mine, state.epoch, state.batch, state.note))
    root = ranks[0]

    def check():
        assert_same_state(model, optimizer, root[0], "after sync")
        assert (state.epoch, state.batch, state.note) == (10, 20, {"rank": 0})
        assert optimizer.param_groups[0]["lr"] == pytest.approx(0.1)

    check_on_all_ranks(check)


def test_sync_broadcasts_the_committed_attributes_not_the_uncommitted_ones():
    # Horovod's ObjectState.sync broadcasts the saved values: an uncommitted change on rank 0
    # does not reach the others, and rank 0 itself goes back to its committed value.
    state = hvd.elastic.TorchState(epoch=1)
    state.epoch = 99
    state.sync()
    check_on_all_ranks(lambda: _expect(state.epoch == 1, f"epoch {state.epoch} after sync, expected 1"))


def _expect(condition: bool, message: str) -> None:
    assert condition, message


def test_assigning_a_tracked_model_commits_it():
    model = rank_model()
    state = hvd.elastic.TorchState(model=model)
    replacement = rank_model(seed=5)
    state.model = replacement
    saved = copy.deepcopy(replacement.state_dict())
    with torch.no_grad():
        for p in replacement.parameters():
            p.add_(1.0)
    state.restore()

    def check():
        assert state.model is replacement
        for name, value in replacement.state_dict().items():
            assert torch.equal(value, saved[name]), f"{name} not restored to the assigned model's values"

    check_on_all_ranks(check)


def test_values_without_a_handler_are_plain_attributes():
    state = hvd.elastic.TorchState(model=None, optimizer=None, steps=3)
    assert set(state._handlers) == set()
    state.steps = 4
    state.restore()
    assert state.steps == 3 and state.model is None and state.optimizer is None


def test_handler_registry_accepts_new_types():
    class Counter:
        def __init__(self):
            self.value = 0

    class CounterHandler(StateHandler):
        def __init__(self, counter):
            super().__init__(counter)
            self.saved = counter.value

        def save(self):
            self.saved = self.value.value

        def restore(self):
            self.value.value = self.saved

        def sync(self):
            self.value.value = hvd.broadcast_object(self.value.value, 0, name="test.counter")

    original = list(get_handler_registry())
    set_handler_registry(original + [(Counter, CounterHandler)])
    try:
        counter = Counter()
        counter.value = 5 + hvd.rank()
        state = hvd.elastic.TorchState(counter=counter)
        assert isinstance(state._handlers["counter"], CounterHandler)
        state.sync()
        assert counter.value == 5
        state.commit()
        counter.value = 9
        state.restore()
        assert counter.value == 5
    finally:
        set_handler_registry(original)
    assert get_handler_registry() == original
    assert isinstance(hvd.elastic.TorchState(model=rank_model())._handlers["model"], ModelStateHandler)


def test_reset_callbacks_run_in_registration_order_after_reset():
    calls = []

    class Recording(ObjectState):
        def reset(self):
            calls.append("reset")

    state = Recording(bcast_object=lambda obj: obj, get_rank=hvd.rank, x=1)
    state.register_reset_callbacks([lambda: calls.append("first")])
    state.register_reset_callbacks([lambda: calls.append("second"), lambda: calls.append("third")])
    state.on_hosts_updated(5, HostUpdateResult.added)
    state.on_reset()
    assert calls == ["reset", "first", "second", "third"]
    state.check_host_updates()  # the reset dropped the pending notice: nothing raised


@pytest.mark.parametrize("update,skip_sync", [
    (HostUpdateResult.added, False),
    (HostUpdateResult.removed, True),
    (HostUpdateResult.mixed, False),
])
def test_host_update_on_rank_0_interrupts_every_rank_at_the_commit(update, skip_sync):
    state = hvd.elastic.TorchState(epoch=0)
    if hvd.rank() == 0:
        state.on_hosts_updated(10, update)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as raised:
        state.commit()
    assert raised.value.skip_sync is skip_sync
    assert state._last_updated_timestamp == 10
    # Seen once: the next check passes, and an older or equal timestamp does not count.
    state.check_host_updates()
    if hvd.rank() == 0:
        state.on_hosts_updated(10, HostUpdateResult.added)
        state.on_hosts_updated(3, HostUpdateResult.added)
    state.check_host_updates()


def test_notices_on_other_ranks_do_not_count():
    # Rank 0 decides for everyone (its view is broadcast), as in Horovod.
    state = hvd.elastic.TorchState(epoch=0)
    if hvd.rank() != 0:
        state.on_hosts_updated(10, HostUpdateResult.added)
    state.check_host_updates()
    assert state._last_updated_timestamp == 0


def test_several_notices_merge_their_kinds():
    state = hvd.elastic.TorchState(epoch=0)
    if hvd.rank() == 0:
        state.on_hosts_updated(1, HostUpdateResult.removed)
        state.on_hosts_updated(2, HostUpdateResult.added)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as raised:
        state.check_host_updates()
    assert raised.value.skip_sync is False
    assert state._last_updated_timestamp == 2


def test_any_rank_is_true_everywhere_when_one_rank_says_so():
    state = hvd.elastic.TorchState(epoch=0)
    assert state.any_rank(False) is False
    assert state.any_rank(hvd.rank() == hvd.size() - 1) is True
    # The base State has no gather: it answers for itself (Horovod's trust in skip_sync).
    assert State(bcast_object=lambda obj: obj, get_rank=hvd.rank).any_rank(False) is False


def test_restoring_the_same_commit_twice_gives_the_commit_both_times():
    # torch 2's Optimizer.load_state_dict keeps the given tensors: a restore that handed over the
    # committed tensors would let the next steps change the commit itself.
    model = rank_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    one_step(model, optimizer, seed=20)
    state = hvd.elastic.TorchState(model, optimizer)
    committed = snapshot(model, optimizer)
    for attempt in range(2):
        one_step(model, optimizer, seed=21 + attempt)
        one_step(model, optimizer, seed=23 + attempt)
        state.restore()
        check_on_all_ranks(assert_same_state, model, optimizer, committed, f"restore {attempt + 1}")
