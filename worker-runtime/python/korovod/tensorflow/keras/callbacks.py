"""korovod.tensorflow.keras.callbacks: the same callbacks as korovod.keras.callbacks."""

from korovod._keras.callbacks import (BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,  # noqa: F401
                                      LearningRateWarmupCallback, MetricAverageCallback, broadcast_variables)

__all__ = ["BroadcastGlobalVariablesCallback", "LearningRateScheduleCallback", "LearningRateWarmupCallback",
           "MetricAverageCallback", "broadcast_variables"]
