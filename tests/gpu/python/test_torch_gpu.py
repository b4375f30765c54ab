"""korovod.torch on CUDA tensors, every rank on GPU local_rank % device_count: every collective on
every dtype the data plane has, outputs on the tensor's GPU, autograd, the DistributedOptimizer,
ready events on the current (non-default) stream, and CPU and GPU operations in one job.

Run by tests/gpu/run-gpu-tests with one rank per GPU (the NCCL data plane) and with 2 ranks on
GPU 0 (host staging). Where the planes differ (NCCL refuses int16 and bool reductions and
truncates integer averages as sum / n; staging reduces on the host with the CPU path's rules),
KOROVOD_GPU_TEST_PLANE says which one runs.
"""

import os

import numpy as np
import pytest
import torch

import korovod.torch as hvd
from adasum_reference import gpu_adasum
from ops_helpers import (ALL_DTYPES, FLOAT_DTYPES, REDUCE_OPS, check_on_all_ranks, check_results, dtype_id,
                         raises_on_all_ranks, rank_input, reference_reduce, require_ranks, wide)

NCCL_DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
               torch.float64]
HOST_ONLY_DTYPES = [torch.int16, torch.bool]  # reduced by host staging; NCCL has no such types


def plane() -> str:
    """'nccl' or 'staging': as the runner says, else what the runtime picks on one host."""
    said = os.environ.get("KOROVOD_GPU_TEST_PLANE", "")
    if said:
        return said
    return "staging" if hvd.local_size() > torch.cuda.device_count() else "nccl"


def gpu() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device())


def every_rank(dtype, shape, seed, low=-3, high=4):
    return [rank_input(dtype, r, shape, seed, low, high) for r in range(hvd.size())]


def reference(op, inputs, dtype):
    """What the running plane computes: NCCL divides integers (sum / n, inputs kept >= 0 so that
    floor and truncation agree); staging follows the CPU path (reference_reduce)."""
    if op == hvd.Average and not dtype.is_floating_point and dtype is not torch.bool and plane() == "nccl":
        total = torch.stack([wide(t) for t in inputs]).sum(dim=0)
        return torch.div(total, len(inputs), rounding_mode="floor").to(dtype)
    return reference_reduce(op, inputs, dtype)


def check_devices(*named):
    bad = [f"{what} is on {t.device}, not {gpu()}" for what, t in named if t.device != gpu()]
    check_on_all_ranks(not bad, lambda: "; ".join(bad))


