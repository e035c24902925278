"""The executor side of every stage: what a task gets, the clients it keeps, what it returns.

Each stage's foreachBatch handler (:mod:`fusion.runtime.stage`, on the driver) maps
its micro-batch with ``mapInArrow``: one task per input partition, run by an
executor's Python worker. A task:

1. receives its partition's rows as Arrow batches (no record passes through
   the driver);
2. does the stage's work with clients its worker built once and keeps for
   later tasks (Spark reuses Python workers): an Elasticsearch client per
   connection settings and a transactional Kafka writer per transactional id;
3. publishes its Kafka records exactly once (:mod:`fusion.runtime.exactly_once`), under a
   transactional id derived from the stage and the input partition, so a
   retried task takes over from its failed attempt;
4. yields its counts as ``(name, value, executor)`` rows: a handful per task,
   which the driver adds up.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fusion.core.config import PipelineConfig
from fusion.core.settings import ElasticsearchSettings
from fusion.runtime import clients
from fusion.runtime.exactly_once import TransactionalOutput

if TYPE_CHECKING:
    import pyarrow as pa
    from elasticsearch import Elasticsearch

RESULT_SCHEMA = "name STRING, value BIGINT, executor STRING"
Counts = Mapping[str, int]

_ES: dict[str, Elasticsearch] = {}
_OUTPUTS: dict[str, TransactionalOutput] = {}


@dataclass(frozen=True)
class Job:
    """What every task of one stage's micro-batch needs: shipped to the executors with it."""

    config: PipelineConfig
    stage: str  # the query's name within the pipeline: indexer-<source>, counter, enricher
    points: str  # the stage's crash-point prefix: indexer, counter, enricher, naive
    query: str  # the query id from the checkpoint: markers of another checkpoint do not count
    batch_id: int

    def output(self, task_key: str) -> TransactionalOutput:
        """This worker's writer for the task of input partition ``task_key``."""
        config = self.config
        transactional_id = f"fusion-{config.name}-{self.stage}@{task_key}"
        writer = _OUTPUTS.get(transactional_id)
        if writer is None:
            writer = TransactionalOutput(
                config.kafka,
                transactional_id,
                config.markers_topic,
                config.pipeline.retry_budget_seconds,
                self.points,
            )
            _OUTPUTS[transactional_id] = writer
        return writer

    def elasticsearch(self) -> Elasticsearch:
        return elasticsearch(self.config.elasticsearch)


def elasticsearch(settings: ElasticsearchSettings) -> Elasticsearch:
    """This worker's client for ``settings`` (kept across tasks: its connections stay open)."""
    key = repr(sorted(settings.as_client_options().items()))
    client = _ES.get(key)
    if client is None:
        client = _ES[key] = clients.elasticsearch(settings)
    return client


Work = Callable[[Job, "pa.Table"], Counts]


def partition_function(
    job: Job, work: Work
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function running ``work`` over one task's rows (none: no work)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        received = list(batches)
        if not received or not any(b.num_rows for b in received):
            return
        counts = work(job, pa.Table.from_batches(received))
        yield result_batch(counts)

    return run


def result_batch(counts: Counts) -> Any:
    import pyarrow as pa

    names = [name for name, value in counts.items() if value]
    executor = executor_label()
    return pa.RecordBatch.from_pydict(
        {
            "name": names,
            "value": [int(counts[name]) for name in names],
            "executor": [executor] * len(names),
        },
        schema=pa.schema([("name", pa.string()), ("value", pa.int64()), ("executor", pa.string())]),
    )


def executor_label() -> str:
    """Which executor runs this task: host and working directory.

    A standalone worker starts each executor in ``<work dir>/<app id>/<executor id>``
    and its Python workers inherit that directory; in local mode it is the driver's.
    """
    return f"{socket.gethostname()}:{os.getcwd()}"


def column(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist()  # type: ignore[no-any-return]
