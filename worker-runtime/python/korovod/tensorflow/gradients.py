"""Averaging a list of gradients across ranks: what DistributedGradientTape and the distributed
optimizers (Keras 3 on the TensorFlow backend, tf.compat.v1) share.

Every dense gradient is queued before any is waited for, so the runtime negotiates and fuses
what is ready together. In a graph they are queued bucket by bucket as backprop produces them
(one tf.py_function per bucket that only queues, one at the end that waits for all), so the
reductions overlap the rest of backprop as Horovod's asynchronous ops do; eagerly (the tape has
computed every gradient already) and with `groups` they are one reduction. Names are positional,
"<name>.grad_<i>" (or "<name>.group_<g>_<k>of<n>" with groups): every rank differentiates the same
variables in the same order, while variable names may differ between ranks (Keras numbers its
layers per process). Sparse gradients (tf.IndexedSlices) are allgathered as Horovod does, unless
sparse_as_dense.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import tensorflow as tf

from korovod.common.basics import Average, Sum
from korovod.common.process_sets import ProcessSet, global_process_set
from korovod.tensorflow import _eager, _graph
from korovod.tensorflow.compression import Compression
from korovod.tensorflow.mpi_ops import allgather, size_op  # noqa: F401 (size_op: elastic use)


def split_evenly(items: list, parts: int) -> List[list]:
    """`parts` consecutive chunks whose sizes differ by at most one (the first ones larger)."""
    quotient, remainder = divmod(len(items), parts)
    chunks, start = [], 0
    for index in range(parts):
        end = start + quotient + (1 if index < remainder else 0)
        chunks.append(items[start:end])
        start = end
    return [chunk for chunk in chunks if chunk]


# A graph's gradient bucket starts its allreduces once it holds this many bytes (or a gradient of
# unknown size); below that a tf.py_function call (tens of microseconds) would cost more than it
# lets overlap.
BUCKET_BYTES = 1 << 20


def backward_buckets(grads: Sequence[tf.Tensor], bucket_bytes: int) -> List[List[int]]:
    """Indices of `grads` in consecutive buckets from the last gradient to the first (the order
    backprop produces them); a bucket closes once it holds `bucket_bytes` or more."""
    buckets: List[List[int]] = []
    current: List[int] = []
    size = 0
    for i in reversed(range(len(grads))):
        current.append(i)
        elements = grads[i].shape.num_elements()
        size = bucket_bytes if elements is None else size + elements * grads[i].dtype.size
        if size >= bucket_bytes:
            buckets.append(current)
            current, size = [], 0
    if current:
        buckets.append(current)
    return buckets


def variable_key(variable):
    """A hashable identity for a tf.Variable or a Keras 3 variable."""
    return variable.ref() if hasattr(variable, "ref") else id(variable)


def validate_groups(groups) -> None:
    if groups is None:
        return
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            for variable in group:
                if not hasattr(variable, "assign"):
                    raise ValueError("groups must consist of tf.Variable.")
                if variable_key(variable) in seen:
                    raise ValueError("A variable can only appear once in groups.")
                seen.add(variable_key(variable))
    elif isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise ValueError("groups should be a non-negative integer or a list of list of tf.Variable.")


def _scaled(grad, factor: float):
    if grad is None or factor == 1.0:
        return grad
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
    return grad * factor


class GradientReducer:
    """Callable: (grads, variables) -> grads averaged (op) over the process set."""

    def __init__(self, name: str, compression=Compression.none, sparse_as_dense: bool = False, op: int = Average,
                 gradient_predivide_factor: float = 1.0, groups=None,
                 process_set: ProcessSet = global_process_set):
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("gradient_predivide_factor not supported with op != Average")
        validate_groups(groups)
        self.name = name
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        # Average: split the 1/size between before and after the sum (the runtime divides by size).
        self.prescale = 1.0 / gradient_predivide_factor if op == Average else 1.0
        self.postscale = gradient_predivide_factor if op == Average else 1.0
        self.groups = groups
        self.process_set = process_set

    def __call__(self, grads: Sequence, variables: Optional[Sequence] = None, postscale: float = 1.0) -> List:
        """The reduced gradients; `postscale` multiplies the dense ones (accumulated-gradient
        scaling of the Keras optimizer), applied by the runtime after the sum."""
        grads = list(grads)
        if self.sparse_as_dense:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        ps = self.process_set
        if not ps.included() or ps.size() == 1:
            return grads if postscale == 1.0 else [_scaled(g, postscale) for g in grads]
        dense = [i for i, g in enumerate(grads) if g is not None and not isinstance(g, tf.IndexedSlices)]
        sparse = [i for i, g in enumerate(grads) if isinstance(g, tf.IndexedSlices)]
        result = list(grads)
        if dense:
            reduced_dense = self._reduce_dense([grads[i] for i in dense], dense, variables, self.postscale * postscale)
            for i, reduced in zip(dense, reduced_dense):
                result[i] = reduced
        for i in sparse:
            result[i] = _scaled(self._reduce_sparse(grads[i], i), postscale)
        return result

    # ---- dense -----------------------------------------------------------------------------

    def _partition(self, positions: List[int], variables: Optional[Sequence]) -> List[List[int]]:
        """Indices into the dense list, grouped as `groups` asks."""
        indices = list(range(len(positions)))
        if self.groups is None:
            return [[i] for i in indices]
        if isinstance(self.groups, int):
            return split_evenly(indices, self.groups)
        if variables is None:
            raise ValueError("groups given as lists of variables need the variables the gradients belong to")
        group_of: Dict[object, int] = {}
        for g, group in enumerate(self.groups):
            for variable in group:
                group_of[variable_key(variable)] = g
        chunks: List[List[int]] = [[] for _ in self.groups]
        singles = []
        for i, position in enumerate(positions):
            g = group_of.get(variable_key(variables[position]))
            (chunks[g] if g is not None else singles).append(i)
        return [chunk for chunk in chunks if chunk] + [[i] for i in singles]

    def _names(self, partition: List[List[int]], positions: List[int]) -> List[bytes]:
        names: List[Optional[bytes]] = [None] * len(positions)
        for g, members in enumerate(partition):
            if len(members) == 1:
                names[members[0]] = f"{self.name}.grad_{positions[members[0]]}".encode()
            else:
                for k, i in enumerate(members):
                    names[i] = f"{self.name}.group_{g}_{k + 1}of{len(members)}".encode()
        return names

    def _reduce_dense(self, grads: List[tf.Tensor], positions: List[int], variables,
                      postscale: float) -> List[tf.Tensor]:
        pairs = [self.compression.compress(g) for g in grads]
        compressed = [c for c, _ in pairs]
        partition = self._partition(positions, variables)
        names = self._names(partition, positions)
        op, prescale, ps_id = self.op, self.prescale, self.process_set.process_set_id
        if self.groups is None and len(compressed) > 1 and not tf.executing_eagerly():
            reduced = self._reduce_overlapped(compressed, names, op, prescale, postscale, ps_id)
        else:
            def body(*tensors):
                return _eager.allreduce_groups(tensors, partition, names, op, prescale, postscale, ps_id)

            reduced = _graph.run(body, compressed, [c.dtype for c in compressed], [c.shape for c in compressed],
                                 f"{self.name}_Allreduce")
        return [self.compression.decompress(r, ctx) for r, (_, ctx) in zip(reduced, pairs)]

    def _reduce_overlapped(self, grads: List[tf.Tensor], names: List[bytes], op: int, prescale: float,
                           postscale: float, ps_id: int) -> List[tf.Tensor]:
        """In a graph: one op per bucket starts its allreduces as soon as backprop has produced
        the bucket (buckets run from the last gradient to the first, the order backprop makes
        them), and one op at the end waits for all. The op that starts never blocks. If a
        bucket cannot start (e.g. a name already in flight), the graph fails there and the
        buckets started before it are never waited for here: their operations complete once
        every rank has queued them, and their buffers stay referenced until shutdown()."""
        buckets = backward_buckets(grads, BUCKET_BYTES)
        tokens = []
        for members in buckets:
            bucket_names = [names[i] for i in members]

            def start(*tensors, bucket_names=bucket_names):
                token = _eager.start_allreduces(tensors, bucket_names, op, prescale, postscale, ps_id)
                return [tf.constant(token, dtype=tf.int64)]

            tokens += _graph.run(start, [grads[i] for i in members], [tf.int64], [tf.TensorShape([])],
                                 f"{self.name}_AllreduceStart")
        order = [i for members in buckets for i in members]

        def finish(*started):
            return _eager.finish_allreduces([int(t) for t in started])

        outputs = _graph.run(finish, tokens, [grads[i].dtype for i in order], [grads[i].shape for i in order],
                             f"{self.name}_AllreduceWait")
        reduced: List[Optional[tf.Tensor]] = [None] * len(grads)
        for i, output in zip(order, outputs):
            reduced[i] = output
        return reduced

    # ---- sparse ----------------------------------------------------------------------------

    def _reduce_sparse(self, grad: tf.IndexedSlices, position: int) -> tf.IndexedSlices:
        if self.op not in (Average, Sum):
            raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
        if self.prescale != 1.0 or self.postscale != 1.0:
            raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
        values = allgather(grad.values, name=f"{self.name}.grad_{position}.values", ignore_name_scope=True,
                           process_set=self.process_set)
        indices = allgather(grad.indices, name=f"{self.name}.grad_{position}.indices", ignore_name_scope=True,
                            process_set=self.process_set)
        if self.op == Average:
            values = values / tf.cast(self.process_set.size(), values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=grad.dense_shape)
