"""korovod.spark: Horovod's Spark runner (``horovod.spark.run``) on korovod.

Ranks run as the tasks of one Spark barrier stage and meet at a rendezvous store the driver
hosts, over korovod's TCP planes (no MPI, no ssh). docs/spark.md. Needs pyspark (imported when
``run`` is called, not here).
"""

from korovod.spark.runner import RankFailed, RemoteTraceback, run

__all__ = ["run", "RankFailed", "RemoteTraceback"]
