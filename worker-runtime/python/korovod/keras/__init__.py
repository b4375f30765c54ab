"""korovod.keras: Horovod's horovod.keras / horovod.tensorflow.keras API for Keras 3, so
`import korovod.keras as hvd` (or `korovod.tensorflow.keras`) runs Horovod Keras scripts.

Works with model.fit on Keras 3's tensorflow backend (Horovod's case) and also on its torch and
jax backends (korovod._keras holds the implementation, shared with korovod.tensorflow.keras).
Nothing here imports TensorFlow unless the backend is tensorflow.
"""

from korovod._keras.api import *  # noqa: F401,F403
from korovod._keras.api import __all__  # noqa: F401
from korovod.keras import callbacks, elastic  # noqa: F401 (this package's modules of those names)
