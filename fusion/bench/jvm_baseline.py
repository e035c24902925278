"""The counter's JVM-only baseline: Spark's own ``from_json`` and ``groupBy(key).count()``.

The counter alone's acks/s say little on another machine; the same machine's
Spark counting the same acks with nothing of Fusion's (no Python, no
processor, no events published) does travel. It reads the ack topic the
counter alone just read, in a process and JVM of its own (as the counter's
``fusion run``), one wave per micro-batch: the first batch, in a cold JVM,
takes the warm-up wave, the rest is the measured one. Spark's optimizer
prunes ``from_json`` to the one field the count uses; that is the baseline
as Spark runs it.

``python -m fusion.bench.jvm_baseline <config.toml> <checkpoint dir>`` prints
its figures as one JSON line; :func:`run_jvm_baseline` runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from acks import ACK_SPARK_SCHEMA
from fusion.bench.errors import PipelineProcessError
from fusion.core import PipelineConfig, write_config

OPERATOR = "from_json + groupBy(key).count()"


def run_jvm_baseline(config: PipelineConfig, workdir: Path) -> dict[str, Any]:
    """The baseline over ``config``'s ack topic, in its own process: rates cold and warm."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_file = write_config(config, workdir / f"{config.name}-baseline.toml")
    err = workdir / f"{config.name}-baseline.err"
    command = [sys.executable, "-m", __name__, str(config_file), str(workdir / "baseline-ckpt")]
    try:
        with err.open("wb") as stderr:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=stderr, timeout=1800)
    finally:
        config_file.unlink(missing_ok=True)  # it holds the connection secrets
    if done.returncode != 0:
        raise PipelineProcessError(f"the JVM baseline exited with {done.returncode}", err)
    lines = done.stdout.decode().strip().splitlines()
    return rates(json.loads(lines[-1]))


def rates(batches: list[dict[str, int]]) -> dict[str, Any]:
    """Acks/s of the batches that read rows: the first (cold) apart from the rest (warm).

    ``batches``: each batch's ``rows`` and ``ms`` (Spark's ``triggerExecution``).
    """
    read = [b for b in batches if b["rows"]]
    cold = read[0] if read else {"rows": 0, "ms": 0}
    warm = {"rows": sum(b["rows"] for b in read[1:]), "ms": sum(b["ms"] for b in read[1:])}
    return {"operator": OPERATOR, **_rate(warm), "cold_first_batch": _rate(cold)}


def _rate(batch: dict[str, int]) -> dict[str, Any]:
    rows, ms = batch["rows"], batch["ms"]
    return {
        "acks": rows,
        "seconds": round(ms / 1000, 3),
        "acks_per_second": round(rows * 1000 / ms) if ms else 0,
    }


def fraction(counter: dict[str, Any], baseline: dict[str, Any]) -> dict[str, float | None]:
    """The counter's rates as fractions of the baseline's, warm and cold."""

    def share(mine: float, theirs: float) -> float | None:
        return round(mine / theirs, 2) if theirs else None

    return {
        "warm": share(counter["acks_per_second"], baseline["acks_per_second"]),
        "cold": share(
            counter["cold_first_batch"]["acks_per_second"],
            baseline["cold_first_batch"]["acks_per_second"],
        ),
    }


def _measure(config: PipelineConfig, checkpoint: str) -> list[dict[str, int]]:
    """Count the ack topic until nothing is left; each batch's rows and milliseconds."""
    from pyspark.sql import functions as F

    from fusion.spark import CHECKPOINT_MANAGER, LOCAL_CHECKPOINT_MANAGER, read_kafka, spark_session

    spark = spark_session(config, app_name=f"{config.name}-jvm-baseline")
    spark.conf.set(CHECKPOINT_MANAGER, LOCAL_CHECKPOINT_MANAGER)
    acks = read_kafka(spark, config, config.acks_topic)
    parsed = acks.select(F.from_json(F.col("value").cast("string"), ACK_SPARK_SCHEMA).alias("a"))
    counted = parsed.groupBy(F.col("a.key")).count()
    query = (
        counted.writeStream.format("noop")
        .outputMode("update")
        .option("checkpointLocation", checkpoint)
        .start()
    )
    query.processAllAvailable()
    query.stop()
    return [
        {"rows": int(p["numInputRows"]), "ms": int(p["durationMs"].get("triggerExecution", 0))}
        for p in query.recentProgress
    ]


def main(argv: list[str]) -> None:
    config_file, checkpoint = argv
    batches = _measure(PipelineConfig.load(config_file), checkpoint)
    print(json.dumps(batches))


if __name__ == "__main__":
    main(sys.argv[1:])
