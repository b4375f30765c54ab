"""SyncBatchNormalization: Horovod's hvd.SyncBatchNormalization on Keras 3 (TensorFlow backend).

In training the batch statistics are those of every rank's batch together: each rank's mean and
mean of squares are averaged over the ranks (one allreduce of both), and the variance is
E[x^2] - E[x]^2, as Horovod computes it (every rank weighted alike, so equal batch sizes give
the statistics of the combined batch). The allreduce has its gradient, so backprop sees the
combined batch too. Inference uses the moving statistics, which every rank updates alike.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from korovod.tensorflow.mpi_ops import Sum, _allreduce, size


class SyncBatchNormalization(keras.layers.BatchNormalization):
    """Synchronous batch normalization: statistics are synchronized across all ranks in training.

    `fused` is accepted as in Horovod (which requires False; Keras 3 has no fused kernel);
    every other argument is keras.layers.BatchNormalization's."""

    def __init__(self, fused=False, **kwargs):
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support fused=True.")
        if not kwargs.get("name", None):
            kwargs["name"] = "sync_batch_normalization"
        super().__init__(**kwargs)

    def _moments(self, inputs, mask):
        mean, variance = super()._moments(inputs, mask)
        ranks = size()
        if ranks == 1:
            return mean, variance
        stacked = tf.stack([mean, variance + tf.math.square(mean)])
        summed = _allreduce(stacked, name=f"{self.name}.moments", op=Sum) / tf.cast(ranks, stacked.dtype)
        group_mean, group_mean_of_square = tf.unstack(summed)
        return group_mean, group_mean_of_square - tf.math.square(group_mean)
