"""op=Adasum: allreduce (plain, async, in place, grouped, autograd) against a NumPy reference of
the same pairwise tree, Horovod's defining cases (orthogonal vectors add, parallel ones average),
its errors, and DistributedOptimizer(op=Adasum), Horovod's delta optimizer. Under -np 3 (not a
power of 2) only the refusal runs: Adasum needs a power-of-2 number of ranks, as in Horovod."""

import numpy as np
import pytest
import torch

import korovod.torch as hvd
from adasum_reference import adasum_tree
from ops_helpers import check_on_all_ranks, raises_on_all_ranks, require_ranks


def rank_vector(rank: int, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(1000 * seed + rank).normal(0.3, 1.0, n)


def check_close(what: str, actual: torch.Tensor, expected: np.ndarray, rtol: float) -> None:
    got = actual.detach().double().numpy().ravel()
    error = float(np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-30))
    check_on_all_ranks(error <= rtol,
                       lambda: f"{what}: relative error {error:.3g} > {rtol}: {got[:4]} vs {expected[:4]}")


def power_of_two(n: int) -> bool:
    return n & (n - 1) == 0


@pytest.fixture
def power_of_two_ranks():
    if not power_of_two(hvd.size()):
        pytest.skip(f"Adasum needs a power-of-2 number of ranks, not {hvd.size()}: "
                    "test_a_size_not_a_power_of_2_is_refused_on_every_rank covers this size")


TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 2e-2}


@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
def test_allreduce_matches_the_pairwise_tree(dtype, power_of_two_ranks):
    for seed, n in enumerate([1, 7, 64, 1000, 4099]):
        vectors = [rank_vector(r, n, seed) for r in range(hvd.size())]
        # The reference starts from what this dtype holds of each rank's vector.
        expected = adasum_tree([torch.from_numpy(v).to(dtype).double().numpy() for v in vectors])
        mine = torch.from_numpy(vectors[hvd.rank()]).to(dtype)
        result = hvd.allreduce(mine, op=hvd.Adasum, name=f"adasum.tree.{dtype}.{n}")
        check_on_all_ranks(result.dtype == dtype, lambda: f"result dtype {result.dtype}")
        check_close(f"{dtype} n={n}", result, expected, TOLERANCE[dtype])


def test_orthogonal_vectors_add_and_parallel_vectors_average(power_of_two_ranks):
    size, rank = hvd.size(), hvd.rank()
    rng = np.random.default_rng(2)
    for n in [size * 20 - 17, size * 2 + 1, size + 2, 2 ** 16]:
        q, _ = np.linalg.qr(rng.normal(0, 1, (n, size)))  # orthonormal columns, one per rank
        column = torch.from_numpy(q[:, rank].astype(np.float32))
        check_close(f"orthogonal n={n}", hvd.allreduce(column, op=hvd.Adasum), q.sum(axis=1), 1e-5)
        parallel = np.outer(rng.normal(0, 1, n), rng.normal(0, 1, size))  # every column a multiple of one vector
        column = torch.from_numpy(parallel[:, rank].copy())
        check_close(f"parallel n={n}", hvd.allreduce(column, op=hvd.Adasum), parallel.mean(axis=1), 1e-12)


def test_async_in_place_grouped_and_scaled(power_of_two_ranks):
    vectors = [[rank_vector(r, n, 10 + i) for r in range(hvd.size())] for i, n in enumerate([5, 300, 2])]
    expected = [adasum_tree(per_rank) for per_rank in vectors]
    mine = [torch.from_numpy(per_rank[hvd.rank()].copy()) for per_rank in vectors]
    handle = hvd.allreduce_async_(mine[0], op=hvd.Adasum, name="adasum.async")
    same = hvd.synchronize(handle)
    check_on_all_ranks(same.data_ptr() == mine[0].data_ptr(), lambda: "allreduce_ did not write in place")
    check_close("async in place", mine[0], expected[0], 1e-12)
    grouped = hvd.grouped_allreduce([torch.from_numpy(per_rank[hvd.rank()]) for per_rank in vectors],
                                    op=hvd.Adasum, name="adasum.grouped")
    for i, (result, want) in enumerate(zip(grouped, expected)):
        check_close(f"grouped {i}", result, want, 1e-12)  # each tensor its own Adasum, as Horovod
    scaled = hvd.allreduce(mine[1].new_tensor(vectors[1][hvd.rank()]), op=hvd.Adasum,
                           prescale_factor=2.0, postscale_factor=0.25)
    check_close("prescale 2, postscale 0.25", scaled, expected[1] * 0.5, 1e-12)


