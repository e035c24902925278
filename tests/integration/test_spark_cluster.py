"""The pipeline on a real Spark standalone cluster: two workers do the indexing and enrichment.

`fusion run` submits to ``spark://...`` (a master and two workers started
from the pyspark install, see ``spark_cluster``). The executors run a Python
that has Fusion's dependencies but not Fusion itself: the code reaches them as
the zip `fusion` ships with ``spark.submit.pyFiles``. During the run a task's
Python worker and a whole executor JVM are killed; Spark retries the tasks
elsewhere, and the result must still be the exact join, each key once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core import faults
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.elastic import client as es_client
from fusion.kafka import topics as kafka_topics
from tests.integration.conftest import SparkCluster
from tests.integration.pipelines import assert_exact_join, doc_count, drop, write_config_file

BIN = Path(sys.executable).parent
SOURCES = ["billing", "insurance", "medicine", "treatment"]
# A task's Python worker, then a whole executor JVM (its worker starts a new one).
KILLS = ["indexer.after_bulk", "enricher.after_lookup:jvm"]


def _wait_enriched(config: PipelineConfig, run: subprocess.Popen[str], count: int) -> None:
    es = es_client.connect(config.elasticsearch)
    deadline = time.monotonic() + 400
    while doc_count(es, config.enriched_index) != count:
        if run.poll() is not None:
            raise AssertionError(run.communicate()[1][-3000:])
        assert time.monotonic() < deadline, f"{count} keys not enriched in time"
        time.sleep(1)


def _worker_of(executor: str, cluster: SparkCluster) -> Path | None:
    """The worker whose work directory the executor (host:cwd) ran in."""
    cwd = Path(executor.split(":", 1)[1])
    return next((w for w in cluster.worker_dirs if w in cwd.parents), None)


def test_the_pipeline_runs_on_two_workers_that_get_the_code_shipped(
    settings: Settings, tmp_path: Path, spark_cluster: SparkCluster, executor_python: Path
) -> None:
    clean_env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    cannot = subprocess.run(
        [executor_python, "-c", "import fusion"], cwd="/", env=clean_env, capture_output=True
    )
    assert cannot.returncode != 0, "the executors' Python must not find Fusion by itself"
    deps = "import pyspark, pyarrow, confluent_kafka, elasticsearch, pydantic, tenacity"
    subprocess.run([executor_python, "-c", deps], cwd="/", env=clean_env, check=True)

    # Small micro-batches: the second wave's enrichment spreads over many tasks.
    config_file = write_config_file(
        settings,
        tmp_path / "pipeline.toml",
        SOURCES,
        trigger_interval="500 milliseconds",
        max_offsets_per_trigger=100,
    )
    # Checkpoints as a URI, the way a cluster names shared storage (hdfs://, s3a://, ...).
    text = config_file.read_text()
    config_file.write_text(text.replace('checkpoint_dir = "/', 'checkpoint_dir = "file:///'))
    # The executors' JVMs live a minute, as the drivers the tests start (SPARK_SUBMIT_OPTS,
    # tests/integration/conftest.py): C2's compilations would not pay for themselves.
    with config_file.open("a") as out:
        out.write('[spark.conf]\n"spark.executor.extraJavaOptions" = "-XX:TieredStopAtLevel=1"\n')
    config = PipelineConfig.load(config_file, env={})
    assert config.pipeline.checkpoint_dir and config.pipeline.checkpoint_dir.startswith("file:///")
    data = build_dataset(
        config, GenOptions(keys=200, seed=13, duplicate_rate=0.1, missing_rate=0.1)
    )
    keys = sorted({key for _, key, _ in data.records})
    first = set(keys[: len(keys) // 2])
    kafka_topics.ensure_topics(config)
    produce(config, [r for r in data.records if r[1] in first])
    env = dict(
        os.environ,
        FUSION_HOME=str(settings.runtime.home),
        FUSION_SPARK_MASTER=spark_cluster.master,
        FUSION_SPARK_PYTHON=str(executor_python),
        FUSION_SPARK_SHUFFLE_PARTITIONS="2",
        FUSION_CRASH_AT=",".join(KILLS),
        FUSION_FAULT_DIR=str(tmp_path),
    )
    run = subprocess.Popen(
        [BIN / "fusion", "run", "--config", str(config_file)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # The kills happen in the first wave; the second runs on what the cluster has then.
        _wait_enriched(config, run, len(set(data.expected) & first))
        produce(config, [r for r in data.records if r[1] not in first])
        _wait_enriched(config, run, len(data.expected))
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=120)
        assert run.returncode == 130, err[-3000:]  # stopped by Ctrl-C, as an operator would
        summary: dict[str, Any] = json.loads(out[out.index("{") :])

        for kill in KILLS:
            assert faults.hit(tmp_path, kill.split(":")[0]), kill
        assert_exact_join(settings, config, data.expected)

        # The tasks' own counts, by the executor that ran them: both workers indexed and enriched.
        work: dict[Path, Counter[str]] = {}
        for executor, counts in summary["executors"].items():
            worker = _worker_of(executor, spark_cluster)
            assert worker is not None, f"{executor} ran outside the cluster's workers"
            work.setdefault(worker, Counter()).update(counts)
        assert set(work) == set(spark_cluster.worker_dirs), work
        for worker, counts in work.items():
            indexed = sum(n for name, n in counts.items() if name.endswith(".indexed"))
            assert indexed > 0 and counts["enricher.ready"] > 0, (worker, counts)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
        drop(config)
