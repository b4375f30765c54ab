"""Elastic training, framework-neutral part: state that survives resets and the retry loop.

Semantics of horovod/common/elastic.py (0.28.1): a State is committed (saved in host memory) at
points the script chooses; a failed collective (HorovodInternalError) rolls every survivor back
to its last commit, resets the runtime (shutdown + init, which joins the driver's next round) and
syncs the state from rank 0; a change of hosts (HostsUpdatedInterrupt, raised by a commit or
check_host_updates on every rank at once) resets without rolling back, and skips the sync when
hosts were only removed.

Where Horovod's driver pushes host updates to a notification service in every worker, korovod's
driver publishes rounds in the job's store (see docs/elastic.md): rank 0 asks the runtime whether
a round newer than its own was published and broadcasts the answer, so all ranks decide alike.
Two deliberate differences, both invisible to a script that follows Horovod's rules: the skip of
the sync is decided by all ranks together (a worker that joined always gets synced even if the
driver's notice said "removed only"), and TorchState reshards an ElasticSampler on every reset,
also when the sync is skipped.
"""

from __future__ import annotations

import ctypes
import enum
import functools
import queue
import sys
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from korovod.common import _lib, basics, settings
from korovod.common._state import error_for
from korovod.common._state import state as runtime_state
from korovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt


class HostUpdateResult(enum.IntFlag):
    """What changed in the set of hosts (Horovod's values: removed = 1, added = 2)."""

    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


# elastic/hosts_kind in the store: 1 = hosts added, 2 = hosts removed (docs/elastic.md).
_STORE_KIND_ADDED = 1
_STORE_KIND_REMOVED = 2


def _update_from_store_kind(kind: int) -> HostUpdateResult:
    update = HostUpdateResult.no_update
    if kind & _STORE_KIND_ADDED:
        update |= HostUpdateResult.added
    if kind & _STORE_KIND_REMOVED:
        update |= HostUpdateResult.removed
    # A new round with no recorded kind (e.g. a failed worker replaced): assume the worst, sync.
    return update or HostUpdateResult.mixed


def _store_read(fn: Callable, *outputs) -> None:
    """Calls a store-reading function of the C ABI (outputs..., error_text, error_len)."""
    err = _lib.error_buffer()
    code = fn(*[ctypes.byref(out) for out in outputs], err, len(err))
    if code != _lib.OK:
        raise error_for(code, _lib.decode(err.value))


class StoreWatch:
    """Rank 0's view of the driver's rounds: has a round newer than this runtime's been published?

    The round this runtime joined (korovod_elastic_round) against the newest one in the store
    (korovod_elastic_published_round) gives the exact answer; elastic/hosts_kind then says what
    changed. A library without korovod_elastic_published_round only has the host-change counter:
    then a counter newer than the one seen at the first check counts (a round published between
    the runtime's init and that first check is missed).
    """

    def __init__(self) -> None:
        self._baseline_version: Optional[int] = None

    def poll(self) -> Tuple[bool, HostUpdateResult]:
        rt = runtime_state.require()
        lib = rt.lib
        # Declared by _lib.py; None in a library older than them.
        version_fn = getattr(lib, "korovod_elastic_hosts_version", None)
        joined_fn = getattr(lib, "korovod_elastic_round", None)
        published_fn = getattr(lib, "korovod_elastic_published_round", None)
        if version_fn is None or joined_fn is None:
            raise RuntimeError(f"{getattr(lib, '_name', 'libkorovod')} has no korovod_elastic_round "
                               "or korovod_elastic_hosts_version: it cannot run elastic jobs")
        version, kind = ctypes.c_uint64(), ctypes.c_uint32()
        if published_fn is not None:
            published = ctypes.c_uint64()
            _store_read(published_fn, published)
            if published.value <= joined_fn(rt.ptr):
                return False, HostUpdateResult.no_update
            _store_read(version_fn, version, kind)
            return True, _update_from_store_kind(kind.value)
        _store_read(version_fn, version, kind)
        baseline, self._baseline_version = self._baseline_version, version.value
        if baseline is None or version.value <= baseline:
            return False, HostUpdateResult.no_update
        return True, _update_from_store_kind(kind.value)


