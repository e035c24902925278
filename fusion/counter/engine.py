"""Which engine keeps the counter's state: one this machine runs, and the one its checkpoint has."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError
from fusion.spark.checkpoint import CheckpointFiles
from fusion.topology import topology_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
