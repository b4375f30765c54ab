"""Where a korovod.ray job's actors go: a placement group per job (Horovod's strategies).

``ColocatedStrategy`` (``num_hosts`` x ``num_workers_per_host``): one bundle per host, strictly
spread, so every host runs the same number of ranks. ``PGStrategy`` (``num_workers``): one bundle
per rank, packed; or, inside a placement group already, that group. Either creates the actors,
rank ``i`` being the ``i``-th, and with GPUs shows every rank of a node all of that node's GPUs
(CUDA_VISIBLE_DEVICES), as Horovod does, so that ranks can use peer access.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

import ray
from ray.util.placement_group import get_current_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from korovod.ray.worker import BaseHorovodWorker

_log = logging.getLogger("korovod.ray")


def create_placement_group(resources_per_bundle: Dict[str, float], num_bundles: int, pg_timeout: float,
                           pg_strategy: str):
    """A placement group of ``num_bundles`` copies of ``resources_per_bundle``, once Ray has
    reserved it; returns (group, bundles). TimeoutError after ``pg_timeout`` seconds when the
    cluster cannot hold it (the group is removed then: nothing stays reserved)."""
    bundles = [dict(resources_per_bundle) for _ in range(num_bundles)]
    group = ray.util.placement_group(bundles, strategy=pg_strategy)
    ready, _ = ray.wait([group.ready()], timeout=pg_timeout)
    if not ready:
        ray.util.remove_placement_group(group)
        raise TimeoutError(
            f"Placement group creation timed out after {pg_timeout}s: {num_bundles} bundle(s) of "
            f"{resources_per_bundle} ({pg_strategy}) do not fit the cluster. Resources available now: "
            f"{ray.available_resources()}. Ask for fewer workers or resources, add nodes, or raise "
            "placement_group_timeout_s.")
    return group, bundles


def _one_worker_per_host(workers: List) -> List:
    """One actor per distinct hostname (Horovod's node workers)."""
    names = ray.get([w.hostname.remote() for w in workers])
    by_host = {}
    for name, worker in zip(names, workers):
        by_host[name] = worker
    return list(by_host.values())


def _show_node_gpus(workers: List, node_ids: List[str]) -> None:
    """CUDA_VISIBLE_DEVICES of each actor: every GPU that Ray gave the actors of its node."""
    gpu_ids = ray.get([w.get_gpu_ids.remote() for w in workers])
    by_node = defaultdict(list)
    for node, ids in zip(node_ids, gpu_ids):
        by_node[node].extend(ids)
    ray.get([w.update_env_vars.remote({"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in by_node[node])})
             for w, node in zip(workers, node_ids)])


class BaseStrategy:
    placement_group = None
    workers: List = []

    @property
    def num_workers(self) -> int:
        raise NotImplementedError

    def create_workers(self) -> Tuple[List, List]:
        """Creates the actors; returns (all of them in rank order, one per host)."""
        raise NotImplementedError

    def _actor(self, rank: int, bundle_index: int, num_cpus: float, num_gpus: float):
        where = PlacementGroupSchedulingStrategy(placement_group=self.placement_group,
                                                 placement_group_bundle_index=bundle_index,
                                                 placement_group_capture_child_tasks=False)
        return ray.remote(BaseHorovodWorker).options(num_cpus=num_cpus, num_gpus=num_gpus,
                                                     scheduling_strategy=where).remote(world_rank=rank,
                                                                                       world_size=self.num_workers)

    def shutdown(self) -> None:
        """Ends every actor (ray.kill) and removes the group this strategy created."""
        for worker in self.workers:
            try:
                ray.kill(worker, no_restart=True)
            except Exception as e:  # noqa: BLE001 -- an actor already gone is what we want
                _log.debug("korovod.ray: killing an actor: %s", e)
        self.workers = []
        if self.placement_group is not None and self._owns_group():
            ray.util.remove_placement_group(self.placement_group)
        self.placement_group = None

    def _owns_group(self) -> bool:
        return True


class ColocatedStrategy(BaseStrategy):
    """``num_hosts`` bundles (one per host, STRICT_SPREAD) of ``num_workers_per_host`` ranks each."""

    def __init__(self, *, settings, num_hosts: int, num_workers_per_host: int, use_gpu: bool,
                 cpus_per_worker: float, gpus_per_worker: Optional[float]) -> None:
        self.settings = settings
        self.num_hosts = num_hosts
        self.num_workers_per_host = num_workers_per_host
        self.use_gpu = use_gpu
        self.cpus_per_worker = cpus_per_worker
        self.gpus_per_worker = gpus_per_worker or 1
        self.workers = []

    @property
    def num_workers(self) -> int:
        return int(self.num_hosts * self.num_workers_per_host)

    def create_workers(self) -> Tuple[List, List]:
        gpus = self.gpus_per_worker * int(self.use_gpu)
        per_host = {"CPU": self.cpus_per_worker * self.num_workers_per_host, "GPU": gpus * self.num_workers_per_host}
        self.placement_group, _ = create_placement_group(per_host, self.num_hosts,
                                                         self.settings.placement_group_timeout_s, "STRICT_SPREAD")
        self.workers = [self._actor(host * self.num_workers_per_host + i, host, self.cpus_per_worker, gpus)
                        for host in range(self.num_hosts) for i in range(self.num_workers_per_host)]
        if self.use_gpu:
            # A bundle is one host: its ranks are consecutive.
            _show_node_gpus(self.workers, [str(r // self.num_workers_per_host) for r in range(self.num_workers)])
        return self.workers, _one_worker_per_host(self.workers)


class PGStrategy(BaseStrategy):
    """One bundle per rank (PACK), or the placement group the caller runs in already."""

    def __init__(self, *, settings, num_workers: int, use_gpu: bool, cpus_per_worker: float,
                 gpus_per_worker: Optional[float], placement_group=None,
                 force_create_placement_group: bool = False) -> None:
        self.settings = settings
        self._num_workers = num_workers
        self.use_gpu = use_gpu
        self.cpus_per_worker = cpus_per_worker
        self.gpus_per_worker = gpus_per_worker or 1
        self.placement_group = None if force_create_placement_group else (
            placement_group or get_current_placement_group())
        self._created_placement_group = False
        self.workers = []

    @property
    def num_workers(self) -> int:
        return int(self._num_workers)

    def create_workers(self) -> Tuple[List, List]:
        gpus = self.gpus_per_worker * int(self.use_gpu)
        if self.placement_group is None:
            self.placement_group, _ = create_placement_group({"CPU": self.cpus_per_worker, "GPU": gpus},
                                                             self.num_workers,
                                                             self.settings.placement_group_timeout_s, "PACK")
            self._created_placement_group = True
        # In the caller's group any bundle will do (-1); in ours, rank i takes bundle i.
        self.workers = [self._actor(r, r if self._created_placement_group else -1, self.cpus_per_worker, gpus)
                        for r in range(self.num_workers)]
        if self.use_gpu:
            _show_node_gpus(self.workers, ray.get([w.node_id.remote() for w in self.workers]))
        return self.workers, _one_worker_per_host(self.workers)

    def _owns_group(self) -> bool:
        return self._created_placement_group
