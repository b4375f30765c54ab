"""korovod.ray.ElasticRayExecutor: Horovod's older elastic API on Ray (``horovod.ray.ElasticRayExecutor``,
deprecated there since 0.25 in favour of ``RayExecutor(min_workers=...)``), over the same job as
RayExecutor's elastic mode (korovod.ray._elastic). docs/ray.md.
"""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any, Callable, Dict, List, Optional

from korovod.common.elastic_job import deprecated_limits
from korovod.ray._elastic import ElasticJob


@dataclasses.dataclass
class ElasticSettings:
    """What ElasticRayExecutor.create_settings returns (Horovod's ElasticSettings fields that
    korovod uses; ssh_identity_file is kept, unused: no ssh)."""

    min_num_proc: int = 1
    max_num_proc: Optional[int] = None
    reset_limit: Optional[int] = None
    elastic_timeout: int = 600
    timeout_s: int = 30
    ssh_identity_file: Optional[str] = None
    nics: Optional[set] = None
    verbose: int = 1
    key: Optional[str] = dataclasses.field(default_factory=lambda: secrets.token_hex(32))
    elastic: bool = True
    discovery: Any = None

    @property
    def num_proc(self) -> int:
        return self.min_num_proc


class ElasticRayExecutor:
    """An elastic job on the whole Ray cluster: ``start()``, then ``run(worker_fn)`` runs
    ``worker_fn()`` (no arguments) on min_num_proc..max_num_proc workers, one actor each, and
    returns the results of the workers that finished, in rank order."""

    @staticmethod
    def create_settings(min_num_proc: int = 1, max_num_proc: Optional[int] = None, reset_limit: Optional[int] = None,
                        elastic_timeout: int = 600, timeout_s: int = 30, ssh_identity_file: Optional[str] = None,
                        nics: Optional[set] = None, min_np: Optional[int] = None, max_np: Optional[int] = None,
                        **kwargs) -> ElasticSettings:
        min_num_proc, max_num_proc = deprecated_limits(min_num_proc, max_num_proc, min_np, max_np)
        verbose = kwargs.pop("verbose", 1)
        return ElasticSettings(min_num_proc=min_num_proc, max_num_proc=max_num_proc, reset_limit=reset_limit,
                               elastic_timeout=elastic_timeout, timeout_s=timeout_s,
                               ssh_identity_file=ssh_identity_file, nics=nics, verbose=int(verbose))

    def __init__(self, settings: ElasticSettings, use_gpu: bool = False, cpus_per_slot: int = 1,
                 gpus_per_slot: Optional[int] = None, env_vars: Optional[Dict] = None,
                 override_discovery: bool = True) -> None:
        if gpus_per_slot and not use_gpu:
            raise ValueError("gpus_per_slot is set but use_gpu is False: set use_gpu=True to give workers GPUs")
        gpus_per_slot = gpus_per_slot or int(use_gpu)
        if use_gpu and gpus_per_slot < 1:
            raise ValueError(f"gpus_per_slot must be at least 1, not {gpus_per_slot}")
        self.settings = settings
        self.env_vars = dict(env_vars or {})
        self._job = ElasticJob(settings, min_workers=settings.min_num_proc, max_workers=settings.max_num_proc,
                               reset_limit=settings.reset_limit, elastic_timeout=settings.elastic_timeout,
                               cpus_per_worker=cpus_per_slot, use_gpu=use_gpu, gpus_per_worker=gpus_per_slot or 1,
                               override_discovery=override_discovery)

    def start(self) -> None:
        """Hosts the job's rendezvous (workers start with each run)."""
        self._job.start(extra_env_vars=self.env_vars)

    def run(self, worker_fn: Callable[[], Any], callbacks: Optional[List[Callable]] = None) -> List[Any]:
        """``worker_fn()`` on every worker; the results of those that finished, in rank order.
        callbacks: accepted, unused (a worker's output goes to its Ray log)."""
        return self._job._run(lambda _executable: worker_fn())

    def shutdown(self) -> None:
        self._job.shutdown()
