"""Helpers Horovod's scripts and tests import from horovod.common.util (and through
horovod.tensorflow): whether the framework sees a GPU, and Horovod's power-of-2 rank test that
decides where Adasum can run."""

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


def num_rank_is_power_2(num_rank: int) -> bool:
    """Horovod's check: Adasum needs a power-of-2 number of ranks."""
    return num_rank != 0 and (num_rank & (num_rank - 1)) == 0
