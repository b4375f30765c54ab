"""The elastic torch training the Spark and Ray runners' elastic tests check.

Full-batch gradient descent of a linear model on 16 rows, one committed step at a time under
``hvd.elastic.run``: on N ranks (N = 1, 2 or 4) each takes its share of the rows and korovod
averages the gradients, so every step is the full batch's step whatever the world's size. A
worker lost mid-training sends the others back to the last commit, and training goes on in new
rounds; the model at the end must still be one process's model after STEPS steps. Each worker
writes "<rank> <step>" to progress_dir/<pid> after each step, for the test to pick a victim (elastic_checks).
A runner's test registers this module for pickling by value (its workers cannot import
tests/python/shared)."""

from __future__ import annotations

import os
import time

import torch

STEPS = 60


def data():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(16, 5, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0], [0.0]]) + 0.25
    return x, y


def _model():
    torch.manual_seed(0)
    return torch.nn.Linear(5, 1)


def single_process(x, y):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def train_fn(x, y, progress_dir: str, step_seconds: float = 0.1):
    import korovod.torch as hvd
    hvd.init()
    model = _model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                   named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model, opt, step=0, sizes=[])

    @hvd.elastic.run
    def train(state):
        while state.step < STEPS:
            share = x.shape[0] // hvd.size()
            rows = slice(hvd.rank() * share, (hvd.rank() + 1) * share)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x[rows]), y[rows]).backward()
            opt.step()
            state.step += 1
            state.sizes = sorted(set(state.sizes) | {hvd.size()})
            state.commit()
            with open(os.path.join(progress_dir, str(os.getpid())), "w") as f:
                f.write(f"{hvd.rank()} {state.step}\n")
            time.sleep(step_seconds)

    train(state)
    return {"rank": hvd.rank(), "size": hvd.size(), "step": state.step, "sizes": state.sizes,
            "params": [p.detach().clone() for p in model.parameters()]}


def assert_finished_as_one_process(results, x, y, size: int) -> None:
    """Every worker of the last round ends at STEPS with one process's model (to 1e-5)."""
    from elastic_checks import assert_last_round
    assert_last_round(results, size, STEPS)
    want = single_process(x, y)
    for r in results:
        for got, exp in zip(r["params"], want):
            torch.testing.assert_close(got, exp, rtol=1e-5, atol=1e-6)
