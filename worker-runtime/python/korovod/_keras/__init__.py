"""Keras 3 support that korovod.keras and korovod.tensorflow.keras share (Horovod's horovod._keras):
the API (api.py), DistributedOptimizer and its per-backend gradient reduction, the callbacks and
the elastic states. The two public packages re-export it; neither imports the other."""
