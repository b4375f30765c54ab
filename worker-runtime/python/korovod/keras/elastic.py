"""korovod.keras.elastic: Horovod's horovod.keras.elastic (korovod._keras.elastic)."""

from korovod._keras.elastic import *  # noqa: F401,F403
from korovod._keras.elastic import __all__  # noqa: F401