def test_gradient_of_an_adasum_allreduce_is_the_adasum_of_the_gradients(power_of_two_ranks):
    # Horovod's backward reduces the incoming gradient with the same op: ones on every rank are
    # parallel, so their Adasum is their mean, ones.
    x = torch.from_numpy(rank_vector(hvd.rank(), 6, 30)).requires_grad_()
    hvd.allreduce(x, op=hvd.Adasum, name="adasum.autograd").sum().backward()
    check_close("gradient", x.grad, np.ones(6), 1e-12)


def test_errors_name_the_tensor_and_leave_the_runtime_usable(power_of_two_ranks):
    text = raises_on_all_ranks((RuntimeError, ValueError),
                               lambda: hvd.allreduce(torch.ones(4, dtype=torch.int32), op=hvd.Adasum, name="steps"))
    check_on_all_ranks("Adasum reduces float16, bfloat16, float32 and float64 tensors, not int32" in text
                       and "steps" in text, lambda: text)
    text = raises_on_all_ranks(RuntimeError, lambda: hvd.reducescatter(torch.ones(4 * hvd.size()), op=hvd.Adasum))
    check_on_all_ranks("Adasum is an allreduce op" in text, lambda: text)
    if hvd.size() > 1:  # one rank asks for Adasum, the others for Sum: a mismatch on every rank
        op = hvd.Adasum if hvd.rank() == 0 else hvd.Sum
        text = raises_on_all_ranks(RuntimeError, lambda: hvd.allreduce(torch.ones(3), op=op, name="mixed"))
        check_on_all_ranks("Mismatched reduce ops" in text and "ADASUM" in text, lambda: text)
    result = hvd.allreduce(torch.ones(2), op=hvd.Adasum, name="adasum.after_errors")
    check_close("usable after", result, np.ones(2), 1e-12)


def test_adasum_within_a_process_set(power_of_two_ranks):
    """Beyond Horovod (global set only): the even and the odd ranks each reduce among themselves."""
    require_ranks(2)
    halves = [[r for r in range(hvd.size()) if r % 2 == k] for k in (0, 1)]
    sets = [hvd.add_process_set(ranks) for ranks in halves]
    try:
        ranks = halves[hvd.rank() % 2]
        vectors = [rank_vector(r, 33, 40) for r in ranks]
        result = hvd.allreduce(torch.from_numpy(vectors[ranks.index(hvd.rank())]), op=hvd.Adasum,
                               process_set=sets[hvd.rank() % 2], name="adasum.half")
        check_close(f"set {ranks}", result, adasum_tree(vectors), 1e-12)
    finally:
        for ps in reversed(sets):
            hvd.remove_process_set(ps)


def test_a_size_not_a_power_of_2_is_refused_on_every_rank():
    if power_of_two(hvd.size()):
        pytest.skip(f"{hvd.size()} ranks is a power of 2: run under -np 3 to see the refusal")
    text = raises_on_all_ranks(RuntimeError, lambda: hvd.allreduce(torch.ones(3), op=hvd.Adasum, name="three"))
    check_on_all_ranks(f"Adasum needs a power-of-2 number of ranks, as Horovod's does; this process set has "
                       f"{hvd.size()}" in text, lambda: text)
    check_close("usable after", hvd.allreduce(torch.ones(2), op=hvd.Sum), np.full(2, hvd.size()), 0)


