"""Process sets: collectives over a subset of the ranks (Horovod's horovod.common.process_sets).

Three ways to make one, as in Horovod: ProcessSet([ranks]) passed to init(process_sets=[...]);
ProcessSet(mpi4py communicator) passed to init; or add_process_set([ranks]) after init with
HOROVOD_DYNAMIC_PROCESS_SETS=1 (every rank calls it, in the same order).
"""

from __future__ import annotations

import ctypes
from typing import Dict, List, Optional, Sequence, Union

from korovod.common import _lib
from korovod.common._state import last_error, query, state


class ProcessSet:
    """A set of ranks that run collectives together. process_set_id is set once the runtime knows
    the set (init or add_process_set); size()/rank() return None before that."""

    process_set_id: Optional[int] = None
    ranks: Optional[List[int]] = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        if _is_iterable(ranks_or_comm):
            ranks = sorted(ranks_or_comm)
            if any(not isinstance(r, int) for r in ranks):
                raise ValueError("ProcessSet should be initialized with a list of process ranks or an mpi4py Comm object")
            self.ranks = ranks
            return
        from mpi4py import MPI  # a communicator was given, so mpi4py is in use already

        if not isinstance(ranks_or_comm, MPI.Comm):
            raise ValueError("ProcessSet should be initialized with a list of process ranks or an mpi4py Comm object")
        self.mpi_comm = ranks_or_comm

    def _invalidate(self) -> None:
        self.process_set_id = None

    def size(self) -> Optional[int]:
        """The number of ranks in the set, or None before the runtime knows it."""
        if self.process_set_id is None:
            return None
        return process_set_size(self.process_set_id)

    def rank(self) -> Optional[int]:
        """This process's rank within the set (e.g. its slice of an allgather), or None before the
        runtime knows the set. Collectives still take global ranks (broadcast's root_rank)."""
        if self.process_set_id is None:
            return None
        return process_set_rank(self.process_set_id)

    def included(self) -> Optional[bool]:
        """Whether this process is a member, or None before the set's ranks are known."""
        if self.ranks is None:
            return None
        return query("korovod_rank") in self.ranks

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if not isinstance(other, ProcessSet) or self.process_set_id is None:
            return False
        return self.process_set_id == other.process_set_id and self.ranks == other.ranks

    def __hash__(self) -> int:
        # Equality follows the id, which changes on init/removal: one bucket keeps hashing consistent.
        return hash(ProcessSet)

    def __str__(self) -> str:
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, mpi_comm={self.mpi_comm})"

    __repr__ = __str__


def _is_iterable(value) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return not isinstance(value, (str, bytes))


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def _temp_process_set_object(process_set_id: int) -> ProcessSet:
    """A ProcessSet for a known id (Horovod-internal helper some user code imports)."""
    ps = ProcessSet.__new__(ProcessSet)
    ps.process_set_id = process_set_id
    return ps


def static_set_ranks(sets: Sequence[ProcessSet], comm) -> List[List[int]]:
    """The rank lists init registers, in order, for init(process_sets=sets). Sets given as
    communicators are translated to ranks of the job's communicator."""
    for index, ps in enumerate(sets):
        if not isinstance(ps, ProcessSet):
            raise ValueError(f"process_sets entry number {index} is not a ProcessSet: {ps!r}")
    via_comm = [ps for ps in sets if ps.ranks is None and ps.mpi_comm is not None]
    from_communicators: List[List[int]] = []
    if via_comm:
        if comm is not None and _is_iterable(comm):
            raise NotImplementedError(
                "At this time process sets defined via MPI communicators are only supported when calling "
                "hvd.init() with comm set to a global MPI communicator.")
        from_communicators = _ranks_from_communicators(via_comm, comm)
    seen = set()
    result = []
    for index, ps in enumerate(sets):
        key = tuple(ps.ranks)
        if key in seen and ps.mpi_comm is None:
            raise ValueError(f"Horovod could not be initialized because process_sets entry number {index} "
                             f"is a duplicate: {ps}")
        if key not in seen:
            seen.add(key)
            result.append(list(key))
    for ranks in from_communicators:
        if tuple(ranks) not in seen:
            seen.add(tuple(ranks))
            result.append(ranks)
    return result


