"""korovod.ray: Horovod's Ray runner (``horovod.ray.RayExecutor``) on korovod.

Ranks run as Ray actors in a placement group and meet at a rendezvous store the driver hosts,
over korovod's TCP planes (no MPI, no ssh, no Gloo). docs/ray.md. Needs ray.
"""

from korovod.ray.runner import ELASTIC_MISSING, RayExecutor
from korovod.ray.worker import BaseHorovodWorker

__all__ = ["RayExecutor", "BaseHorovodWorker"]


def __getattr__(name: str):
    if name == "ElasticRayExecutor":
        raise ImportError(ELASTIC_MISSING)
    raise AttributeError(f"module 'korovod.ray' has no attribute {name!r}")
