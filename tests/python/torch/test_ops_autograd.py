"""Gradients through the collectives, checked against finite differences on float64.

The global objective is G = sum over ranks r of <g_r, y_r>, where y_r is the op's output on rank r
and g_r the gradient rank r feeds to backward. Every op is linear, so central differences of G
(each rank perturbing its own input entries in turn) are exact up to rounding. Horovod defines
each op's gradient as a multiple of dG/dx, and korovod keeps Horovod's definitions:
  allreduce, alltoall       dG/dx
  allgather, broadcast      dG/dx / size   (the gradient is averaged over ranks)
  reducescatter             dG/dx * size   (Horovod scales Sum by size and leaves Average unscaled)
"""

import pytest
import torch

import korovod.torch as hvd
from ops_helpers import check_results, rank_input


def per_rank(shape_of, seed, dtype=torch.float64):
    return [rank_input(dtype, r, shape_of(r), seed) for r in range(hvd.size())]


def autograd_gradient(forward, x, g):
    x = x.clone().requires_grad_()
    forward(x).backward(g)
    return x.grad


def numeric_gradient(forward, inputs, g, step=0.5):
    """dG/dx for this rank's input; every rank walks every rank's entries in the same order."""
    me = hvd.rank()
    grad = torch.zeros_like(inputs[me])
    with torch.no_grad():
        for j, x_j in enumerate(inputs):
            for i in range(x_j.numel()):
                objective = []
                for sign in (1.0, -1.0):
                    x = inputs[me].clone()
                    if me == j:
                        x.view(-1)[i] += sign * step
                    local = (forward(x).double() * g).sum().reshape(1)
                    objective.append(hvd.allreduce(local, op=hvd.Sum))
                if me == j:
                    grad.view(-1)[i] = float((objective[0] - objective[1]) / (2 * step))
    return grad


def check_gradient(forward, inputs, g, scale, what):
    me = hvd.rank()
    actual = autograd_gradient(forward, inputs[me], g)
    expected = numeric_gradient(forward, inputs, g) * scale
    check_results([(what, actual, expected)])


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_allreduce_gradient(op_name):
    op = getattr(hvd, op_name)
    inputs = per_rank(lambda r: (2, 3), seed=1)
    g = rank_input(torch.float64, hvd.rank(), (2, 3), seed=2)
    check_gradient(lambda x: hvd.allreduce(x, op=op), inputs, g, 1.0, f"allreduce {op_name}")
    check_gradient(lambda x: hvd.allreduce(x, op=op, prescale_factor=0.5, postscale_factor=3.0), inputs, g, 1.0,
                   f"scaled allreduce {op_name}")


def test_allreduce_gradient_of_min_is_horovods_allreduce_of_the_gradient():
    x = rank_input(torch.float64, hvd.rank(), (4,), seed=3).requires_grad_()
    g = rank_input(torch.float64, hvd.rank(), (4,), seed=4)
    hvd.allreduce(x, op=hvd.Min).backward(g)
    gs = per_rank(lambda r: (4,), seed=4)
    check_results([("min", x.grad, torch.stack(gs).min(dim=0).values)])


def test_allreduce_gradient_through_fp16_compression():
    x = torch.full((3,), 0.5, dtype=torch.float32, requires_grad=True)
    y = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    y.backward(torch.ones(3))
    check_results([("output", y.detach(), torch.full((3,), 0.5 * hvd.size())),
                   ("grad", x.grad, torch.full((3,), float(hvd.size())))])


def test_grouped_allreduce_gradient():
    shapes = [(3,), (2, 2)]
    inputs = [per_rank(lambda r, s=s: s, seed=10 + i) for i, s in enumerate(shapes)]
    gs = [rank_input(torch.float64, hvd.rank(), s, seed=20 + i) for i, s in enumerate(shapes)]
    xs = [p[hvd.rank()].clone().requires_grad_() for p in inputs]
    outputs = hvd.grouped_allreduce(xs, op=hvd.Average)
    torch.autograd.backward(outputs, gs)
    expected = [numeric_gradient(lambda x, i=i: hvd.allreduce(x, op=hvd.Average), inputs[i], gs[i])
                for i in range(len(shapes))]
    check_results([(f"tensor {i}", x.grad, e) for i, (x, e) in enumerate(zip(xs, expected))])


