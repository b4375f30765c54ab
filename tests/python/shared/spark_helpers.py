"""What the korovod.spark tests share (torch and TensorFlow): a local Spark session on 127.0.0.1
whose executors run this interpreter, and the checks that nothing is left running."""

from __future__ import annotations

import contextlib
import os
import sys

from elastic_checks import assert_gone, processes


@contextlib.contextmanager
def local_spark(master: str, app: str, **conf: str):
    """A SparkSession on `master` (local[N], or local[N,F]: a failed task is tried F times), its
    driver on 127.0.0.1, no UI, logging at ERROR, `conf` added; stopped at the end. The executors'
    Python is this one (the venv's): Spark's default is `python3` on PATH."""
    from pyspark.sql import SparkSession
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def rank_processes():
    """Processes running a korovod.spark rank or worker (none may be left after a call)."""
    return processes("korovod.spark._rank")


def assert_nothing_left_running(session) -> None:
    """No rank process and no active Spark job, within 15 s."""
    assert_gone(rank_processes)
    assert_gone(lambda: list(session.sparkContext.statusTracker().getActiveJobsIds()))
