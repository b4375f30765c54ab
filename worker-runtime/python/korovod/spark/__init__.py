"""korovod.spark: Horovod's Spark runners (``horovod.spark.run`` and ``run_elastic``) on korovod.

``run``: ranks run as the tasks of one Spark barrier stage and meet at a rendezvous store the
driver hosts, over korovod's TCP planes (no MPI, no ssh). ``run_elastic``: Spark tasks are slots
for the workers of an elastic job whose rounds are korovodrun's elastic driver's. docs/spark.md.
Needs pyspark (imported when a runner is called, not here).
"""

from korovod.spark._elastic import run_elastic
from korovod.spark.runner import RankFailed, RemoteTraceback, run

__all__ = ["run", "run_elastic", "RankFailed", "RemoteTraceback"]