@pytest.mark.parametrize("op_name", list(REDUCE_OPS))
@pytest.mark.parametrize("dtype", NCCL_DTYPES + HOST_ONLY_DTYPES, ids=dtype_id)
def test_allreduce_every_dtype_and_op(dtype, op_name):
    op = REDUCE_OPS[op_name]
    name = f"gpu.allreduce.{op_name}.{dtype_id(dtype)}"
    if dtype in HOST_ONLY_DTYPES and plane() == "nccl":
        mine = rank_input(dtype, hvd.rank(), (4,)).to(gpu())
        text = raises_on_all_ranks(Exception, lambda: hvd.allreduce(mine, op=op, name=name))
        check_on_all_ranks(dtype_id(dtype) in text, lambda: f"the error does not name {dtype_id(dtype)}: {text}")
        return
    low, high = (-2, 3) if op_name == "Product" else (-3, 4)
    if op_name == "Average" and not dtype.is_floating_point:
        low = 0
    inputs = every_rank(dtype, (17, 3), seed=1, low=low, high=high)
    mine = inputs[hvd.rank()].to(gpu())
    result = hvd.allreduce(mine, op=op, name=name)
    check_devices(("result", result))
    check_results([("values", result.cpu(), reference(op, inputs, dtype)),
                   ("input unchanged", mine.cpu(), inputs[hvd.rank()])], dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_allreduce_scaled_in_place_and_grouped(dtype):
    inputs = every_rank(dtype, (33,), seed=2)
    pairs = []
    for op in (hvd.Sum, hvd.Average):
        result = hvd.allreduce(inputs[hvd.rank()].to(gpu()), op=op, prescale_factor=0.5, postscale_factor=3.0,
                               name=f"gpu.scaled.{op}.{dtype_id(dtype)}")
        pairs.append((f"scaled op {op}", result.cpu(), (wide(reference(op, inputs, torch.float64)) * 1.5).to(dtype)))
    in_place = inputs[hvd.rank()].to(gpu(), copy=True)
    returned = hvd.allreduce_(in_place, op=hvd.Sum, name=f"gpu.in_place.{dtype_id(dtype)}")
    check_on_all_ranks(returned is in_place, lambda: "allreduce_ returned another tensor")
    pairs.append(("in place", in_place.cpu(), reference(hvd.Sum, inputs, dtype)))
    group = [every_rank(dtype, (5, k + 1), seed=10 + k) for k in range(3)]
    results = hvd.grouped_allreduce([g[hvd.rank()].to(gpu()) for g in group], op=hvd.Average,
                                    name=f"gpu.grouped.{dtype_id(dtype)}")
    check_devices(*[(f"grouped {k}", r) for k, r in enumerate(results)])
    pairs += [(f"grouped {k}", r.cpu(), reference(hvd.Average, g, dtype))
              for k, (r, g) in enumerate(zip(results, group))]
    check_results(pairs, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_allgather_uneven_rows(dtype):
    inputs = [rank_input(dtype, r, (r + 1, 2), seed=3) for r in range(hvd.size())]
    result = hvd.allgather(inputs[hvd.rank()].to(gpu()), name=f"gpu.allgather.{dtype_id(dtype)}")
    check_devices(("allgather output", result))
    check_results([("rows of every rank", result.cpu(), torch.cat(inputs))], dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_broadcast_every_dtype(dtype):
    root = hvd.size() - 1
    inputs = every_rank(dtype, (4, 5), seed=4)
    result = hvd.broadcast(inputs[hvd.rank()].to(gpu()), root_rank=root, name=f"gpu.broadcast.{dtype_id(dtype)}")
    in_place = inputs[hvd.rank()].to(gpu(), copy=True)
    hvd.broadcast_(in_place, root_rank=root, name=f"gpu.broadcast_.{dtype_id(dtype)}")
    check_devices(("broadcast output", result))
    check_results([("broadcast", result.cpu(), inputs[root]), ("broadcast_", in_place.cpu(), inputs[root])], dtype)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.float32], ids=dtype_id)
def test_alltoall_with_splits(dtype):
    size, rank = hvd.size(), hvd.rank()
    # Rank r sends k + 1 rows valued 10 r + k to rank k.
    rows = torch.cat([torch.full((k + 1, 3), 10 * rank + k, dtype=dtype) for k in range(size)])
    splits = torch.tensor([k + 1 for k in range(size)], dtype=torch.int32)
    output, received = hvd.alltoall(rows.to(gpu()), splits=splits, name=f"gpu.alltoall.{dtype_id(dtype)}")
    expected = torch.cat([torch.full((rank + 1, 3), 10 * r + rank, dtype=dtype) for r in range(size)])
    check_devices(("alltoall output", output))
    check_results([("rows", output.cpu(), expected), ("received splits", received, torch.full((size,), rank + 1,
                                                                                             dtype=torch.int32))])


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.bfloat16, torch.float32], ids=dtype_id)
def test_reducescatter_uneven_rows(dtype, op_name):
    op = REDUCE_OPS[op_name]
    size, rank = hvd.size(), hvd.rank()
    dim0 = 2 * size + 1  # Horovod's split: ranks below dim0 % size get one row more
    inputs = every_rank(dtype, (dim0, 4), seed=5, low=0 if op_name == "Average" else -3)
    result = hvd.reducescatter(inputs[rank].to(gpu()), op=op, name=f"gpu.reducescatter.{op_name}.{dtype_id(dtype)}")
    rows = [dim0 // size + (1 if r < dim0 % size else 0) for r in range(size)]
    first = sum(rows[:rank])
    expected = reference(op, inputs, dtype)[first:first + rows[rank]]
    check_devices(("reducescatter output", result))
    check_results([("this rank's rows", result.cpu(), expected)], dtype)


def test_autograd_through_gpu_collectives():
    size, rank = hvd.size(), hvd.rank()
    x = torch.full((3, 2), float(rank + 1), device=gpu(), requires_grad=True)
    # One collective per backward pass: the backward collectives are unnamed, so two of them in
    # flight at once could be submitted in different orders on different ranks.
    y = hvd.allreduce(x, op=hvd.Sum, name="gpu.autograd.allreduce")
    y.sum().backward()
    allreduce_grad = x.grad.clone()
    x.grad = None
    z = hvd.allgather(x * 2, name="gpu.autograd.allgather")
    z.sum().backward()
    # Horovod's gradients: allreduce(Sum)'s is the Sum-allreduced output gradient (size), and
    # allgather's this rank's slice of the averaged output gradient (2).
    check_devices(("x.grad", x.grad), ("allreduce output", y), ("allgather output", z))
    check_results([("allreduce gradient", allreduce_grad.cpu(), torch.full((3, 2), float(size))),
                   ("allgather gradient", x.grad.cpu(), torch.full((3, 2), 2.0)),
                   ("allgather output", z.cpu(), torch.cat([torch.full((3, 2), 2.0 * (r + 1)) for r in range(size)]))])


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64], ids=dtype_id)
def test_adasum_sums_each_hosts_ranks_then_combines_the_hosts(dtype):
    """Horovod's GPU Adasum (its NCCL build): the ranks of a host summed, the hosts combined by
    Adasum; the tensors go through host memory and come back to the GPU."""
    size, rank = hvd.size(), hvd.rank()
    vectors = [np.random.default_rng(40 + r).normal(0.2, 1.0, 1001) for r in range(size)]
    held = [torch.from_numpy(v).to(dtype).double().numpy() for v in vectors]  # what dtype keeps
    mine = torch.from_numpy(vectors[rank]).to(dtype).to(gpu())
    name = f"gpu.adasum.{dtype_id(dtype)}"
    if size & (size - 1):
        text = raises_on_all_ranks(RuntimeError, lambda: hvd.allreduce(mine, op=hvd.Adasum, name=name))
        check_on_all_ranks("power-of-2 number of ranks" in text, lambda: text)
        return
    result = hvd.allreduce(mine, op=hvd.Adasum, name=name)
    check_devices(("Adasum output", result))
    expected = torch.from_numpy(gpu_adasum(held, hvd.local_size()))
    check_results([("Adasum", result.double().cpu(), expected)], dtype)