# ---------------------------------------------------------------- DistributedOptimizer(op=Adasum)


def make_model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))


def rank_batch(rank: int, step: int):
    g = torch.Generator().manual_seed(100 * step + rank)
    return torch.randn(8, 6, generator=g), torch.randn(8, 2, generator=g)


def local_deltas(model: torch.nn.Module, make_optimizer, rank: int, step: int, passes: int = 1):
    """What one step of the plain optimizer changes on `rank`'s data, per parameter."""
    copy = make_model(0)
    copy.load_state_dict(model.state_dict())
    optimizer = make_optimizer(copy)
    for p in range(passes):
        x, y = rank_batch(rank, 10 * step + p)
        torch.nn.functional.mse_loss(copy(x), y).backward()
    before = [p.detach().clone() for p in copy.parameters()]
    optimizer.step()
    return [(p.detach() - b).numpy() for p, b in zip(copy.parameters(), before)]


@pytest.mark.parametrize("passes", [1, 2])
def test_distributed_optimizer_combines_each_ranks_update_by_adasum(passes, power_of_two_ranks):
    def make_sgd(m):  # no momentum: each step's delta depends on that step's gradient only
        return torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.0)

    model = make_model(0)
    optimizer = hvd.DistributedOptimizer(make_sgd(model), named_parameters=model.named_parameters(),
                                         op=hvd.Adasum, backward_passes_per_step=passes)
    check_on_all_ranks(isinstance(optimizer, torch.optim.SGD), lambda: f"not an SGD: {type(optimizer)}")
    for step in range(2):
        start = [p.detach().clone().numpy() for p in model.parameters()]
        per_rank = [local_deltas(model, make_sgd, r, step, passes) for r in range(hvd.size())]
        optimizer.zero_grad()
        for p in range(passes):
            x, y = rank_batch(hvd.rank(), 10 * step + p)
            torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        for i, p in enumerate(model.parameters()):
            want = start[i].ravel() + adasum_tree([d[i] for d in per_rank])
            check_close(f"step {step} parameter {i}", p, want, 1e-5)


def test_adasum_optimizer_keeps_the_wrapped_optimizers_state_and_guards_misuse(power_of_two_ranks):
    if hvd.size() == 1:
        pytest.skip("one rank: DistributedOptimizer(op=Adasum) is the plain DistributedOptimizer, as in Horovod")
    model = make_model(1)
    optimizer = hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters(), op=hvd.Adasum)
    before = [p.detach().clone() for p in model.parameters()]
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)  # creates Adam's state without a step
    check_on_all_ranks(all(torch.equal(p, b) for p, b in zip(model.parameters(), before)),
                       lambda: "broadcast_optimizer_state moved the parameters")
    for step in range(3):
        optimizer.zero_grad()
        x, y = rank_batch(hvd.rank(), step)
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    steps = [float(s["step"]) for s in optimizer.state_dict()["state"].values()]
    # 3 steps, plus the zero-gradient one that created the state (as in Horovod)
    check_on_all_ranks(steps == [4.0] * 4, lambda: f"Adam's step counts {steps}")
    flat = torch.cat([p.detach().ravel() for p in model.parameters()])
    gathered = hvd.allgather(flat.unsqueeze(0), name="adasum.opt.params")
    check_on_all_ranks(bool((gathered == gathered[0]).all()), lambda: "parameters differ across ranks")

    torch.nn.functional.mse_loss(model(x), y).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        optimizer.zero_grad()
    optimizer.step()
    with pytest.raises(AssertionError, match="Skipping synchronization is not supported"):
        with optimizer.skip_synchronize():
            pass
    with pytest.raises(ValueError, match="already a DistributedOptimizer"):
        hvd.DistributedOptimizer(optimizer, op=hvd.Adasum)
