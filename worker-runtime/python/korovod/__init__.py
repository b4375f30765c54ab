"""korovod: Horovod-compatible distributed training over the korovod worker runtime.

Framework bindings live in subpackages (``korovod.torch``); importing this package loads no
native library.
"""

__version__ = "0.1.0"