def test_distributed_optimizer_on_a_cuda_model():
    size, rank = hvd.size(), hvd.rank()
    torch.manual_seed(1234)  # same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).to(gpu())
    reference = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    reference.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

    def batch(r, step):
        g = torch.Generator().manual_seed(100 * step + r)
        return torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)

    for step in range(3):
        optimizer.zero_grad()
        data, target = batch(rank, step)
        torch.nn.functional.mse_loss(model(data.to(gpu())), target.to(gpu())).backward()
        optimizer.step()
        # The same step in one process: the gradient averaged over every rank's batch.
        reference_optimizer.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(reference(d), t) for d, t in (batch(r, step) for r in range(size)))
        (loss / size).backward()
        reference_optimizer.step()
    check_devices(*[(name, p) for name, p in model.named_parameters()])
    check_results([(name, p.detach().cpu(), q.detach()) for (name, p), q in
                   zip(model.named_parameters(), reference.parameters())], torch.float32)


def test_ready_event_on_a_side_stream():
    """The input is produced on a non-default stream right before the allreduce, behind a long
    kernel: the binding records the ready event on the current stream, so the collective must
    wait for it and see the produced values, never the zeros before them."""
    rank, size = hvd.rank(), hvd.size()
    side = torch.cuda.Stream()
    pairs = []
    for attempt in range(3):
        tensor = torch.zeros(1 << 20, device=gpu())
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            if hasattr(torch.cuda, "_sleep"):
                torch.cuda._sleep(50_000_000)  # ~tens of ms of GPU time on the side stream
            tensor.fill_(rank + 1.0)
            result = hvd.allreduce(tensor, op=hvd.Sum, name=f"gpu.ready_event.{attempt}")
        torch.cuda.synchronize()
        pairs.append((f"attempt {attempt}", result.cpu()[:: 1 << 16], torch.full((16,), size * (size + 1) / 2.0)))
    check_results(pairs)


def test_cpu_and_gpu_operations_in_one_job():
    size, rank = hvd.size(), hvd.rank()
    cpu_in = torch.full((10,), float(rank + 1))
    gpu_in = torch.full((10,), float(2 * (rank + 1)), device=gpu())
    cpu_handle = hvd.allreduce_async(cpu_in, op=hvd.Sum, name="mixed.cpu")
    gpu_handle = hvd.allreduce_async(gpu_in, op=hvd.Sum, name="mixed.gpu")
    gathered = hvd.allgather(torch.tensor([rank]), name="mixed.cpu.allgather")
    cpu_out, gpu_out = hvd.synchronize(cpu_handle), hvd.synchronize(gpu_handle)
    total = size * (size + 1) / 2.0
    check_on_all_ranks(cpu_out.device.type == "cpu" and gpu_out.device == gpu(),
                       lambda: f"outputs on {cpu_out.device} and {gpu_out.device}")
    check_results([("cpu", cpu_out, torch.full((10,), total)), ("gpu", gpu_out.cpu(), torch.full((10,), 2 * total)),
                   ("cpu allgather", gathered, torch.arange(size))])


def test_barrier_and_join_while_others_allreduce():
    # Last in the file: the joined rank enqueues one operation fewer than the others, so the
    # runtime's numbering of unnamed operations (autograd's backward ones) differs afterwards.
    require_ranks(2)
    hvd.barrier()
    size, rank = hvd.size(), hvd.rank()
    if rank == size - 1:
        last = hvd.join(torch.cuda.current_device())  # contributes zeros from here on
        results = []
    else:
        tensor = torch.full((6,), float(rank + 1), device=gpu())
        averaged = hvd.allreduce(tensor, op=hvd.Average, name="gpu.join.average")
        # The joined rank's zeros count in Average's divisor (Horovod).
        results = [("average with a joined rank", averaged.cpu(),
                    torch.full((6,), sum(r + 1 for r in range(size - 1)) / size))]
        last = hvd.join(torch.cuda.current_device())
    check_results(results)
    lasts = hvd.allgather(torch.tensor([last]), name="gpu.join.last")
    check_on_all_ranks(bool((lasts == lasts[0]).all()) and 0 <= int(lasts[0]) < size - 1,
                       lambda: f"last joined ranks {lasts.tolist()}")