def _ranks_from_communicators(via_comm: Sequence[ProcessSet], comm) -> List[List[int]]:
    """Sets .ranks of communicator-defined sets and returns every such set of the job: each rank
    only sees the communicators it is in, so the union is gathered over the job's communicator
    (every rank must register the same sets, in the same order)."""
    from mpi4py import MPI

    base = comm if comm is not None else MPI.COMM_WORLD
    base_group = base.Get_group()
    mine = []
    for ps in via_comm:
        group = ps.mpi_comm.Get_group()
        ps.ranks = sorted(MPI.Group.Translate_ranks(group, list(range(group.Get_size())), base_group))
        mine.append(tuple(ps.ranks))
    return [list(ranks) for ranks in sorted({r for per_rank in base.allgather(mine) for r in per_rank})]


def assign_ids(sets: Sequence[ProcessSet]) -> None:
    """After init: gives every ProcessSet passed to init its id, and global_process_set its ranks."""
    table = process_set_table()
    id_of = {tuple(ranks): ps_id for ps_id, ranks in table.items()}
    for ps in sets:
        ps.process_set_id = id_of.get(tuple(ps.ranks))
    global_process_set.ranks = table.get(0, [])


def add_process_set(process_set: Union[ProcessSet, Sequence[int]]) -> ProcessSet:
    """Adds a process set after init (HOROVOD_DYNAMIC_PROCESS_SETS=1; every rank calls it, in the
    same order) and returns it with its id."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.ranks is None:
        raise NotImplementedError(
            "Dynamically adding process sets defined by an MPI communicator is not implemented. "
            "Please build the process set via a list of ranks.")
    # The runtime refuses a duplicate (ValueError naming the existing id).
    process_set.process_set_id = add_process_set_ranks(process_set.ranks)
    return process_set


def remove_process_set(process_set: ProcessSet) -> bool:
    """Removes a dynamically added process set; False for the global set or one never added."""
    process_set_id = process_set.process_set_id
    if process_set_id is None or process_set_id == 0:
        return False
    process_set._invalidate()
    remove_process_set_id(process_set_id)
    return True


# ---------------------------------------------------------------- the runtime's side


def process_set_rank(process_set_id: int) -> int:
    rt = state.require()
    included = rt.lib.korovod_process_set_included(rt.ptr, process_set_id)
    if included < 0:
        raise last_error(rt, included)
    if not included:
        raise ValueError(f"Process is not part of provided process set (id {process_set_id}).")
    value = rt.lib.korovod_process_set_rank(rt.ptr, process_set_id)
    if value < 0:
        raise last_error(rt, value)
    return value


def process_set_size(process_set_id: int) -> int:
    rt = state.require()
    value = rt.lib.korovod_process_set_size(rt.ptr, process_set_id)
    if value < 0:
        raise last_error(rt, value)
    return value


def process_set_included(process_set_id: int) -> bool:
    rt = state.require()
    value = rt.lib.korovod_process_set_included(rt.ptr, process_set_id)
    if value < 0:
        raise last_error(rt, value)
    return bool(value)


def process_set_table() -> Dict[int, List[int]]:
    """{id: sorted global ranks} of every process set the runtime knows."""
    rt = state.require()
    lib = rt.lib
    count = lib.korovod_process_set_ids(rt.ptr, None, 0)
    if count < 0:
        raise last_error(rt, count)
    ids = (ctypes.c_int * max(count, 1))()
    count = lib.korovod_process_set_ids(rt.ptr, ids, count)
    table = {}
    world = query("korovod_size")
    for ps_id in list(ids)[:count]:
        ranks = (ctypes.c_int * world)()
        n = lib.korovod_process_set_ranks(rt.ptr, ps_id, ranks, world)
        if n < 0:
            raise last_error(rt, n)
        table[ps_id] = list(ranks)[:n]
    return table


def add_process_set_ranks(ranks: Sequence[int]) -> int:
    rt = state.require()
    array = (ctypes.c_int * max(len(ranks), 1))(*ranks)
    value = rt.lib.korovod_add_process_set(rt.ptr, array, len(ranks))
    if value < 0:
        raise last_error(rt, value)
    return value


def remove_process_set_id(process_set_id: int) -> None:
    rt = state.require()
    code = rt.lib.korovod_remove_process_set(rt.ptr, process_set_id)
    if code != _lib.OK:
        raise last_error(rt, code)


class RuntimeBasics:
    """What Horovod's tests ask of `hvd.mpi_ops._basics` (Horovod's HorovodBasics object, one per
    framework module): the process set table, through the same private name. Stateless: every
    call asks the runtime."""

    @staticmethod
    def _get_process_set_ids_and_ranks() -> Dict[int, List[int]]:
        """{id: global ranks} of every process set the runtime knows (Horovod's internal call)."""
        return process_set_table()
