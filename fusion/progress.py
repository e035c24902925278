"""Spark's own progress reports, counted into the pipeline's metrics.

A :class:`ProgressListener` sees every micro-batch of the pipeline's queries
and adds what Spark measured: ``input.<query>`` (rows the batch read),
``busy_ms.<query>`` (time spent in batches that read rows) and
``state.<query>.updated`` / ``state.<query>.rows`` (keys whose state the batch
changed; keys in state after it). The counter's input is the acks it counted,
which no task of its own sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql.streaming.listener import StreamingQueryListener

from fusion.config import PipelineConfig
from fusion.metrics import Metrics

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class ProgressListener(StreamingQueryListener):
    """One per SparkSession; counts the progress of each attached pipeline's queries.

    Queries are named ``<pipeline>-<query>``; each pipeline attached with
    :meth:`attach` gets its own queries' progress in its own metrics.
    """

    _installed: ClassVar[dict[int, ProgressListener]] = {}

    def __init__(self) -> None:
        self.pipelines: dict[str, Metrics] = {}

    @classmethod
    def attach(cls, spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> None:
        listener = cls._installed.get(id(spark))
        if listener is None:
            listener = cls._installed[id(spark)] = cls()
            spark.streams.addListener(listener)
        listener.pipelines[f"{config.name}-"] = metrics

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        name = progress.name or ""
        for prefix, metrics in list(self.pipelines.items()):
            if name.startswith(prefix):
                self._count(metrics, name.removeprefix(prefix), progress)

    @staticmethod
    def _count(metrics: Metrics, query: str, progress: Any) -> None:
        rows = int(progress.numInputRows)
        metrics.add(f"input.{query}", rows)
        if rows:
            metrics.add(f"busy_ms.{query}", int(progress.durationMs.get("triggerExecution", 0)))
        operators = progress.stateOperators or []
        if operators:
            metrics.add(f"state.{query}.updated", sum(op.numRowsUpdated for op in operators))
            metrics.set(f"state.{query}.rows", sum(op.numRowsTotal for op in operators))

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass
