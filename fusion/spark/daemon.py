"""Spark's Python daemon, with what Fusion's tasks import loaded before it forks a worker.

Spark runs a Python task in a worker that its daemon forks, and kills the
workers that sat idle for a minute (``PythonWorkerFactory``: not
configurable). Each new worker then imports what its task needs: pyspark from
Spark's ``pyspark.zip`` and Fusion from the zip the driver ships, both
compiled from source (a zip holds no ``__pycache__``), plus pyarrow, the
Elasticsearch client and pydantic. That is about 1.2 s of CPU per worker on
the reference machine, and a burst into a fresh pipeline, or into one that
rested a minute, starts eight workers at once (the indexer's tasks): its
first micro-batch waited seconds on two cores for imports (docs/benchmark.md,
"Python workers").

This daemon imports all of that once, then runs PySpark's own daemon loop,
so a worker is a fork with its modules loaded. Spark starts it as
``python -m fusion.spark.daemon pyspark.worker`` when
``spark.python.daemon.module`` names it (:func:`fusion.spark.session.spark_session`
does so where the executors run this interpreter, which has Fusion installed).

A fork copies only the thread that forks. Importing numpy starts an OpenBLAS
thread and pyarrow a jemalloc thread, which a forked worker would lack; both
are turned off here, before the imports (the workers compute no linear
algebra, and pyarrow's default allocator is mimalloc). A module that fails to
import is left to the worker, which reports it as its task's error.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

# What the tasks run (their modules import the rest: pyarrow, the clients, pydantic).
TASK_MODULES = (
    "pyspark.worker",
    "fusion.spark.tasks",
    "indexers.task",
    "indexers.handoff",
    "fusion.counter.task",
    "fusion.counter.processor",
    "fusion.enricher.task",
    "fusion.ops.reconcile",
)

# The Spark setting that names the daemon's module, and this one's name in it.
CONF_KEY = "spark.python.daemon.module"
MODULE = "fusion.spark.daemon"

# No thread may exist when the daemon forks (see the module docstring).
THREADLESS = {"OPENBLAS_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false"}


def preload(modules: tuple[str, ...] = TASK_MODULES) -> list[str]:
    """Import ``modules``; the names of those that failed (their workers import them again)."""
    for name, value in THREADLESS.items():
        os.environ.setdefault(name, value)
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # the worker meets it again, and reports it with its task
            failed.append(name)
    # Every worker inherits these objects: the collector need not walk them in each.
    gc.freeze()
    return failed


def no_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A ``mapInArrow`` function that only makes its worker start (see ``start_workers``)."""
    for _ in batches:
        pass
    return iter(())


def start_workers(spark: SparkSession) -> None:
    """Start the executors' Python daemon and a worker per task slot, before any query
    (else the first batch with records starts them while its records wait).

    Spark stops an idle worker after a minute; the daemon stays, and with this
    module as the daemon a new worker is a fork. With PySpark's daemon (a
    cluster, spark-submit) nothing is started: each worker imports on its own.
    The queries start after it: a backlog's first batch that shared the two cores
    with the workers' start gave its first key 3 s later (docs/benchmark.md, "A
    backlog's first key"). A job that fails leaves the workers to the first
    batch, which reports what failed.
    """
    if spark.sparkContext.getConf().get(CONF_KEY, "") != MODULE:
        return
    slots = spark.sparkContext.defaultParallelism
    with contextlib.suppress(Exception):
        spark.range(slots, numPartitions=slots).mapInArrow(no_rows, "id long").count()


def main() -> None:
    preload()
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
