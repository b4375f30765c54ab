"""DistributedOptimizer's gradients in batches: one C call hands a batch to libkorovod, one waits.

A gradient hook only appends its parameter to ``ready``. A batch goes to the runtime -- every
gradient an in-place allreduce of its own, under its own name, exactly as allreduce_async_ would
queue it, but all through one korovod_enqueue_many call --

* once ``FLUSH_BYTES`` of gradients are ready (a large gradient goes at once),
* once the batch's first gradient waited ``FLUSH_SECONDS``, or a hook comes that long after the
  previous one (backward is slow here: holding gradients back would only delay them),
* at the end of each backward pass (an autograd engine callback), and in synchronize(),

and synchronize() waits for every batched allreduce with one korovod_wait_all call. The engine
thus still gets the early gradients while backward runs on (the overlap Horovod's per-gradient
hooks give) -- it collects requests for a cycle time (KOROVOD_CYCLE_TIME, 1 ms) before a cycle
anyway, so holding them for half of that costs no overlap -- without a ctypes call, a handle
object and a wait per gradient. The one gap: small gradients that came within FLUSH_SECONDS
before a long pause in backward wait for the next hook (or the end of backward).
"""

from __future__ import annotations

import ctypes
import time
from array import array
from typing import List, Optional

import torch

from korovod.common import _lib
from korovod.common._state import error_for, last_error, state
from korovod.torch import _native
from korovod.torch._collectives import check_reduce_op, process_set_id
from korovod.torch.compression import NoneCompressor

# When a batch goes to the runtime (see above).
FLUSH_BYTES = 1 << 20
FLUSH_SECONDS = 0.0005

_WAIT_SLICE_SECONDS = _lib.WAIT_SLICE_SECONDS
_clock = time.perf_counter
_IN_PROGRESS = _lib.ERR_IN_PROGRESS
_OP_ALLREDUCE = _lib.OP_ALLREDUCE
_DTYPE_CODES = _native.DTYPE_CODES

# Shape -> (int64 array, its address); the arrays live as long as the process (bounded).
_SHAPE_LIMIT = 4096
_shapes: dict = {}

try:  # the end of the backward pass that is running (torch >= 1.x, CPU and CUDA alike)
    _queue_callback = torch.autograd.Variable._execution_engine.queue_callback
except AttributeError:  # pragma: no cover - every supported torch has it
    _queue_callback = None


def _shape_address(shape, keep: list) -> int:
    entry = _shapes.get(shape)
    if entry is None:
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        entry = (dims, ctypes.addressof(dims))
        if len(_shapes) < _SHAPE_LIMIT:
            _shapes[tuple(shape)] = entry
        else:
            keep.append(dims)
    return entry[1]


def _address(values: Optional[array]):
    return None if values is None else values.buffer_info()[0]


def name_address(name: Optional[bytes]) -> int:
    """Where the bytes object's text lies (0 for None); valid while the object lives."""
    return 0 if name is None else ctypes.cast(ctypes.c_char_p(name), ctypes.c_void_p).value


def _dtype_code(dtype) -> int:
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        raise ValueError(f"Tensor type {dtype} is not supported.")
    return code


class TensorFields:
    """A tensor's dtype code (None: not supported), rank, shape (as the int64 array the C call
    reads, owned here) and whether it is on a GPU: what korovod_enqueue_many needs besides its
    address, read once per parameter instead of once per gradient and step."""

    __slots__ = ('dtype_code', 'ndim', 'dims', 'shape_address', 'is_cuda')

    def __init__(self, tensor: torch.Tensor):
        shape = tuple(tensor.shape)
        self.dtype_code = _DTYPE_CODES.get(tensor.dtype)
        self.ndim = len(shape)
        self.dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.shape_address = ctypes.addressof(self.dims)
        self.is_cuda = tensor.is_cuda


