#!/usr/bin/python3
"""Synthetic training throughput with korovod.torch, in the shape of Horovod's
examples/pytorch/pytorch_synthetic_benchmark.py: fixed random data, a model defined here
(torchvision is not needed), DistributedOptimizer, and images (samples) per second per rank and
in total, with a 95% spread (1.96 x the standard deviation of the iterations).

    mpirun -n 2 --bind-to none pytorch_synthetic_benchmark.py --model mlp --batch-size 64

or as an MPIJob (examples/pytorch/pytorch_synthetic_benchmark.yaml).
"""

import argparse
import statistics
import sys
import timeit

import torch
import torch.nn as nn
import torch.nn.functional as F

import korovod.torch as hvd

NUM_CLASSES = 1000


def mlp(width: int = 2048, hidden_layers: int = 3) -> nn.Module:
    """width -> width x hidden_layers -> 1000 classes: 14.6 M parameters at the defaults."""
    layers = []
    for _ in range(hidden_layers):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, NUM_CLASSES))


def convnet() -> nn.Module:
    """A VGG-style network for 3x64x64 images: four conv blocks and a classifier (2.1 M)."""
    def block(cin: int, cout: int) -> list:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.MaxPool2d(2)]
    return nn.Sequential(*block(3, 64), *block(64, 128), *block(128, 256), *block(256, 512),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, NUM_CLASSES))


# model name -> (constructor, shape of one input sample)
MODELS = {
    "mlp": (mlp, (2048,)),
    "convnet": (convnet, (3, 64, 64)),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="PyTorch synthetic benchmark on korovod.torch",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--fp16-allreduce", action="store_true",
                   help="use fp16 compression during allreduce")
    p.add_argument("--model", choices=sorted(MODELS), default="mlp", help="model to benchmark")
    p.add_argument("--batch-size", type=int, default=32, help="input batch size per rank")
    p.add_argument("--num-warmup-batches", type=int, default=10,
                   help="number of warm-up batches that don't count towards the benchmark")
    p.add_argument("--num-batches-per-iter", type=int, default=10,
                   help="number of batches per benchmark iteration")
    p.add_argument("--num-iters", type=int, default=10, help="number of benchmark iterations")
    p.add_argument("--num-threads", type=int, default=0,
                   help="torch intra-op threads per rank (0: torch's default)")
    p.add_argument("--no-cuda", action="store_true", help="disables CUDA training")
    p.add_argument("--use-adasum", action="store_true",
                   help="combine the ranks' updates with Adasum instead of averaging gradients "
                        "(a power-of-2 number of ranks; the learning rate is not scaled by the size)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    hvd.init()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(hvd.local_rank())  # one GPU per rank on the node
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)

    build, sample_shape = MODELS[args.model]
    model = build()
    if use_cuda:
        model.cuda()
    # As Horovod's example: Adasum needs no learning-rate scaling by the number of ranks.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * (1 if args.use_adasum else hvd.size()))
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Adasum if args.use_adasum else hvd.Average)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, *sample_shape)
    target = torch.randint(0, NUM_CLASSES, (args.batch_size,))
    if use_cuda:
        data, target = data.cuda(), target.cuda()

    def benchmark_step() -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def log(s: str) -> None:
        if hvd.rank() == 0:
            print(s, flush=True)

    device = "GPU" if use_cuda else "CPU"
    log(f"Model: {args.model} ({sum(p.numel() for p in model.parameters())} parameters)")
    log(f"Batch size: {args.batch_size}")
    log(f"Number of {device}s: {hvd.size()}")

    log("Running warmup...")
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)

    log("Running benchmark...")
    img_secs = []
    for i in range(args.num_iters):
        seconds = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        img_sec = args.batch_size * args.num_batches_per_iter / seconds
        log(f"Iter #{i}: {img_sec:.1f} img/sec per {device}")
        img_secs.append(img_sec)

    mean = statistics.fmean(img_secs)
    conf = 1.96 * statistics.pstdev(img_secs)  # numpy.std's population deviation, as Horovod
    log(f"Img/sec per {device}: {mean:.1f} +-{conf:.1f}")
    log(f"Total img/sec on {hvd.size()} {device}(s): {hvd.size() * mean:.1f} "
        f"+-{hvd.size() * conf:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