class State:
    """State kept in sync across workers and rolled back on failures (Horovod's State).

    Args:
        bcast_object: broadcasts a picklable object from rank 0 to every rank and returns it.
        get_rank: returns this worker's current rank.
    """

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages: queue.Queue = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks: list = []
        self._store_watch = StoreWatch()

    def register_reset_callbacks(self, callbacks: Iterable[Callable[[], None]]) -> None:
        """Functions run, in registration order, after every reset (workers added or removed,
        or a failure), before the state is synced; e.g. to rescale the learning rate."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp: int, update_res: HostUpdateResult) -> None:
        """Horovod's notification entry point: an update newer than the last one seen makes the
        next check_host_updates (on rank 0, whose view all ranks adopt) raise."""
        self._host_messages.put((timestamp, update_res))

    def commit(self) -> None:
        """Saves the state in host memory, then checks for host updates (may raise
        HostsUpdatedInterrupt on every rank). Copies the state: commit every few batches."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self) -> None:
        """Raises HostsUpdatedInterrupt on every rank when hosts were added or removed.

        A collective (a broadcast from rank 0): every rank must call it at the same point.
        """
        prev_timestamp = last_timestamp = self._last_updated_timestamp
        update = HostUpdateResult.no_update
        while not self._host_messages.empty():
            timestamp, result = self._host_messages.get()
            if timestamp > last_timestamp:
                last_timestamp = timestamp
                update |= result
        newer_round = False
        if settings.current().elastic and self._rank() == 0:
            newer_round, round_update = self._store_watch.poll()
            update |= round_update
        prev_timestamp, self._last_updated_timestamp, newer_round, update = self._bcast_object(
            (prev_timestamp, last_timestamp, newer_round, int(update)))
        if newer_round or self._last_updated_timestamp > prev_timestamp:
            raise HostsUpdatedInterrupt(HostUpdateResult(update) == HostUpdateResult.removed)

    def any_rank(self, flag: bool) -> bool:
        """True on every rank when `flag` is true on any rank (a collective). This base class has
        only a broadcast, so it answers `flag`; framework states gather every rank's flag."""
        return flag

    def save(self) -> None:
        """Saves the state to host memory."""
        raise NotImplementedError()

    def restore(self) -> None:
        """Restores the last committed state, undoing any uncommitted modifications."""
        raise NotImplementedError()

    def sync(self) -> None:
        """Makes every rank's state rank 0's."""
        raise NotImplementedError()

    def reset(self) -> None:
        """Adapts the state to a new set of workers (after the reset, before the sync)."""


class ObjectState(State):
    """State of plain picklable Python objects, given as keyword arguments and exposed as
    attributes; sync broadcasts rank 0's last committed values."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int], **kwargs):
        self._bcast_object = bcast_object
        self._saved_state: Dict[str, Any] = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self) -> None:
        self._saved_state = {name: getattr(self, name) for name in self._saved_state}

    def restore(self) -> None:
        self._set_attrs()

    def sync(self) -> None:
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self) -> None:
        for name, value in self._saved_state.items():
            setattr(self, name, value)


# Consecutive failed inits of one reset before the error ends the worker.
RESET_ATTEMPTS = 3


def reset_runtime(shutdown: Callable[[], None], init: Callable[[], None]) -> None:
    """A reset: shutdown then init. In an elastic job a failed init (a member of the new round
    died during its rendezvous) is retried: the next init waits for the driver's next round,
    which leaves the dead member out. A worker the driver removed keeps waiting there until the
    driver stops it."""
    for attempt in range(1, RESET_ATTEMPTS + 1):
        shutdown()
        try:
            init()
            return
        except ValueError as error:  # basics.init's "Horovod initialization failed: ..."
            if not settings.current().elastic or attempt == RESET_ATTEMPTS:
                raise
            print(f"korovod elastic: reset attempt {attempt} of {RESET_ATTEMPTS} failed, waiting "
                  f"for the driver's next round: {error}", file=sys.stderr, flush=True)


def run_fn(func: Callable, reset: Callable[[], None]) -> Callable:
    """Wraps `func(state, *args, **kwargs)` in the elastic retry loop; `reset` restarts the
    runtime (shutdown + init: joins the next round of an elastic job)."""

    @functools.wraps(func)
    def wrapper(state: State, *args, **kwargs):
        skip_sync = False
        while True:
            try:
                # Every rank takes part in the decision (a worker that just joined needs the
                # sync even when the others were told that hosts were only removed).
                if state.any_rank(not skip_sync):
                    state.sync()
                return func(state, *args, **kwargs)
            except HorovodInternalError:
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as interrupt:
                skip_sync = interrupt.skip_sync
            reset()
            state.on_reset()

    return wrapper


def is_collective_failure(error: BaseException) -> bool:
    """Whether a framework's error stands for a failed korovod collective (see
    run_translating_errors)."""
    if "HorovodInternalError" in str(error):
        return True
    return runtime_state.runtime is not None and not basics.is_initialized()


def reset() -> None:
    """The reset of korovod.tensorflow and korovod.keras: korovod's own shutdown and init."""
    reset_runtime(basics.shutdown, basics.init)


def run_translating_errors(func: Callable) -> Callable:
    """Decorator running `func(state, ...)` elastically: retried after every reset, from the last
    commit (a failure) or from where it was interrupted (a change of hosts), with the state synced
    from rank 0 first. No collective may run before it that the other workers skip: a worker that
    joins runs the sync while the others are in theirs. The first argument must be a State.

    hvd.elastic.run of korovod.tensorflow and korovod.keras. A failed collective arrives as
    HorovodInternalError eagerly; from inside a graph or a compiled train step (tf.function,
    model.fit) it arrives as the framework's error, which counts as a failure when its text names
    HorovodInternalError (korovod's graph ops and py_functions say so for a lost peer or a
    timed-out collective) or when korovod's runtime has stopped."""

    def wrapper(state, *args, **kwargs):
        try:
            return func(state, *args, **kwargs)
        except (HorovodInternalError, HostsUpdatedInterrupt):
            raise
        except Exception as error:
            if is_collective_failure(error):
                raise HorovodInternalError(str(error)) from error
            raise

    return run_fn(wrapper, reset)


__all__ = ["HostUpdateResult", "ObjectState", "State", "StoreWatch", "is_collective_failure",
           "reset", "reset_runtime", "run_fn", "run_translating_errors"]