def test_allgather_gradient_is_the_rank_average():
    rows = lambda r: (r % 3 + 1, 2)  # noqa: E731  different dim 0 per rank
    inputs = per_rank(rows, seed=30)
    total = sum(rows(r)[0] for r in range(hvd.size()))
    g = rank_input(torch.float64, hvd.rank(), (total, 2), seed=31)
    check_gradient(hvd.allgather, inputs, g, 1.0 / hvd.size(), "allgather")


def test_grouped_allgather_gradient():
    rows = [lambda r: (r + 1,), lambda r: (2, 3)]
    inputs = [per_rank(f, seed=40 + i) for i, f in enumerate(rows)]
    totals = [sum(f(r)[0] for r in range(hvd.size())) for f in rows]
    gs = [rank_input(torch.float64, hvd.rank(), (totals[0],), 42), rank_input(torch.float64, hvd.rank(),
                                                                             (totals[1], 3), 43)]
    xs = [p[hvd.rank()].clone().requires_grad_() for p in inputs]
    torch.autograd.backward(hvd.grouped_allgather(xs), gs)
    expected = [numeric_gradient(hvd.allgather, inputs[i], gs[i]) / hvd.size() for i in range(2)]
    check_results([(f"tensor {i}", x.grad, e) for i, (x, e) in enumerate(zip(xs, expected))])


@pytest.mark.parametrize("root_choice", ["first", "last"])
def test_broadcast_gradient(root_choice):
    root = 0 if root_choice == "first" else hvd.size() - 1
    inputs = per_rank(lambda r: (2, 2), seed=50)
    g = rank_input(torch.float64, hvd.rank(), (2, 2), seed=51)
    check_gradient(lambda x: hvd.broadcast(x, root), inputs, g, 1.0 / hvd.size(), f"broadcast from {root}")


def test_alltoall_gradient_with_splits():
    size = hvd.size()
    splits = lambda s: [(s + 2 * r) % 3 for r in range(size)]  # noqa: E731
    inputs = per_rank(lambda s: (sum(splits(s)), 2), seed=60)
    received = sum(splits(s)[hvd.rank()] for s in range(size))
    g = rank_input(torch.float64, hvd.rank(), (received, 2), seed=61)
    forward = lambda x: hvd.alltoall(x, torch.tensor(splits(hvd.rank()), dtype=torch.int32))[0]  # noqa: E731
    check_gradient(forward, inputs, g, 1.0, "alltoall with splits")


def test_alltoall_gradient_even_split():
    size = hvd.size()
    inputs = per_rank(lambda s: (2 * size, 3), seed=70)
    g = rank_input(torch.float64, hvd.rank(), (2 * size, 3), seed=71)
    check_gradient(hvd.alltoall, inputs, g, 1.0, "alltoall even split")


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_reducescatter_gradient(op_name):
    op = getattr(hvd, op_name)
    size = hvd.size()
    inputs = per_rank(lambda r: (2 * size, 2), seed=80)
    g = rank_input(torch.float64, hvd.rank(), (2, 2), seed=81)
    check_gradient(lambda x: hvd.reducescatter(x, op=op), inputs, g, float(size), f"reducescatter {op_name}")
    check_gradient(lambda x: hvd.reducescatter(x, op=op, prescale_factor=2.0, postscale_factor=0.5), inputs, g,
                   float(size), f"scaled reducescatter {op_name}")


def test_reducescatter_sum_gradient_closed_form_from_horovods_test():
    size = hvd.size()
    x = torch.ones([size * 4] * 2, requires_grad=True)
    hvd.reducescatter(x, op=hvd.Sum).backward(torch.ones([4, size * 4]))
    check_results([("grad", x.grad, torch.full([size * 4] * 2, float(size)))])


def test_grouped_reducescatter_gradient():
    size = hvd.size()
    inputs = [per_rank(lambda r: (size, 2), seed=90), per_rank(lambda r: (2 * size,), seed=91)]
    gs = [rank_input(torch.float64, hvd.rank(), (1, 2), 92), rank_input(torch.float64, hvd.rank(), (2,), 93)]
    xs = [p[hvd.rank()].clone().requires_grad_() for p in inputs]
    torch.autograd.backward(hvd.grouped_reducescatter(xs, op=hvd.Sum), gs)
    expected = [numeric_gradient(lambda x: hvd.reducescatter(x, op=hvd.Sum), inputs[i], gs[i]) * size
                for i in range(2)]
    check_results([(f"tensor {i}", x.grad, e) for i, (x, e) in enumerate(zip(xs, expected))])


def test_no_graph_without_grad_mode():
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        y = hvd.allreduce(x)
    check_results([("value", y, torch.ones(3))])
    assert not y.requires_grad
