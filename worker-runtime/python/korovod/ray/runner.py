"""korovod.ray.RayExecutor: Horovod's ``horovod.ray.RayExecutor`` on korovod.

The driver (or, under Ray Client, an actor in the cluster) hosts the job's rendezvous store and
creates one actor per rank in a placement group. Each actor gets the store's address, its rank
and the job secret in its environment, so that ``hvd.init()`` in a function the executor runs
there meets the other ranks over korovod's TCP control and data planes: no MPI, no ssh, no Gloo.
docs/ray.md.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import ray

from korovod.ray._elastic import ElasticJob
from korovod.ray._static import StaticJob
from korovod.ray.coordinator import Coordinator, MiniSettings


class RayExecutor:
    """A Horovod job on Ray: ``start()`` creates the workers, ``run``/``execute`` run functions
    on every rank and return their results in rank order, ``shutdown()`` ends the workers.

    settings: from ``RayExecutor.create_settings``. num_workers: the number of ranks (one actor
    each, packed in one placement group); or num_hosts x num_workers_per_host: that many ranks on
    each of num_hosts distinct nodes. cpus_per_worker, use_gpu, gpus_per_worker: each actor's Ray
    resources. use_current_placement_group: inside a placement group already, put the workers
    there (default True).

    Elastic mode (min_workers instead of num_workers, Horovod's ElasticAdapter): each run/execute
    starts min_workers workers as soon as the cluster has that many slots (a node offers CPUs //
    cpus_per_worker), grows up to max_workers (default: no limit) as slots appear, and survives
    workers that die, in new rounds, while at least min_workers remain (waiting up to
    elastic_timeout seconds for enough); the function must train under ``hvd.elastic.run``.
    reset_limit: most new rounds before the job fails; cooldown_range (MIN, MAX): seconds a host
    whose workers keep failing stays out (default: for good). override_discovery=False:
    ``settings.discovery`` (an object whose ``find_available_hosts_and_slots()`` returns {host:
    slots}) says where workers go instead of Ray's nodes. run_remote and execute_single do not
    exist there, as in Horovod.
    """

    @classmethod
    def create_settings(cls, timeout_s: int = 30, ssh_identity_file: Optional[str] = None,
                        ssh_str: Optional[str] = None, placement_group_timeout_s: int = 100,
                        nics: Optional[set] = None) -> MiniSettings:
        """Settings for a job: timeout_s for the ranks to meet at hvd.init(),
        placement_group_timeout_s for Ray to reserve the workers' resources, nics for the ranks'
        sockets. ssh_identity_file and ssh_str are accepted for Horovod's signature; korovod
        uses no ssh, and writes no key file."""
        return MiniSettings(ssh_identity_file=ssh_identity_file, timeout_s=timeout_s,
                            placement_group_timeout_s=placement_group_timeout_s, nics=nics)

    def __init__(self, settings, num_workers: Optional[int] = None, num_hosts: Optional[int] = None,
                 num_workers_per_host: int = 1, cpus_per_worker: int = 1, use_gpu: bool = False,
                 gpus_per_worker: Optional[int] = None, use_current_placement_group: bool = True,
                 min_workers: Optional[int] = None, max_workers: Optional[int] = None,
                 reset_limit: Optional[int] = None, cooldown_range: Optional[List[int]] = None,
                 elastic_timeout: int = 600, override_discovery: bool = True) -> None:
        if max_workers and (not min_workers or min_workers <= 0):
            raise ValueError("max_workers needs a positive min_workers: an elastic job has both")
        if min_workers and num_workers:
            raise ValueError("num_workers and min_workers are both given: a job is either static (num_workers) "
                             "or elastic (min_workers/max_workers), not both")
        if min_workers is not None and min_workers < 1:
            raise ValueError(f"min_workers must be at least 1, not {min_workers}")
        if max_workers is not None and min_workers is not None and max_workers < min_workers:
            raise ValueError(f"max_workers ({max_workers}) is below min_workers ({min_workers})")
        if min_workers is not None and not override_discovery and getattr(settings, "discovery", None) is None:
            raise ValueError("override_discovery=False needs settings.discovery: an object whose "
                             "find_available_hosts_and_slots() returns {host: slots}")
        if gpus_per_worker and not use_gpu:
            raise ValueError("gpus_per_worker is set but use_gpu is False: set use_gpu=True to give workers GPUs")
        if use_gpu and isinstance(gpus_per_worker, int) and gpus_per_worker < 1:
            raise ValueError(f"gpus_per_worker must be at least 1, not {gpus_per_worker}")
        if num_workers is not None and num_hosts is not None:
            raise ValueError("num_workers and num_hosts are both given: give num_workers, or num_hosts with "
                             "num_workers_per_host")
        if num_workers is None and num_hosts is None and min_workers is None:
            raise ValueError("give num_workers (ranks), or num_hosts with num_workers_per_host")
        for name, value in (("num_workers", num_workers), ("num_hosts", num_hosts),
                            ("num_workers_per_host", num_workers_per_host)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        self.settings = settings
        self._is_remote = False
        if min_workers is not None:
            self.settings.elastic = True
            self._job_class = ElasticJob
            self._job_args = dict(min_workers=min_workers, max_workers=max_workers, reset_limit=reset_limit,
                                  cooldown_range=cooldown_range, elastic_timeout=elastic_timeout,
                                  cpus_per_worker=cpus_per_worker, use_gpu=use_gpu,
                                  gpus_per_worker=gpus_per_worker or 1, override_discovery=override_discovery)
            return
        self.settings.elastic = False
        self._job_class = StaticJob
        self._job_args = dict(num_workers=num_workers, num_hosts=num_hosts,
                              num_workers_per_host=num_workers_per_host, cpus_per_worker=cpus_per_worker,
                              use_gpu=use_gpu, gpus_per_worker=gpus_per_worker or 1,
                              use_current_placement_group=use_current_placement_group)
        self._is_remote = False

    def start(self, executable_cls: Optional[type] = None, executable_args: Optional[List] = None,
              executable_kwargs: Optional[Dict] = None, extra_env_vars: Optional[Dict] = None) -> None:
        """Creates the workers (placement group, one actor per rank, the rendezvous), sets
        extra_env_vars in every one, and makes ``executable_cls(*executable_args,
        **executable_kwargs)`` in each (what ``execute`` passes to its functions). Raises
        TimeoutError when Ray cannot place them within placement_group_timeout_s."""
        if ray.util.client.ray.is_connected():
            # Under Ray Client the job runs in the cluster, next to its workers.
            self.adapter = ray.remote(self._job_class).options(num_cpus=0).remote(self.settings, **self._job_args)
            self._is_remote = True
        else:
            self.adapter = self._job_class(self.settings, **self._job_args)
            self._is_remote = False
        self._call("start", executable_cls=executable_cls, executable_args=executable_args,
                   executable_kwargs=executable_kwargs, extra_env_vars=extra_env_vars)

    def execute(self, fn: Callable[[Any], Any], callbacks: Optional[List[Callable]] = None) -> List[Any]:
        """``fn(executable)`` on every rank; their results in rank order. A rank's exception is
        raised here, with a note naming the rank. callbacks: accepted, unused (as in Horovod's
        static executor)."""
        return self._call("execute", fn=fn, callbacks=callbacks)

    def run(self, fn: Callable[..., Any], args: Optional[List] = None, kwargs: Optional[Dict] = None,
            callbacks: Optional[List[Callable]] = None) -> List[Any]:
        """``fn(*args, **kwargs)`` on every rank; their results in rank order (errors as in
        ``execute``)."""
        return self._call("run", fn=fn, args=args, kwargs=kwargs, callbacks=callbacks)

    def run_remote(self, fn: Callable[..., Any], args: Optional[List] = None,
                   kwargs: Optional[Dict] = None) -> List["ray.ObjectRef"]:
        """Starts ``fn(*args, **kwargs)`` on every rank; returns their ObjectRefs (``ray.get``)."""
        return self._call("run_remote", fn=fn, args=args, kwargs=kwargs)

    def execute_single(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(executable)`` on rank 0 only."""
        return self._call("execute_single", fn=fn)

    def shutdown(self) -> None:
        """Ends every worker (its actor is killed), removes the placement group the executor
        made and stops the rendezvous. Safe to call twice, and after a failed start."""
        adapter = getattr(self, "adapter", None)
        if adapter is None:
            return
        self._call("shutdown")
        if self._is_remote:
            ray.kill(adapter)
        del self.adapter

    def _call(self, method: str, **kwargs):
        adapter = getattr(self, "adapter", None)
        if adapter is None:
            raise RuntimeError(f"korovod.ray: {method}() before start(), or after shutdown()")
        if self._is_remote:
            return ray.get(getattr(adapter, method).remote(**kwargs))
        return getattr(adapter, method)(**kwargs)


__all__ = ["RayExecutor", "Coordinator", "MiniSettings"]
