"""korovod.ray: Horovod's Ray runners (``horovod.ray.RayExecutor``, static and elastic, and the
older ``ElasticRayExecutor``) on korovod.

Ranks run as Ray actors and meet at a rendezvous store the driver hosts, over korovod's TCP
planes (no MPI, no ssh, no Gloo); an elastic job's rounds are korovodrun's elastic driver's.
docs/ray.md. Needs ray.
"""

from korovod.ray.elastic import ElasticRayExecutor
from korovod.ray.runner import RayExecutor
from korovod.ray.worker import BaseHorovodWorker

__all__ = ["RayExecutor", "ElasticRayExecutor", "BaseHorovodWorker"]
