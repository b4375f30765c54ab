"""Helpers Horovod's scripts and tests import from horovod.common.util (and through
horovod.tensorflow): whether the framework sees a GPU."""

from __future__ import annotations


def gpu_available(ext_base_name: str, verbose: bool = False) -> bool:
    """True when the framework (``'torch'`` or ``'tensorflow'``) sees a GPU. Horovod asks its
    compiled extension in a forked process; korovod has no per-framework extension, so it asks the
    framework itself (which the caller has imported already)."""
    del verbose
    if ext_base_name.endswith("torch"):
        import torch
        return bool(torch.cuda.is_available())
    if ext_base_name.endswith("tensorflow"):
        import tensorflow as tf
        return bool(tf.config.list_physical_devices("GPU"))
    return False

