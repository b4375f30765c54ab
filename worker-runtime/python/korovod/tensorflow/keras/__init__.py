"""korovod.tensorflow.keras: the Keras API under Horovod's other name (horovod.tensorflow.keras).

The same objects as korovod.keras (both are korovod._keras): `import korovod.tensorflow.keras as
hvd` and `import korovod.keras as hvd` are interchangeable.
"""

from korovod._keras.api import *  # noqa: F401,F403
from korovod._keras.api import __all__  # noqa: F401
from korovod.tensorflow.keras import callbacks, elastic  # noqa: F401 (this package's modules of those names)
