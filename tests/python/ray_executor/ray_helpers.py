"""What the korovod.ray tests share: a Ray temp dir of their own, the training both check, and
the processes a test must not leave behind."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import List

import torch

# Ray's own switches for a test machine: no token to make, no usage report to send.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def temp_dir(prefix: str) -> str:
    """A short directory for Ray's sockets and logs (a unix socket path has 107 bytes at most)."""
    return tempfile.mkdtemp(prefix=prefix, dir="/tmp")


def remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def data():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(16, 5, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0], [0.0]]) + 0.25
    return x, y


def train(x, y, distributed: bool):
    """20 SGD steps of a linear model; distributed: each rank takes its share of the rows and
    korovod averages the gradients, which must give one process's model on all rows."""
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
    single = train(x, y, distributed=False)
    for rank_params in results:  # every rank holds one process's model on all 16 rows
        for got, want in zip(rank_params, single):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def alive(pids: List[int]) -> List[int]:
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def assert_gone(pids: List[int], within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(pids), f"processes still running: {alive(pids)}"


def environ_with_ray_env() -> dict:
    return {**os.environ, **RAY_ENV}
