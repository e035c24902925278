"""Spark's own progress reports, counted into the pipeline's metrics.

A :class:`ProgressListener` sees every micro-batch of the pipeline's queries and adds
what Spark measured: ``input.<query>`` (rows the batch read), ``busy_ms.<query>`` (time
in batches that read rows), their number and their time by phase (``batches.<query>``,
``phase_ms.<query>.<phase>``: where a batch's time goes, docs/benchmark.md),
``state.<query>.updated`` / ``state.<query>.rows`` (keys whose state the batch changed;
keys in state after it), and ``running.<query>`` from the query's start to its end.
The counter's input is the acks it counted, which no task of its own sees.

pyspark's own listener bridge turns each progress report into Python objects
field by field, a few hundred py4j round trips per report (its state
operators' custom metrics alone are dozens); with six queries reporting
several times a second that took a quarter of the driver's CPU. The bridge
here asks the JVM for the report's JSON once.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql.streaming.listener import StreamingQueryListener

from fusion.core import PipelineConfig
from fusion.observe import Metrics, names

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
        # Spark's end-of-query event names no query, only its run.
        self.runs: dict[str, tuple[Metrics, str]] = {}

    @property
    def _jlistener(self) -> Any:
        """The JVM side of this listener: pyspark's wrapper around :class:`_JsonBridge`."""
        from pyspark import SparkContext

        if not hasattr(self, "_jlistenerobj"):
            jvm: Any = SparkContext._jvm
            self._jlistenerobj = jvm.PythonStreamingQueryListenerWrapper(_JsonBridge(self))
        return self._jlistenerobj

    @classmethod
    def attach(cls, spark: SparkSession, config: PipelineConfig, metrics: Metrics) -> None:
        listener = cls._installed.get(id(spark))
        if listener is None:
            listener = cls._installed[id(spark)] = cls()
            spark.streams.addListener(listener)
        listener.pipelines[f"{config.name}-"] = metrics

    def onQueryStarted(self, event: Any) -> None:
        self.on_started(str(event.runId), event.name or "")

    def onQueryProgress(self, event: Any) -> None:
        self.on_progress(json.loads(event.progress.json))

    def on_started(self, run: str, name: str) -> None:
        for prefix, metrics in list(self.pipelines.items()):
            if name.startswith(prefix):
                self.runs[run] = (metrics, query := name.removeprefix(prefix))
                metrics.set(names.query_running(query), 1)

    def on_terminated(self, run: str) -> None:
        if (found := self.runs.pop(run, None)) is not None:
            found[0].set(names.query_running(found[1]), 0)

    def on_progress(self, progress: dict[str, Any]) -> None:
        """Count one progress report (Spark's JSON form of ``StreamingQueryProgress``)."""
        name = progress.get("name") or ""
        for prefix, metrics in list(self.pipelines.items()):
            if name.startswith(prefix):
                self._count(metrics, name.removeprefix(prefix), progress)

    @staticmethod
    def _count(metrics: Metrics, query: str, progress: dict[str, Any]) -> None:
        rows = int(progress.get("numInputRows") or 0)
        metrics.add(names.query_input(query), rows)
        if rows:
            durations = progress.get("durationMs") or {}
            busy = durations.get("triggerExecution", 0)
            metrics.add(names.query_busy_ms(query), int(busy))
            metrics.add(names.query_batches(query))
            for phase, ms in durations.items():
                if phase != "triggerExecution":
                    metrics.add(names.query_phase_ms(query, phase), int(ms))
            if not metrics.get(names.first_input(query)):
                # The first batch that read rows runs in a cold JVM (class loading,
                # JIT); the benchmark reports the rate without it as well.
                metrics.set(names.first_input(query), rows)
                metrics.set(names.first_busy_ms(query), int(busy))
                if stamp := progress.get("timestamp"):  # when the batch's trigger fired
                    started = datetime.fromisoformat(stamp).timestamp()
                    metrics.set(names.first_batch_at_ms(query), round(started * 1000))
        operators = progress.get("stateOperators") or []
        if operators:
            metrics.add(names.state_updated(query), sum(op["numRowsUpdated"] for op in operators))
            metrics.set(names.state_rows(query), sum(op["numRowsTotal"] for op in operators))

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        self.on_terminated(str(event.runId))


class _JsonBridge:
    """Implements Spark's Python listener interface (through py4j) with one call per report."""

    def __init__(self, listener: ProgressListener) -> None:
        self.listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        self.listener.on_started(str(jevent.runId().toString()), jevent.name() or "")

    def onQueryProgress(self, jevent: Any) -> None:
        self.listener.on_progress(json.loads(jevent.progress().json()))

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        self.listener.on_terminated(str(jevent.runId().toString()))

    class Java:
        implements: ClassVar[list[str]] = [
            "org.apache.spark.sql.streaming.PythonStreamingQueryListener"
        ]
