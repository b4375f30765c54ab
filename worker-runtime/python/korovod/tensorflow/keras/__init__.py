"""korovod.tensorflow.keras: korovod.keras under Horovod's other name (horovod.tensorflow.keras).

The same objects: `import korovod.tensorflow.keras as hvd` and `import korovod.keras as hvd` are
interchangeable.
"""

from korovod.keras import *  # noqa: F401,F403
from korovod.keras import __all__  # noqa: F401
from korovod.tensorflow.keras import callbacks  # noqa: F401
from korovod.tensorflow.keras import elastic  # noqa: F401
