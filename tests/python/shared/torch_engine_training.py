"""The torch training the Spark and Ray runners' tests check: 20 SGD steps of a linear model on
16 rows; on N ranks each takes its share of the rows and korovod averages the gradients, which
must give one process's model on all the rows. A runner's test registers this module for pickling
by value (its ranks cannot import tests/python/shared)."""

from __future__ import annotations

import torch


def data():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(16, 5, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0], [0.0]]) + 0.25
    return x, y


def train(x, y, distributed: bool):
    import korovod.torch as hvd
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    if distributed:
        hvd.init()
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
        share = x.shape[0] // hvd.size()
        rows = slice(hvd.rank() * share, (hvd.rank() + 1) * share)
        x, y = x[rows], y[rows]
    for _ in range(20):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def train_fn(x, y):
    return train(x, y, distributed=True)


def assert_same_model(results, x, y) -> None:
    """Every rank holds one process's model on all the rows (to 1e-5)."""
    single = train(x, y, distributed=False)
    assert len(results) >= 2
    for rank_params in results:
        for got, want in zip(rank_params, single):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
