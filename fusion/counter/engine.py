"""The counter's two engines behind one interface, and which one keeps a pipeline's state.

Both run Spark's ``transformWithState`` over the acks, grouped by join key,
with the same decisions, state and output rows: the JVM engine's processor is
Java (``fusion.counter.CounterQuery``), the Python one is
:class:`fusion.counter.processor.AckCounter`. :func:`engine_of` is the one
place that chooses; the engine a machine can run (:func:`engine_here`) and the
one a checkpoint was written by (:func:`keep_the_engine`) decide with it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from fusion.core import ConfigError, CounterEngineName, PipelineConfig
from fusion.counter import processor
from fusion.counter.decisions import Rules
from fusion.spark import CheckpointFiles
from fusion.topology import topology_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class CounterEngine(Protocol):
    """What the counter's queries ask of an engine."""

    def count(self, acks: DataFrame, rules: Rules, initial: DataFrame | None) -> DataFrame:
        """Parsed acks through the keyed state (``initial``: a rebuilt one): a row per event."""
        ...

    def index_and_count(
        self, indexed: DataFrame, spec: Any, rules: Rules, initial: DataFrame | None
    ) -> DataFrame:
        """The single query's indexed records, acked by the JVM writer ``spec``, then counted."""
        ...


class JvmEngine:
    def count(self, acks: DataFrame, rules: Rules, initial: DataFrame | None) -> DataFrame:
        query = _counter_query(acks)
        return _frame(query.count(acks._jdf, rules_json(rules), _jdf(initial)), acks)

    def index_and_count(
        self, indexed: DataFrame, spec: Any, rules: Rules, initial: DataFrame | None
    ) -> DataFrame:
        query = _counter_query(indexed)
        counted = query.single(indexed._jdf, spec, rules_json(rules), _jdf(initial))
        return _frame(counted, indexed)


class PythonEngine:
    def count(self, acks: DataFrame, rules: Rules, initial: DataFrame | None) -> DataFrame:
        return processor.count(acks, rules, initial)

    def index_and_count(
        self, indexed: DataFrame, spec: Any, rules: Rules, initial: DataFrame | None
    ) -> DataFrame:
        # The JVM writer publishes the acks (as in the JVM engine); Python counts them.
        published = _frame(_counter_query(indexed).published(indexed._jdf, spec), indexed)
        return processor.count(published, rules, initial)


ENGINES: dict[CounterEngineName, CounterEngine] = {"jvm": JvmEngine(), "python": PythonEngine()}


def engine_of(config: PipelineConfig) -> CounterEngine:
    """The engine that keeps ``config``'s counter state (``[pipeline] counter_engine``)."""
    return ENGINES[config.pipeline.counter_engine]


def rules_json(rules: Rules) -> str:
    """The rules as the JVM counter reads them (``fusion.counter.Json.rules``)."""
    return json.dumps(
        {
            "sources": sorted(rules.sources),
            "required": sorted(rules.required),
            "timeouts_ms": dict(rules.timeouts_ms),
            "on_update": rules.on_update,
            "state_ttl_ms": rules.state_ttl_ms,
            "on_delete": rules.on_delete,
            "dimensions": sorted(rules.dimensions),
            "children": sorted(rules.children),
        }
    )


def _counter_query(frame: DataFrame) -> Any:
    return frame.sparkSession._jvm.fusion.counter.CounterQuery  # type: ignore[union-attr]


def _jdf(frame: DataFrame | None) -> Any:
    return None if frame is None else frame._jdf


def _frame(jdf: Any, like: DataFrame) -> DataFrame:
    from pyspark.sql import DataFrame

    return DataFrame(jdf, like.sparkSession)


NO_JAVAC = (
    "no JDK compiler (javac) here: the counter runs on its Python engine, about a fifth "
    'of the JVM engine\'s speed; set [pipeline] counter_engine = "jvm" to run that one, '
    "compiled by the Eclipse compiler"
)


ENGINE_FILE = "fusion-counter-engine"  # in the counter's checkpoint: which engine wrote its state


def engine_here(config: PipelineConfig) -> tuple[PipelineConfig, str | None]:
    """The pipeline with the counter engine this machine runs, and a line to say if it chose.

    The JVM engine unless the pipeline file (or ``--counter-engine``) chose one,
    or no JDK compiler is found: then the Python engine, which needs no
    compiler of its own, and a line that says so (not an error).
    """
    from fusion.infra import jvm_code as jvm

    if "counter_engine" in config.pipeline.model_fields_set or jvm.find_javac() is not None:
        return config, None
    section = config.pipeline.model_copy(update={"counter_engine": "python"})
    return config.model_copy(update={"pipeline": section}), NO_JAVAC


def keep_the_engine(spark: SparkSession, config: PipelineConfig) -> None:
    """Stop with one line if the counter's checkpoint holds the other engine's state.

    Both engines keep the same state (name, schema, TTL), but Spark records
    which operator wrote a checkpoint's state and refuses another on restart
    (the JVM's ``transformWithState`` is not PySpark's: the query fails with
    ``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``). Checkpoints
    from before the Python engine came back were written by the JVM one.
    """
    files = CheckpointFiles(spark, config.checkpoint(topology_of(config).counter_query))
    engine = config.pipeline.counter_engine
    if files.exists("offsets"):
        written = (files.read_text(ENGINE_FILE) or "jvm").strip()
        if written != engine:
            raise ConfigError(
                "[pipeline] counter_engine",
                engine,
                f"the counter's state in {files.uri} was written by the {written} engine, "
                f'which Spark does not let another read on; set counter_engine = "{written}" '
                f"(or fusion run --counter-engine {written}), or delete the pipeline's "
                "checkpoints to start afresh",
            )
    files.write_text(ENGINE_FILE, engine)
