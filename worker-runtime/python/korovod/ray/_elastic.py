"""The elastic job behind RayExecutor(min_workers=...) (Horovod's ElasticAdapter).

Korovodrun's elastic driver (korovod.common.elastic_job) decides the rounds; this says where
workers can run and runs them. A Ray node with N CPUs (and, with use_gpu, G GPUs) offers
min(N // cpus_per_worker, G // gpus_per_worker) slots, as Horovod's RayHostDiscovery counts, and is
a host named by the first 12 digits of its node id (two nodes may share an IP address); a worker
is an actor pinned to its node that runs the job's function once. An actor that dies
(killed, its node lost) or whose function raises is a failed worker: the driver goes on without
it in a new round and starts a new actor in its slot. The job ends when the workers' functions
return; their results come back in the rank order of the last round.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from korovod.common.elastic_job import ElasticJob as DrivenJob
from korovod.common.elastic_job import Limits, WorkerError, console
from korovod.common.rendezvous import RendezvousServer
from korovod.ray.coordinator import _job_secret
from korovod.ray.worker import BaseHorovodWorker

_log = logging.getLogger("korovod.ray")


class _Actors:
    """The driver's Workers on Ray: nodes as hosts, an actor per worker."""

    def __init__(self, job: "ElasticJob", worker_fn: Callable[[Any], Any]) -> None:
        self._job = job
        self._fn = worker_fn
        self._lock = threading.Lock()
        self._actors: Dict[Tuple[str, int], Any] = {}
        self._futures: Dict[Any, Tuple[str, int]] = {}
        self._stopped: set = set()
        self._node_ids: Dict[str, str] = {}  # host name (a node id's first 12 digits) -> node id
        self.driven: Optional[DrivenJob] = None
        self._closing = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="korovod.ray elastic", daemon=True)

    def discover(self) -> List[Tuple[str, int]]:
        job = self._job
        if job.discovery is not None:
            return self._discover_with(job.discovery)
        hosts = []
        for node in ray.nodes():
            if not node.get("Alive", node.get("alive")):
                continue
            resources = node.get("Resources", {})
            slots = int(resources.get("CPU", 0) // job.cpus_per_worker)
            if job.use_gpu:
                slots = min(slots, int(resources.get("GPU", 0) // job.gpus_per_worker))
            host = node["NodeID"][:12]
            self._node_ids[host] = node["NodeID"]
            hosts.append((host, slots))
        return hosts

    def _discover_with(self, discovery) -> List[Tuple[str, int]]:
        """The caller's discovery (override_discovery=False): its hosts, pinned to the live node
        whose address or id is that name, else placed by Ray."""
        by_address = {}
        for node in ray.nodes():
            if node.get("Alive", node.get("alive")):
                by_address[node["NodeManagerAddress"]] = node["NodeID"]
                by_address[node["NodeID"]] = node["NodeID"]
        hosts = []
        for host, slots in discovery.find_available_hosts_and_slots().items():
            if host in by_address:
                self._node_ids[host] = by_address[host]
            hosts.append((host, int(slots)))
        return hosts

    def start(self, host: str, slot: int, env: Dict[str, str]) -> None:
        job = self._job
        options = dict(num_cpus=job.cpus_per_worker)
        if host in self._node_ids:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=self._node_ids[host], soft=False)
        if job.use_gpu:
            options["num_gpus"] = job.gpus_per_worker
        actor = ray.remote(BaseHorovodWorker).options(**options).remote()
        env = {**env, **job.extra_env_vars}
        # Before the function: Ray runs an actor's calls in order.
        actor.update_env_vars.remote(env)
        actor.start_executable.remote(job.executable_cls, job.executable_args, job.executable_kwargs)
        future = actor.execute.remote(self._fn)
        with self._lock:
            self._actors[(host, slot)] = actor
            self._futures[future] = (host, slot)
            self._stopped.discard((host, slot))
        if not self._watcher.is_alive():
            self._watcher.start()

    def stop(self, host: str, slot: int) -> None:
        with self._lock:
            actor = self._actors.get((host, slot))
            self._stopped.add((host, slot))
        if actor is not None:
            ray.kill(actor)

    def _watch(self) -> None:
        while not self._closing.is_set():
            with self._lock:
                futures = list(self._futures)
            if not futures:
                self._closing.wait(0.1)
                continue
            ready, _ = ray.wait(futures, num_returns=1, timeout=0.2)
            for future in ready:
                with self._lock:
                    host, slot = self._futures.pop(future)
                    self._actors.pop((host, slot), None)
                    stopped = (host, slot) in self._stopped
                try:
                    result = ray.get(future)
                    self.driven.exited(host, slot, 0, result=result)
                except Exception as e:  # noqa: BLE001 -- a failed worker, reported to the driver
                    cause = getattr(e, "cause", None) or e  # a RayTaskError's: the function's own exception
                    what = "was stopped by the driver" if stopped else f"failed: {type(cause).__name__}: {cause}"
                    error = WorkerError(f"{host}:{slot}", f"worker {host}:{slot} {what}", e, stopped)
                    self.driven.exited(host, slot, 1, error=error)

    def close(self) -> None:
        """Kills every actor still alive and ends the watcher."""
        self._closing.set()
        with self._lock:
            actors = list(self._actors.values())
            self._actors.clear()
            self._futures.clear()
        for actor in actors:
            ray.kill(actor)
        if self._watcher.is_alive():
            self._watcher.join(timeout=10)


class ElasticJob:
    """The workers of one elastic job come and go: each run/execute call is a job of its own."""

    def __init__(self, settings, min_workers: int, max_workers: Optional[int] = None,
                 reset_limit: Optional[int] = None, cooldown_range: Optional[List[int]] = None,
                 elastic_timeout: int = 600, cpus_per_worker: float = 1, use_gpu: bool = False,
                 gpus_per_worker: float = 1, override_discovery: bool = True) -> None:
        self.settings = settings
        self.min_workers = min_workers
        self.max_workers = max_workers
        self.reset_limit = reset_limit
        self.cooldown_range = tuple(cooldown_range) if cooldown_range else None
        self.elastic_timeout = elastic_timeout
        self.cpus_per_worker = cpus_per_worker
        self.use_gpu = use_gpu
        self.gpus_per_worker = gpus_per_worker  # with use_gpu
        # Horovod's override_discovery=False: the caller's settings.discovery (an object with
        # find_available_hosts_and_slots() -> {host: slots}) says where workers go.
        self.discovery = None if override_discovery else getattr(settings, "discovery", None)
        self.server: Optional[RendezvousServer] = None
        self.executable_cls = None
        self.executable_args: Optional[List] = None
        self.executable_kwargs: Optional[Dict] = None
        self.extra_env_vars: Dict[str, str] = {}

    def start(self, executable_cls: Optional[type] = None, executable_args: Optional[List] = None,
              executable_kwargs: Optional[Dict] = None, extra_env_vars: Optional[Dict] = None) -> None:
        """Hosts the rendezvous; workers are created by each run/execute call."""
        self.shutdown()
        self.server = RendezvousServer(listen_host="0.0.0.0", address=ray.util.get_node_ip_address(),
                                       job_secret=_job_secret(self.settings))
        self.server.start()
        self.executable_cls, self.executable_args, self.executable_kwargs = (executable_cls, executable_args,
                                                                              executable_kwargs)
        self.extra_env_vars = {str(k): str(v) for k, v in (extra_env_vars or {}).items()}
        nics = getattr(self.settings, "nics", None)
        if nics:
            self.extra_env_vars.setdefault("KOROVOD_IFACE", sorted(nics)[0])
        self.extra_env_vars.setdefault("KOROVOD_START_TIMEOUT", str(getattr(self.settings, "timeout_s", 300)))

    def run(self, fn: Callable, args: Optional[List] = None, kwargs: Optional[Dict] = None,
            callbacks=None) -> List[Any]:
        call_args, call_kwargs = list(args or []), dict(kwargs or {})
        return self._run(lambda _executable: fn(*call_args, **call_kwargs))

    def execute(self, fn: Callable[[Any], Any], callbacks=None) -> List[Any]:
        return self._run(fn)

    def run_remote(self, fn: Callable, args=None, kwargs=None, callbacks=None):
        raise NotImplementedError("korovod.ray: run_remote() has no elastic form: the workers of an elastic job "
                                  "come and go, so there are no ObjectRefs to hand out (as in Horovod); use run()")

    def execute_single(self, fn: Callable[[Any], Any]) -> Any:
        raise NotImplementedError("korovod.ray: execute_single() has no elastic form (as in Horovod): use execute()")

    def _run(self, worker_fn: Callable[[Any], Any]) -> List[Any]:
        if self.server is None:
            raise RuntimeError("korovod.ray: run() before start(), or after shutdown()")
        verbose = int(getattr(self.settings, "verbose", 1) or 0)
        limits = Limits(start_np=self.min_workers, min_np=self.min_workers, max_np=self.max_workers,
                        reset_limit=self.reset_limit, elastic_timeout=float(self.elastic_timeout),
                        cooldown_range=self.cooldown_range, verbose=verbose >= 2,
                        names=("elastic_timeout", "min_workers", "min_workers", "reset_limit"))
        actors = _Actors(self, worker_fn)
        driven = DrivenJob(self.server, actors, limits, console("korovod.ray", verbose))
        actors.driven = driven
        try:
            outcome = driven.run()
        finally:
            actors.close()
        outcome.raise_if_failed("korovod.ray")
        return outcome.results_in_rank_order()

    def shutdown(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.server = None
