"""Averaging gradients across ranks for whichever backend Keras 3 runs on.

- tensorflow: korovod.tensorflow's GradientReducer (zero-copy DLPack; inside model.fit's
  tf.function the gradients are queued bucket by bucket while backprop runs, then waited for).
- torch: korovod.torch's asynchronous allreduces on the torch tensors (all queued, then waited).
- jax: the gradients leave the jitted step through jax.pure_callback as numpy arrays (one host
  callback for all of them) and are reduced by korovod.common.numpy_ops.
Names are positional, "<optimizer name>.grad_<i>", on every backend.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import keras

from korovod.common import numpy_ops
from korovod.common.basics import Average


class KerasGradientReducer:
    def __init__(self, name: str, compression, sparse_as_dense: bool, op: int, gradient_predivide_factor: float,
                 groups, process_set):
        self.name = name
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.prescale = 1.0 / gradient_predivide_factor if op == Average else 1.0
        self.postscale = gradient_predivide_factor if op == Average else 1.0
        self.groups = groups
        self.process_set = process_set
        self.backend = keras.backend.backend()
        self._tf_reducer = None
        if self.backend == "tensorflow":
            # Each backend's binding only where Keras runs on it: the others need not be installed.
            from korovod.tensorflow.gradients import GradientReducer

            self._tf_reducer = GradientReducer(name, compression, sparse_as_dense, op, gradient_predivide_factor,
                                               groups, process_set)
        elif self.backend not in ("torch", "jax"):
            raise NotImplementedError(f"korovod.keras supports the tensorflow, torch and jax backends, "
                                      f"not {self.backend!r}")
        elif groups is not None:
            raise NotImplementedError(f"groups are supported on the tensorflow backend only, not {self.backend}")

    def __call__(self, grads: Sequence, variables: Optional[Sequence] = None, postscale: float = 1.0) -> List:
        """The gradients reduced over the process set; `postscale` multiplies the result."""
        ps = self.process_set
        grads = list(grads)
        if not ps.included() or ps.size() == 1:
            return grads if postscale == 1.0 else [None if g is None else g * postscale for g in grads]
        if self._tf_reducer is not None:
            return self._tf_reducer(grads, variables, postscale)
        present = [i for i, g in enumerate(grads) if g is not None]
        pairs = [self.compression.compress(grads[i]) for i in present]
        compressed = [c for c, _ in pairs]
        names = [f"{self.name}.grad_{i}" for i in present]
        scale = self.postscale * postscale
        if self.backend == "torch":
            reduced = self._torch(compressed, names, scale)
        else:
            reduced = self._jax(compressed, names, scale)
        result = list(grads)
        for i, r, (_, ctx) in zip(present, reduced, pairs):
            result[i] = self.compression.decompress(r, ctx)
        return result

    def _torch(self, tensors, names, postscale):
        from korovod.torch import mpi_ops as hvd_torch

        handles = [hvd_torch.allreduce_async(t.contiguous(), name=n, op=self.op, prescale_factor=self.prescale,
                                             postscale_factor=postscale, process_set=self.process_set)
                   for t, n in zip(tensors, names)]
        return [hvd_torch.synchronize(h) for h in handles]

    def _jax(self, arrays, names, postscale):
        import jax
        import numpy as np

        op, prescale, ps_id = self.op, self.prescale, self.process_set.process_set_id
        encoded = [n.encode() for n in names]

        def host(*values):
            return numpy_ops.allreduce([np.asarray(v) for v in values], None, op, prescale, postscale, ps_id,
                                       names=encoded)

        shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
        return list(jax.pure_callback(host, shapes, *arrays))
