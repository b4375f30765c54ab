"""Small helpers under the module name Horovod's tests and scripts import them from
(horovod.tensorflow.util)."""
from __future__ import annotations

import tensorflow as tf


def _executing_eagerly() -> bool:
    """True when ops run eagerly (not while a tf.function or a TF1 graph is being built)."""
    return tf.executing_eagerly()
