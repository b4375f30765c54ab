"""korovod.keras.callbacks: Horovod's Keras callbacks (korovod._keras.callbacks)."""

from korovod._keras.callbacks import (BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,  # noqa: F401
                                      LearningRateWarmupCallback, MetricAverageCallback, broadcast_variables)

__all__ = ["BroadcastGlobalVariablesCallback", "LearningRateScheduleCallback", "LearningRateWarmupCallback",
           "MetricAverageCallback", "broadcast_variables"]
