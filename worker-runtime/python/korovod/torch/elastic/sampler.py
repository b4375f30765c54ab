"""ElasticSampler: a distributed sampler that resumes a partly processed epoch on any number of
ranks (Horovod's horovod.torch.elastic.ElasticSampler)."""

from __future__ import annotations

import math
import random
from typing import Dict, Iterator, List

import torch.utils.data

from korovod.torch.mpi_ops import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Shards a dataset over the ranks like DistributedSampler, and counts the samples processed
    this epoch so that after a reset the rest of the epoch is resharded over the new ranks.

    The epoch's order (shuffled with seed + epoch, the same on every rank) is dealt round-robin:
    rank r takes positions r, r + size, ... of the samples not yet processed. After every rank has
    processed k batches of b samples, exactly the first k * b * size positions are done, which is
    what record_batch counts; so a resumed epoch neither repeats nor skips a sample (except the
    padding that makes the last round even, as DistributedSampler pads).

    Use: include it in the TorchState, call record_batch after each batch and set_epoch at the
    END of each epoch (it clears the count, so calling it at the start of a resumed epoch would
    redo the epoch).

    Args:
        dataset: the dataset (its length must not change).
        shuffle: shuffle the order every epoch (default True).
        seed: shuffling seed, the same on every rank (default 0).
    """

    def __init__(self, dataset, shuffle: bool = True, seed: int = 0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices: set = set()  # kept for Horovod compatibility; unused
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices: List[int] = []
        self.num_samples = 0
        self.total_size = 0
        self.processed_num = 0
        self.reset()

    def set_epoch(self, epoch: int) -> None:
        """Starts `epoch` with nothing processed (call at the end of the previous epoch)."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Records that every rank processed one more batch of batch_size samples."""
        self.processed_num += batch_size * self.num_replicas

    def state_dict(self) -> Dict[str, int]:
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state_dict: Dict[str, int]) -> None:
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def reset(self) -> None:
        """Reshards the rest of the epoch over the current ranks (reads rank() and size())."""
        self.num_replicas = size()
        self.rank = rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = math.ceil(len(self.remaining_indices) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        padded = list(self.remaining_indices)
        # Pad by wrapping around so every rank gets num_samples (as DistributedSampler does).
        while len(padded) < self.total_size:
            padded += padded[:self.total_size - len(padded)]
        self.indices = padded[self.rank:self.total_size:self.num_replicas]
        return iter(self.indices)

    def __len__(self) -> int:
        return self.num_samples
