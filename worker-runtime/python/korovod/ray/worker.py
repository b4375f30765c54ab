"""The Ray actor each rank of a korovod.ray job runs in (Horovod's ``BaseHorovodWorker``)."""

from __future__ import annotations

import os
import socket
from typing import Any, Callable, Dict, List, Optional


class BaseHorovodWorker:
    """One rank: a Ray actor that holds the environment ``hvd.init()`` reads, and optionally an
    object of the user's class (``executable``) that ``execute`` hands to each function.

    Made by RayExecutor.start (``ray.remote(BaseHorovodWorker)``); subclass it to add methods.
    """

    executable: Any = None

    def __init__(self, world_rank: int = 0, world_size: int = 1) -> None:
        rank, size = str(world_rank), str(world_size)
        os.environ.update({"HOROVOD_HOSTNAME": self.node_id(), "HOROVOD_RANK": rank, "HOROVOD_SIZE": size,
                           "KOROVOD_RANK": rank, "KOROVOD_SIZE": size})

    def node_id(self) -> str:
        """The Ray node this actor runs on (its hex id): a "host" for local and cross ranks."""
        import ray
        return ray.get_runtime_context().get_node_id()

    def hostname(self) -> str:
        return socket.gethostname()

    def get_gpu_ids(self) -> List[int]:
        """The GPUs Ray gave this actor."""
        import ray
        return list(ray.get_gpu_ids())

    def update_env_vars(self, env_vars: Dict[str, Any]) -> None:
        """Sets these variables in the actor's process (values as strings)."""
        os.environ.update({str(k): str(v) for k, v in env_vars.items()})

    def env_vars(self) -> Dict[str, str]:
        """The actor's process environment."""
        return dict(os.environ)

    def start_executable(self, executable_cls: Optional[type] = None, executable_args: Optional[list] = None,
                         executable_kwargs: Optional[dict] = None) -> None:
        """Makes ``executable_cls(*executable_args, **executable_kwargs)`` this actor's
        ``executable`` (nothing when executable_cls is None)."""
        if executable_cls is not None:
            self.executable = executable_cls(*(executable_args or []), **(executable_kwargs or {}))

    def execute(self, func: Callable[[Any], Any]) -> Any:
        """Returns ``func(self.executable)``."""
        return func(self.executable)

    def set_queue(self, queue) -> None:
        """Horovod's multi-node log queue: accepted; a korovod rank's output goes to its Ray
        worker's log (and a local driver's console) as any actor's does."""
        self._queue = queue
