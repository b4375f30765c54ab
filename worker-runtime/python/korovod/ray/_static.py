"""The static job behind RayExecutor: a fixed set of actors, one per rank, for its lifetime
(Horovod's StaticAdapter). Runs in the driver, or as an actor under Ray Client."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional

import ray
from ray.util.placement_group import get_current_placement_group

from korovod.ray.coordinator import Coordinator
from korovod.ray.strategy import ColocatedStrategy, PGStrategy

_log = logging.getLogger("korovod.ray")
# Errors a rank raises because another one failed first (a lost peer): the one to report is the
# rank that failed for another reason, when one does within SECONDARY_GRACE_S.
_SECONDARY = ("HorovodInternalError", "HostsUpdatedInterrupt")
SECONDARY_GRACE_S = 5.0


def _cause_name(error: BaseException) -> str:
    cause = getattr(error, "cause", None)
    return type(cause).__name__ if cause is not None else type(error).__name__


def _name_rank(error: BaseException, rank: int, size: int) -> BaseException:
    if hasattr(error, "add_note"):
        error.add_note(f"(raised by rank {rank} of {size} in korovod.ray)")
    return error


def gather(refs: List["ray.ObjectRef"]) -> List[Any]:
    """The ranks' results in rank order. The first rank to fail fails the call at once (the
    others may be waiting for it in a collective), with a note naming the rank."""
    pending = {ref: rank for rank, ref in enumerate(refs)}
    results: Dict[int, Any] = {}
    failure: Optional[BaseException] = None
    while pending:
        timeout = SECONDARY_GRACE_S if failure is not None else None
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
        if not ready:
            break
        for ref in ready:
            rank = pending.pop(ref)
            try:
                results[rank] = ray.get(ref)
            except Exception as e:  # noqa: BLE001 -- re-raised below, with its rank
                _name_rank(e, rank, len(refs))
                if _cause_name(e) not in _SECONDARY:
                    raise e
                failure = failure or e
    if failure is not None:
        raise failure
    return [results[r] for r in range(len(refs))]


class StaticJob:
    """The actors of one job, where they are (a strategy), and its rendezvous (a Coordinator)."""

    def __init__(self, settings, num_workers: Optional[int] = None, num_hosts: Optional[int] = None,
                 num_workers_per_host: Optional[int] = 1, cpus_per_worker: float = 1, use_gpu: bool = False,
                 gpus_per_worker: float = 1, use_current_placement_group: bool = True) -> None:
        self.settings = settings
        self.num_workers = num_workers
        self.num_hosts = num_hosts
        self.num_workers_per_host = num_workers_per_host or 1
        self.cpus_per_worker = cpus_per_worker
        self.use_gpu = use_gpu
        self.gpus_per_worker = gpus_per_worker  # with use_gpu
        self.use_current_placement_group = use_current_placement_group
        self.workers: List = []
        self.strategy = None
        self.coordinator: Optional[Coordinator] = None

    def _create_strategy(self):
        in_group = self.use_current_placement_group and get_current_placement_group() is not None
        if self.num_workers or in_group:
            if in_group:
                _log.info("korovod.ray: running in a placement group already: the workers go there "
                          "(use_current_placement_group=False makes a new one)")
            return PGStrategy(settings=self.settings,
                              num_workers=self.num_workers or self.num_workers_per_host * (self.num_hosts or 1),
                              use_gpu=self.use_gpu, cpus_per_worker=self.cpus_per_worker,
                              gpus_per_worker=self.gpus_per_worker,
                              force_create_placement_group=not self.use_current_placement_group)
        return ColocatedStrategy(settings=self.settings, num_hosts=self.num_hosts,
                                 num_workers_per_host=self.num_workers_per_host, use_gpu=self.use_gpu,
                                 cpus_per_worker=self.cpus_per_worker, gpus_per_worker=self.gpus_per_worker)

    def start(self, executable_cls: Optional[type] = None, executable_args: Optional[List] = None,
              executable_kwargs: Optional[Dict] = None, extra_env_vars: Optional[Dict] = None) -> None:
        """Creates the actors and the rendezvous, sets each actor's environment, and makes each
        one's executable. On any error, what was made is undone before it is raised."""
        try:
            self._start(executable_cls, executable_args, executable_kwargs, extra_env_vars or {})
        except BaseException:
            self.shutdown()
            raise

    def _start(self, executable_cls, executable_args, executable_kwargs, extra_env_vars: Dict) -> None:
        self.strategy = self._create_strategy()
        self.workers, _ = self.strategy.create_workers()
        self.coordinator = Coordinator(self.settings)
        node_ids = ray.get([w.node_id.remote() for w in self.workers])
        hostnames = ray.get([w.hostname.remote() for w in self.workers])
        for rank, (hostname, node_id) in enumerate(zip(hostnames, node_ids)):
            self.coordinator.register(hostname, node_id, rank)
        ranks = self.coordinator.finalize_registration()
        common = self.coordinator.establish_rendezvous()
        common.update({str(k): str(v) for k, v in extra_env_vars.items()})
        # The runtime's local and cross ranks follow Ray's nodes, as Horovod's do.
        ray.get([w.update_env_vars.remote({**common, **ranks[r], "KOROVOD_HOST_ID": node_ids[r]})
                 for r, w in enumerate(self.workers)])
        ray.get([w.start_executable.remote(executable_cls, executable_args, executable_kwargs)
                 for w in self.workers])
        if getattr(self.settings, "verbose", 1) >= 1:
            _log.info("korovod.ray: %d workers on %d node(s), rendezvous at %s:%d", len(self.workers),
                      len(set(node_ids)), common["KOROVOD_RENDEZVOUS_ADDR"], self.coordinator.global_rendezv_port)

    def _require_started(self) -> None:
        if not self.workers:
            raise RuntimeError("korovod.ray: the executor has no workers: call start() first "
                               "(or it was shut down)")

    def run_remote(self, fn: Callable, args: Optional[List] = None, kwargs: Optional[Dict] = None,
                   callbacks=None) -> List["ray.ObjectRef"]:
        self._require_started()
        call_args, call_kwargs = list(args or []), dict(kwargs or {})
        return [w.execute.remote(lambda _executable: fn(*call_args, **call_kwargs)) for w in self.workers]

    def run(self, fn: Callable, args: Optional[List] = None, kwargs: Optional[Dict] = None,
            callbacks=None) -> List[Any]:
        return gather(self.run_remote(fn, args, kwargs))

    def execute(self, fn: Callable[[Any], Any], callbacks=None) -> List[Any]:
        self._require_started()
        return gather([w.execute.remote(fn) for w in self.workers])

    def execute_single(self, fn: Callable[[Any], Any]) -> Any:
        self._require_started()
        return ray.get(self.workers[0].execute.remote(fn))

    def shutdown(self) -> None:
        """Kills every actor, removes the placement group it made and stops the rendezvous."""
        if self.strategy is not None:
            self.strategy.shutdown()
        self.workers = []
        if self.coordinator is not None:
            self.coordinator.stop_rendezvous()

