"""Elasticsearch answering 429: retried, nothing lost, and shown while it lasts.

A node of its own, started for this file with a write thread pool of one
thread and a queue of one: while the test floods it with bulk requests of its
own, the node really rejects writes (``es_rejected_execution_exception``), the
pipeline's included. No client that invents them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.machine.ports import free_port
from fusion.core.settings import ElasticsearchSettings, Settings
from fusion.elastic import client as es_client
from fusion.elastic.bulk import Target, write_documents
from fusion.elastic.errors import IndexingError
from fusion.elastic.retry import RetryPolicy
from fusion.infra.elasticsearch import ElasticsearchPorts, LocalElasticsearch
from fusion.infra.java import elasticsearch_java_home
from fusion.infra.runtime import LocalRuntime
from fusion.kafka import topics as kafka_topics
from fusion.observe.figures import Figures
from fusion.observe.metrics import Metrics
from fusion.observe.names import ES_BACKPRESSURE_ALERT, ES_REJECTED, ES_RETRIES
from fusion.ops import status
from fusion.ops.prometheus import MetricsServer, PipelineCollector
from tests.integration.conftest import ES_VERSION_ENV, server_jvm_options
from tests.integration.pipelines import (
    RunningPipeline,
    assert_exact_join,
    drop,
    make_config,
    parsed_records,
    scrape,
)

TINY_QUEUE = {"thread_pool.write.size": "1", "thread_pool.write.queue_size": "1"}


@pytest.fixture(scope="module")
def crowded(settings: Settings) -> Iterator[ElasticsearchSettings]:
    """A node that rejects writes as soon as two wait: one write thread, a queue of one."""
    home = settings.runtime.home
    state_dir = Path(tempfile.mkdtemp(prefix="test-crowded-", dir=home))
    runtime = LocalRuntime(home, state_dir=state_dir, es_version=os.environ.get(ES_VERSION_ENV))
    node = LocalElasticsearch(
        runtime.cache.elasticsearch_home(),
        state_dir,
        "384m",
        elasticsearch_java_home(runtime.es_version),
        node_settings=TINY_QUEUE,
        jvm_options=server_jvm_options(),
    )
    port = free_port()
    node.start(ElasticsearchPorts(port, free_port()))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while not node.healthy(url):
            assert time.monotonic() < deadline, "the crowded node did not start"
            time.sleep(0.5)
        yield ElasticsearchSettings(url=url)
    finally:
        node.process.stop()
        shutil.rmtree(state_dir, ignore_errors=True)


class Flood:
    """Threads writing bulk requests of their own to the node until stopped."""

    def __init__(self, es: Elasticsearch, index: str, threads: int = 6) -> None:
        self.es, self.index = es, index
        self.stop = threading.Event()
        self.workers = [threading.Thread(target=self._write, daemon=True) for _ in range(threads)]

    def _write(self) -> None:
        body = [line for n in range(200) for line in ({"index": {}}, {"n": n})]
        while not self.stop.is_set():
            try:
                self.es.options(ignore_status=429).bulk(index=self.index, operations=body)
            except Exception:
                time.sleep(0.05)  # the node answered badly under the flood: go on flooding

    def __enter__(self) -> Flood:
        for worker in self.workers:
            worker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for worker in self.workers:
            worker.join(timeout=30)


def test_real_rejections_are_retried_until_every_document_is_indexed(
    crowded: ElasticsearchSettings, make_index: Callable[[str], str]
) -> None:
    es = es_client.connect(crowded)
    target = Target(make_index("retry"), "indexer", "s", chunk_size=50)
    rejected_before = es_client.rejected(es)
    metrics = Metrics()
    policy = RetryPolicy(initial=0.05, maximum=0.5, budget_seconds=120)
    with Flood(es, make_index("flood")):
        for n in range(8):
            result = write_documents(es, target, parsed_records(50, n * 50), policy, metrics)
            assert len(result.confirmed) == 50 and result.dead == []
    es.indices.refresh(index=target.index)
    assert es.count(index=target.index)["count"] == 400
    assert es_client.rejected(es) > rejected_before, "the node rejected nothing: no 429 met"
    assert metrics.get(ES_RETRIES) > 0, "no write of ours was rejected and retried"


def test_a_rejection_past_the_budget_fails_the_batch_naming_the_429(
    crowded: ElasticsearchSettings, make_index: Callable[[str], str]
) -> None:
    es = es_client.connect(crowded)
    target = Target(make_index("retry"), "indexer", "s", chunk_size=50)
    once = RetryPolicy(attempts=1)  # no retry: the first rejection is past the budget
    with Flood(es, make_index("flood")), pytest.raises(IndexingError) as caught:
        for n in range(400):  # until the node rejects one of ours
            write_documents(es, target, parsed_records(50, n * 50), once)
    assert "status 429" in str(caught.value) or "429" in str(caught.value), caught.value
    assert "still failing after all retries" in str(caught.value)


def test_a_storm_of_429s_shows_on_the_status_line_status_and_prometheus_and_loses_nothing(
    spark: Any,
    settings: Settings,
    crowded: ElasticsearchSettings,
    tmp_path: Path,
    make_index: Callable[[str], str],
) -> None:
    on_crowded = settings.model_copy(update={"elasticsearch": crowded})
    config = make_config(on_crowded, tmp_path, ["a", "b"], retry_budget_seconds=600)
    kafka_topics.ensure_topics(config)
    es = es_client.connect(crowded)
    expected: dict[str, dict[str, Any]] = {}

    def wave(number: int, keys: int) -> None:
        options = GenOptions(keys=keys, seed=9 + number, missing_rate=0.0, key_prefix=f"W{number}")
        data = build_dataset(config, options)
        produce(config, data.records)
        expected.update(data.expected)

    seen: dict[str, Any] = {}
    try:
        with RunningPipeline(spark, config) as run:
            # The endpoint `fusion run --metrics-port` serves, over this run's metrics.
            collector = PipelineCollector(config, ["single"], run.metrics, dict)
            with MetricsServer(collector, "127.0.0.1", 0) as server:
                with Flood(es, make_index("flood")):
                    wave(0, 400)

                    def shown() -> bool:
                        alerts = run.metrics.alerts()
                        if ES_BACKPRESSURE_ALERT in alerts:
                            counts = run.metrics.counts()
                            seen["line"] = Figures(counts).status_line(alerts)
                            seen["prometheus"] = scrape(server.url)
                            looked = status.gather(None, config)
                            seen["status"] = status.render(status.build(config, looked))
                        return bool(seen) and "[alert] Elasticsearch" in seen["status"]

                    run.wait_for(shown, 120, "the back-pressure alert, also in fusion status")
                    # The flood's own 429s raise the alert; the pipeline may have written
                    # between them. More waves, while the flood lasts, until one of the
                    # pipeline's requests was rejected and retried.
                    for number in range(1, 30):
                        if run.metrics.get(ES_RETRIES) > 0:
                            break
                        wave(number, 100)
                        run.wait_for(
                            lambda: (
                                run.metrics.get(ES_RETRIES) > 0
                                or run.metrics.get("enricher.enriched") >= len(expected)
                            ),
                            120,
                            "the wave written or one of its requests retried",
                        )
                run.wait_for(
                    lambda: run.metrics.get("enricher.enriched") >= len(expected),
                    300,
                    "every key enriched after the storm",
                )
                after = scrape(server.url)
            counts = run.metrics.counts()
        assert seen["line"].startswith("[Elasticsearch rejecting requests (429"), seen["line"]
        assert seen["prometheus"][("fusion_es_backpressure_active", ())] == 1
        assert "[alert] Elasticsearch rejecting requests now (429" in seen["status"]
        assert counts.get(ES_REJECTED, 0) > 0
        # The pipeline's own requests were rejected and retried (the node is up and answers
        # every other request: a retry here is a 429), not only the flood's.
        assert counts.get(ES_RETRIES, 0) > 0, "no request of the pipeline was retried"
        assert after[("fusion_es_retries_total", ())] > 0  # and the endpoint says so
        assert_exact_join(on_crowded, config, expected)
    finally:
        drop(config)