class Batches:
    """The batched allreduces of one DistributedOptimizer between two synchronize() calls."""

    __slots__ = ("ready", "ready_bytes", "first_at", "last_at", "flush_queued", "rt", "handles", "entries")

    def __init__(self):
        self.ready: list = []  # optimizer._Slot of each gradient that awaits the next flush
        self.ready_bytes = 0
        self.first_at = 0.0  # when the first of `ready` came
        self.last_at = 0.0  # when the last hook came
        self.flush_queued = False  # a flush waits at the end of the running backward pass
        self.rt = None  # the runtime that holds `handles`
        self.handles = array('q')  # native handles in flight, one per entry
        self.entries: List[tuple] = []  # (slot, compressed gradient, contiguous work, ctx)

    def busy(self) -> bool:
        """Whether gradients wait for a flush or allreduces are in flight."""
        return bool(self.ready or self.handles)

    def add(self, opt, slot) -> None:
        """From a gradient hook (slot: optimizer._Slot): keep it short."""
        now = _clock()
        ready = self.ready
        if not ready:
            self.first_at = now
        ready.append(slot)
        self.ready_bytes += slot.nbytes
        previous, self.last_at = self.last_at, now
        if self.ready_bytes >= FLUSH_BYTES or now - previous >= FLUSH_SECONDS or now - self.first_at >= FLUSH_SECONDS:
            self.flush(opt)
        elif not self.flush_queued and _queue_callback is not None:
            try:
                _queue_callback(_FlushAtEnd(self, opt))
                self.flush_queued = True
            except RuntimeError:  # not inside a backward pass: synchronize() flushes
                pass

    def flush(self, opt) -> None:
        """Hands every ready gradient to the runtime: one korovod_enqueue_many call."""
        ready = self.ready
        count = len(ready)
        if not count:
            return
        # Slice, then delete: a hook on another autograd thread may append meanwhile.
        batch = ready[:count]
        del ready[:count]
        self.ready_bytes = 0
        entries = self._prepare(opt, batch)
        if entries:
            self._enqueue(opt, entries)

    def _prepare(self, opt, batch) -> List[tuple]:
        compression = opt._compression
        compress = None if compression is NoneCompressor else compression.compress
        sparse_as_dense = opt.sparse_as_dense
        entries = []
        for slot in batch:
            p = slot.param
            grad = p.grad
            if grad is None:
                grad = opt._gradient_of(p)
            if grad.is_sparse:
                if not sparse_as_dense:  # allgathered, as Horovod does: its own handle
                    opt._handles[p] = opt._allreduce_grad_async(p)
                    continue
                grad = grad.to_dense()
            compressed, ctx = (grad, None) if compress is None else compress(grad)
            work = compressed if compressed.is_contiguous() else compressed.contiguous()
            entries.append((slot, compressed, work, ctx))
        return entries

    def _enqueue(self, opt, entries: List[tuple]) -> None:
        op = opt.op
        check_reduce_op(op)
        ps_id = process_set_id(opt.process_set)
        rt = _native.runtime()
        if self.handles and self.rt is not rt:
            raise RuntimeError("korovod was re-initialised while gradients were being reduced; "
                               "call optimizer.synchronize() before hvd.shutdown()")
        count = len(entries)
        works = [e[2] for e in entries]
        # Flat arrays (array.array: the cheapest to fill), passed by address; the call copies
        # what it keeps, so they need to live only until it returns.
        keep = []
        if opt._compression is NoneCompressor:  # the gradients themselves: their parameters' fields
            fields = [e[0].fields for e in entries]
            codes = [f.dtype_code for f in fields]
            if None in codes:
                _dtype_code(works[codes.index(None)].dtype)  # raises, naming the dtype
            dtypes = array('i', codes)
            shapes = array('Q', [f.shape_address for f in fields])
            ndims = array('i', [f.ndim for f in fields])
            on_gpu = any(f.is_cuda for f in fields)
        else:  # a compressor may change dtype, shape or device
            dtypes = array('i', [_dtype_code(w.dtype) for w in works])
            shapes = array('Q', [_shape_address(w.shape, keep) for w in works])
            ndims = array('i', [w.dim() for w in works])
            on_gpu = any(w.is_cuda for w in works)
        inputs = array('Q', [w.data_ptr() for w in works])
        names = array('Q', [e[0].name_address for e in entries])
        prescale, postscale = opt._scale_factors()
        ops = None if op == _lib.AVERAGE else array('i', [op]) * count
        prescales = None if prescale == 1.0 else array('d', [prescale]) * count
        postscales = None if postscale == 1.0 else array('d', [postscale]) * count
        devices = events = None
        if on_gpu:
            pairs = [_native.device_and_event(rt, w) for w in works]
            devices = array('i', [d for d, _ in pairs])
            events = array('Q', [e or 0 for _, e in pairs])
        handles = array('q', [0]) * count
        code = rt.lib.korovod_enqueue_many(
            rt.ptr, _OP_ALLREDUCE, count, _address(names), _address(inputs), None, _address(dtypes),
            _address(ndims), _address(shapes), _address(devices), _address(ops), _address(prescales),
            _address(postscales), ps_id, _address(events), _address(handles))
        queued = count if code >= 0 else sum(1 for h in handles if h > 0)
        if queued:
            self.rt = rt
            self.handles.extend(handles[:queued])
            self.entries.extend(entries[:queued])
        if code < 0:
            error = last_error(rt, code)
            passes = opt.backward_passes_per_step
            for slot, *_ in entries[queued:]:  # not started: synchronize() submits them again
                slot.delay = passes
            raise error

    def wait(self, opt) -> None:
        """Waits for every batched allreduce (one korovod_wait_all call per second) and writes
        the averaged gradients back; raises the first failure in order, after all ended."""
        handles = self.handles
        if not handles:
            return
        rt, entries = self.rt, self.entries
        self.handles, self.entries = array('q'), []
        count = len(handles)
        address = handles.buffer_info()[0]
        statuses = array('i', [0]) * count
        status_address = statuses.buffer_info()[0]
        lib, ptr = rt.lib, rt.ptr
        try:
            code = lib.korovod_wait_all(ptr, address, count, _WAIT_SLICE_SECONDS, status_address)
            while code == _IN_PROGRESS:
                code = lib.korovod_wait_all(ptr, address, count, _WAIT_SLICE_SECONDS, status_address)
        except BaseException:
            # Interrupted: the runtime may still write these tensors; they stay referenced.
            state.abandoned.append((rt, handles, entries))
            raise
        if code:
            first = next(i for i in range(count) if statuses[i])
            text = _lib.decode(lib.korovod_handle_error(ptr, handles[first]))
            lib.korovod_release_many(ptr, address, count)
            raise error_for(statuses[first], text)
        lib.korovod_release_many(ptr, address, count)
        compression = opt._compression
        decompress = None if compression is NoneCompressor else compression.decompress
        for slot, compressed, work, ctx in entries:
            p = slot.param
            if work is not compressed:
                compressed.copy_(work)
            reduced = compressed if decompress is None else decompress(compressed, ctx)
            grad = p.grad
            if grad is reduced:
                continue  # reduced in place, the common case
            if grad.is_sparse:
                p.grad = reduced.to_sparse()  # sparse_as_dense: back to the layout the update expects
            else:
                grad.set_(reduced)

    def reset(self) -> None:
        """Forgets everything (after synchronize(), also a failed one, or a state reload).
        Operations still in flight are not waited for; their tensors stay referenced."""
        if self.handles:
            state.abandoned.append((self.rt, self.handles, self.entries))
        self.ready = []
        self.ready_bytes = 0
        self.flush_queued = False
        self.handles, self.entries = array('q'), []


class _FlushAtEnd:
    """Runs when the backward pass ends: hands over what is left of the ready gradients."""

    __slots__ = ("batches", "optimizer")

    def __init__(self, batches: Batches, optimizer):
        self.batches = batches
        self.optimizer = optimizer

    def __call__(self) -> None:
        batches = self.batches
        batches.flush_queued = False
        batches.flush(self.optimizer)

