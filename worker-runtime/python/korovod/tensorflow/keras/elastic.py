"""korovod.tensorflow.keras.elastic: korovod.keras.elastic under Horovod's other name."""

from korovod.keras.elastic import *  # noqa: F401,F403
from korovod.keras.elastic import __all__  # noqa: F401
