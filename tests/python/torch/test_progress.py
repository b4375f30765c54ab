"""Rank 0's progress lines (korovod/common/progress.py, docs/progress.md).

The reporter on a fake clock, topology and writer: when lines are written (first step, interval,
final line), what they say (rates, samples per second, ETA, null for NaN), who counts (no step
counted twice, report_progress's step winning), the argument checks and
KOROVOD_PROGRESS_INTERVAL_SECONDS. Then on the job's real ranks: DistributedOptimizer.step()
(plain, under skip_synchronize, and Adasum where the ranks allow it) and hvd.report_progress
give rank 0 lines with advancing steps and every other rank none. Needs torch only for the
second part and for tensor arguments.
"""

import json
import math
from typing import List

import numpy as np
import pytest
import torch

import korovod.torch as hvd
from korovod.common import basics, progress
from korovod.common.progress import ProgressReporter
from korovod.common.settings import Settings
import progress_lines
from training_checks import check_on_all_ranks

WALL = 1_796_000_000.0  # 2026-11-30T00:53:20Z: what the fake wall clock reads at fake time 0


class Fake:
    """A reporter with a clock the test moves, a topology it sets and the lines it wrote."""

    def __init__(self, rank=0, size=2, interval=10.0):
        self.now = 100.0
        self.topology = (rank, size)
        self.lines: List[str] = []
        self.exit_hooks = []
        self.reporter = ProgressReporter(lambda: self.topology, lambda: interval, clock=lambda: self.now,
                                         wall_clock=lambda: WALL + self.now, write=self.lines.append,
                                         at_exit=self.exit_hooks.append)

    def steps(self, n, seconds_each=0.0, source=progress.OPTIMIZER):
        for _ in range(n):
            self.now += seconds_each
            self.reporter.count(source)

    def parsed(self):
        out = []
        for line in self.lines:
            assert line.startswith("korovod-progress {"), line
            text = line[len("korovod-progress "):]
            assert ", " not in text and ": " not in text, f"not compact: {text}"
            out.append(json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in {text}")))
        return out


def test_first_line_at_the_first_step_then_one_per_interval():
    fake = Fake(interval=10.0)
    fake.steps(1)
    fake.steps(9, seconds_each=1.0)  # t = 109: not due yet
    assert len(fake.lines) == 1
    fake.steps(1, seconds_each=1.0)  # t = 110: due
    fake.steps(5, seconds_each=1.0)
    first, second = fake.parsed()
    assert first == {"step": 1, "elapsed_seconds": 0.0, "last_step_time": "2026-11-30T00:55:00Z",
                     "source": "optimizer"}
    assert second["step"] == 11
    assert second["steps_per_second"] == 1.0  # 10 steps since the first line, in 10 s
    assert second["elapsed_seconds"] == 10.0
    assert second["last_step_time"] == "2026-11-30T00:55:10Z"


def test_final_line_only_when_something_changed_since_the_last():
    fake = Fake()
    fake.reporter.finish()
    assert fake.lines == []  # nothing counted yet
    fake.steps(1)
    fake.reporter.finish()
    assert len(fake.lines) == 1  # the first line said it all
    fake.steps(3, seconds_each=0.5)
    fake.now += 30  # the final line comes later than the last step
    fake.reporter.finish()
    fake.reporter.finish()
    assert len(fake.lines) == 2
    final = fake.parsed()[1]
    assert final["step"] == 4
    assert final["steps_per_second"] == 2.0  # over the steps' own times, not until the line
    assert final["elapsed_seconds"] == 31.5
    assert final["last_step_time"] == "2026-11-30T00:55:01Z"


def test_the_first_use_registers_the_final_line_at_exit_on_rank_0_only():
    fake = Fake()
    fake.steps(2)
    assert fake.exit_hooks == [fake.reporter.finish]
    other = Fake(rank=1)
    other.steps(2)
    assert other.exit_hooks == []


def test_eta_and_samples_per_second():
    fake = Fake(size=4, interval=10.0)
    fake.reporter.report(total_steps=1000, batch_size=32)  # t = 100: a first line, without a step
    fake.steps(1, seconds_each=1.0)
    fake.steps(36, seconds_each=0.25)  # t = 110: step 37
    first, line = fake.parsed()
    assert first == {"total_steps": 1000, "elapsed_seconds": 0.0}
    assert line["step"] == 37 and line["total_steps"] == 1000
    assert line["steps_per_second"] == 4.0  # since the first step, as the last line had none
    assert line["samples_per_second"] == 4.0 * 32 * 4  # per-rank batch x ranks
    assert line["eta_seconds"] == (1000 - 37) / 4.0
    assert line["elapsed_seconds"] == 9.0  # since the first step
    assert list(line) == ["step", "total_steps", "steps_per_second", "samples_per_second", "elapsed_seconds",
                          "last_step_time", "eta_seconds", "source"]


def test_no_eta_or_samples_without_a_total_or_a_batch_size():
    fake = Fake(interval=1.0)
    fake.steps(5, seconds_each=1.0)
    line = fake.parsed()[-1]
    assert "steps_per_second" in line
    assert not {"eta_seconds", "samples_per_second", "total_steps"} & set(line)


def test_non_finite_loss_and_metrics_are_null():
    fake = Fake()
    _report(fake.reporter, step=1, loss=math.nan, accuracy=0.5, grad_norm=math.inf, other=-math.inf)
    line = fake.parsed()[0]
    assert line["loss"] is None
    assert line["metrics"] == {"accuracy": 0.5, "grad_norm": None, "other": None}


def test_other_ranks_print_nothing_and_stop_at_the_boolean_check():
    fake = Fake(rank=1)
    assert fake.reporter.active  # undecided before the first use
    fake.steps(3)
    fake.reporter.report(step=5, loss=1.0)
    fake.reporter.finish()
    assert fake.lines == [] and not fake.reporter.active


def test_interval_zero_or_negative_turns_lines_off():
    for interval in (0.0, -1.0):
        fake = Fake(interval=interval)
        fake.steps(3)
        fake.reporter.finish()
        assert fake.lines == [] and not fake.reporter.active


def test_nothing_before_init_and_the_first_use_after_it_decides():
    fake = Fake()
    fake.topology = None  # no runtime yet
    fake.steps(2)
    fake.reporter.report(loss=1.0)
    assert fake.lines == [] and fake.reporter.active
    fake.topology = (0, 2)
    fake.steps(1)
    assert fake.parsed()[0]["step"] == 1


def test_shutdown_writes_the_final_line_and_a_new_init_decides_again():
    fake = Fake()
    fake.steps(1)
    fake.steps(4, seconds_each=1.0)
    fake.reporter.runtime_changed(None)  # hvd.shutdown()
    assert [line["step"] for line in fake.parsed()] == [1, 5]
    fake.topology = (1, 2)  # an elastic reset made this process rank 1
    fake.reporter.runtime_changed(12345)
    fake.steps(3, seconds_each=20.0)
    assert len(fake.lines) == 2 and not fake.reporter.active


def test_a_step_is_counted_by_the_first_source_only():
    fake = Fake(interval=0.001)
    fake.steps(2, seconds_each=1.0, source=progress.OPTIMIZER)
    fake.steps(2, seconds_each=1.0, source=progress.TAPE)  # a second counter of the same steps
    fake.steps(1, seconds_each=1.0, source=progress.OPTIMIZER)
    lines = fake.parsed()
    assert [line["step"] for line in lines] == [1, 2, 3]
    assert {line["source"] for line in lines} == {"optimizer"}


def test_report_progress_step_wins_from_then_on():
    fake = Fake(interval=0.001)
    fake.steps(3, seconds_each=1.0)
    fake.now += 1.0
    fake.reporter.report(step=100, total_steps=200, loss=0.25)
    fake.steps(5, seconds_each=1.0)  # the optimizer's counts no longer count
    fake.now += 1.0
    _report(fake.reporter, step=101, loss=np.float32(0.125), accuracy=np.float64(0.75))
    lines = fake.parsed()
    assert [line["step"] for line in lines] == [1, 2, 3, 100, 101]
    assert lines[3]["source"] == "report_progress" and lines[3]["loss"] == 0.25
    assert lines[4]["loss"] == 0.125 and lines[4]["metrics"] == {"accuracy": 0.75}
    assert lines[4]["total_steps"] == 200


def test_report_progress_without_a_step_leaves_counting_to_the_optimizer():
    fake = Fake(interval=0.001)
    fake.steps(1, seconds_each=1.0)
    fake.reporter.report(loss=torch.tensor(0.5), batch_size=torch.tensor(8))
    fake.steps(1, seconds_each=1.0)
    line = fake.parsed()[-1]
    assert line["step"] == 2 and line["source"] == "optimizer" and line["loss"] == 0.5
    assert line["samples_per_second"] == 1.0 * 8 * 2


def _report(reporter, step=None, total_steps=None, loss=None, batch_size=None, **metrics):
    """hvd.report_progress on this reporter."""
    reporter.report(step, total_steps, loss, batch_size, metrics)


@pytest.mark.parametrize("arguments, named", [
    ({"step": 1.5}, "step"), ({"step": "3"}, "step"), ({"step": True}, "step"),
    ({"total_steps": 10.0}, "total_steps"), ({"loss": "low"}, "loss"), ({"loss": [1.0]}, "loss"),
    ({"loss": torch.ones(3)}, "loss"), ({"batch_size": 2.0}, "batch_size"), ({"accuracy": object()}, "accuracy"),
])
def test_wrong_types_are_a_type_error_naming_the_argument(arguments, named):
    fake = Fake()
    with pytest.raises(TypeError, match=f"report_progress: {named} must be"):
        _report(fake.reporter, **arguments)
    assert fake.lines == []


def test_out_of_range_counts_are_a_value_error():
    fake = Fake()
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        fake.reporter.report(batch_size=0)
    with pytest.raises(ValueError, match="step must be >= 0"):
        fake.reporter.report(step=-1)


def test_keras_fit_feeds_steps_once_and_the_optimizer_waits_for_its_end():
    fake = Fake(interval=0.001)
    first, second = object(), object()
    assert fake.reporter.fit_begin(first, total_steps=4)
    assert not fake.reporter.fit_begin(second, total_steps=4)  # the fit's other korovod callback
    for step in (1, 2, 3):
        fake.now += 1.0
        fake.steps(1, source=progress.OPTIMIZER)  # the optimizer's count is ignored during the fit
        fake.reporter.fit_batch(step, {"loss": 0.5 / step, "accuracy": 0.25 * step})
    fake.reporter.fit_batch(2, {"loss": 9.0})  # a late, out-of-order batch end: ignored
    fake.reporter.fit_end(first)  # nothing changed since step 3's line: no final line
    lines = fake.parsed()
    assert [line["step"] for line in lines] == [1, 2, 3]
    assert lines[2]["loss"] == 0.5 / 3
    assert lines[1] == {"step": 2, "total_steps": 4, "steps_per_second": 1.0, "loss": 0.25,
                        "metrics": {"accuracy": 0.5}, "elapsed_seconds": 1.0,
                        "last_step_time": "2026-11-30T00:55:02Z", "eta_seconds": 2.0, "source": "keras"}
    fake.now += 1.0
    fake.steps(1)  # after the fit the optimizer counts again
    after = fake.parsed()[-1]
    assert after["step"] == 4 and after["source"] == "optimizer" and "total_steps" not in after


def test_a_fit_that_never_ended_gives_way_to_the_next():
    fake = Fake()
    crashed, next_fit = object(), object()
    assert fake.reporter.fit_begin(crashed, total_steps=10)
    fake.reporter.fit_batch(1, {"loss": 1.0})  # then an exception: no on_train_end
    assert fake.reporter.fit_begin(next_fit, total_steps=10)


def test_interval_variable_parsing():
    assert Settings.from_environment({}).progress_interval_seconds == 10.0
    assert Settings.from_environment({"KOROVOD_PROGRESS_INTERVAL_SECONDS": ""}).progress_interval_seconds == 10.0
    assert Settings.from_environment({"KOROVOD_PROGRESS_INTERVAL_SECONDS": "2.5"}).progress_interval_seconds == 2.5
    assert Settings.from_environment({"KOROVOD_PROGRESS_INTERVAL_SECONDS": "0"}).progress_interval_seconds == 0.0
    assert Settings.from_environment({"KOROVOD_PROGRESS_INTERVAL_SECONDS": "-1"}).progress_interval_seconds == -1.0
    for bad in ("ten", "nan", "10s"):
        with pytest.raises(ValueError, match="KOROVOD_PROGRESS_INTERVAL_SECONDS"):
            Settings.from_environment({"KOROVOD_PROGRESS_INTERVAL_SECONDS": bad})


# ---------------------------------------------------------------- on the job's ranks


@pytest.fixture
def lines(monkeypatch):
    return progress_lines.capture(monkeypatch)


def _steps(written):
    return [line["step"] for line in progress_lines.parse(written)]


def _train(optimizer, model, steps):
    for i in range(steps):
        optimizer.zero_grad()
        model(torch.full((2, 3), float(hvd.rank() + i))).sum().backward()
        optimizer.step()


def test_distributed_optimizer_steps_give_rank_0_lines_and_other_ranks_none(lines):
    model = torch.nn.Linear(3, 1)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters())
    _train(optimizer, model, 3)
    optimizer.zero_grad()
    model(torch.ones(2, 3)).sum().backward()
    optimizer.synchronize()  # e.g. to clip the averaged gradients, then:
    with optimizer.skip_synchronize():
        optimizer.step()
    n = hvd.size()
    if n > 1 and n & (n - 1) == 0:  # Adasum's own optimizer needs a power of 2 ranks (and more than one)
        adasum = torch.nn.Linear(3, 1)
        _train(hvd.DistributedOptimizer(torch.optim.SGD(adasum.parameters(), lr=0.01),
                                        named_parameters=adasum.named_parameters(), op=hvd.Adasum), adasum, 2)
        expected = [1, 2, 3, 4, 5, 6]
    else:
        expected = [1, 2, 3, 4]

    def check():
        if hvd.rank() == 0:
            assert _steps(lines) == expected
            assert all('"source":"optimizer"' in line for line in lines)
        else:
            assert lines == []
    check_on_all_ranks(check)


def test_report_progress_on_every_rank_writes_on_rank_0_only(lines):
    hvd.report_progress(step=7, total_steps=70, loss=torch.tensor(1.5), batch_size=4,
                        accuracy=torch.tensor(0.5, dtype=torch.float64))

    def check():
        if hvd.rank() == 0:
            assert len(lines) == 1
            line = progress_lines.parse(lines)[0]
            assert line["step"] == 7 and line["total_steps"] == 70 and line["loss"] == 1.5
            assert line["metrics"] == {"accuracy": 0.5} and line["source"] == "report_progress"
        else:
            assert lines == []
    check_on_all_ranks(check)


def test_report_progress_is_exported_with_the_binding():
    assert hvd.report_progress is basics.report_progress and "report_progress" in hvd.__all__
