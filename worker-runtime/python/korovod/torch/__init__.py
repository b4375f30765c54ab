"""korovod.torch: Horovod's horovod.torch API, so `import korovod.torch as hvd` runs Horovod scripts.

Pure Python over libkorovod's C ABI: nothing is compiled against torch, so one build serves every
torch version. Importing loads no native library; hvd.init() does.

Progress: global rank 0 prints a `korovod-progress {...}` line (JSON: step, steps per second,
loss, ETA, ...) at the first DistributedOptimizer.step(), then at most every
KOROVOD_PROGRESS_INTERVAL_SECONDS (10) and once at the end, for the operator to show in
MPIJob.status; each step() counts one step. hvd.report_progress(step=, total_steps=, loss=,
batch_size=, **metrics) adds what the optimizer cannot know (docs/progress.md).
"""

from korovod.torch.compression import Compression
from korovod.torch.mpi_ops import (Adasum, Average, HorovodInternalError, Max, Min, ProcessSet, Product, Sum,
                                   add_process_set, allgather, allgather_async, allreduce, allreduce_,
                                   allreduce_async, allreduce_async_, alltoall, alltoall_async, barrier,
                                   broadcast, broadcast_, broadcast_async, broadcast_async_, ccl_built,
                                   cross_rank, cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled,
                                   global_process_set, grouped_allgather, grouped_allgather_async,
                                   grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                                   grouped_allreduce_async_, grouped_reducescatter,
                                   grouped_reducescatter_async, init, is_homogeneous, is_initialized, join,
                                   local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported,
                                   nccl_built, poll, rank, reducescatter, reducescatter_async,
                                   remove_process_set, rocm_built, shutdown, size, sparse_allreduce_async,
                                   start_timeline, stop_timeline, synchronize)
from korovod.common.basics import report_progress
from korovod.common.exceptions import HostsUpdatedInterrupt
from korovod.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                     broadcast_parameters)
from korovod.torch.optimizer import DistributedOptimizer
from korovod.torch.sync_batch_norm import SyncBatchNorm
from korovod.torch import elastic  # hvd.elastic, as in horovod.torch

__all__ = [
    "Compression", "Adasum", "Average", "HorovodInternalError", "HostsUpdatedInterrupt", "Max", "Min", "ProcessSet",
    "Product", "Sum", "add_process_set", "allgather", "allgather_async", "allgather_object", "allreduce",
    "allreduce_", "allreduce_async", "allreduce_async_", "alltoall", "alltoall_async", "barrier", "broadcast",
    "broadcast_", "broadcast_async", "broadcast_async_", "broadcast_object", "broadcast_optimizer_state",
    "broadcast_parameters", "ccl_built", "cross_rank", "cross_size", "cuda_built", "ddl_built",
    "DistributedOptimizer", "gloo_built", "gloo_enabled", "global_process_set", "grouped_allgather",
    "grouped_allgather_async", "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "grouped_reducescatter", "grouped_reducescatter_async", "init", "is_homogeneous",
    "is_initialized", "join", "local_rank", "local_size", "mpi_built", "mpi_enabled", "mpi_threads_supported",
    "nccl_built", "poll", "rank", "reducescatter", "reducescatter_async", "remove_process_set", "report_progress",
    "rocm_built", "shutdown", "size", "sparse_allreduce_async", "start_timeline", "stop_timeline", "SyncBatchNorm",
    "synchronize",
]
