"""korovod.keras.compression: gradient compression for korovod.keras (korovod._keras.compression)."""

from korovod._keras.compression import *  # noqa: F401,F403
from korovod._keras.compression import __all__  # noqa: F401
