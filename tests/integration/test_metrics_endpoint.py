"""`fusion run --metrics-port`: Prometheus scrapes a real run, and its counts are the run's."""

from __future__ import annotations

import threading
import time
import urllib.error
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusion import pipeline
from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import MetricsSettings, Settings
from fusion.counter import state as counter_state
from fusion.kafka import topics as kafka_topics
from fusion.observe.metrics import Metrics
from fusion.topology import topology_of
from tests.integration.pipelines import Samples, drop, make_config, read_topic, scrape


@pytest.fixture
def config(settings: Settings, tmp_path: Path) -> Iterator[PipelineConfig]:
    made = make_config(settings, tmp_path, ["a", "b", "c"])
    yield made.model_copy(update={"metrics": MetricsSettings(port=0)})  # any free port
    drop(made)


def test_a_scrape_during_a_real_run_shows_the_runs_counts(
    spark: Any, settings: Settings, config: PipelineConfig
) -> None:
    data = build_dataset(config, GenOptions(keys=80, seed=3, duplicate_rate=0.1, missing_rate=0.1))
    kafka_topics.ensure_topics(config)
    malformed = (config.topic_of(config.source("a")), "bad", b"{not json")
    produce(config, [*data.records, malformed])
    metrics, said, stop = Metrics(), list[str](), threading.Event()
    hooks = pipeline.Hooks(done=lambda _: stop.is_set(), say=said.append)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            pipeline.execute(config, topology_of(config).select(), metrics, None, hooks)
        except BaseException as exc:  # handed to the test thread
            failure.append(exc)

    runner = threading.Thread(target=run, name="fusion-run")
    runner.start()
    try:
        url = _wait(lambda: next((s.split(" at ")[1] for s in said if "Prometheus" in s), None))
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        want = len(data.expected)

        def settled() -> Samples | None:
            assert runner.is_alive(), failure
            samples = scrape(url)
            lag = [v for (name, _), v in samples.items() if name == "fusion_consumer_lag_records"]
            # One lag series per query: the default layout runs one.
            done = samples[("fusion_keys_fired_total", ())] == want and len(lag) == 1
            enriched = samples[("fusion_enriched_documents_total", (("kind", "complete"),))]
            return samples if done and enriched == want and not any(lag) else None

        samples = _wait(settled, timeout=180)
        assert runner.is_alive()  # scraped during the run
    finally:
        stop.set()
        runner.join(timeout=180)
    assert not failure, failure
    result = pipeline.summary(metrics)

    assert (
        samples[("fusion_enriched_documents_total", (("kind", "complete"),))]
        == result["enriched"]
        == len(data.expected)
    )
    assert samples[("fusion_keys_fired_total", ())] == result["fired"]
    assert samples[("fusion_keys_pending", ())] == result["pending_keys"]
    assert result["pending_keys"] == len(data.missing)
    assert samples[("fusion_dead_letters_total", (("query", "indexer-a"),))] == 1
    assert (
        sum(v for (n, _), v in samples.items() if n == "fusion_dead_letters_total")
        == result["dead_letters"]
    )
    # Against what the topics hold, not against the counts the endpoint was built from.
    ready = read_topic(settings, config.ready_topic)
    assert samples[("fusion_keys_fired_total", ())] == len(ready)
    acks = Counter(ack["source"] for _, ack in read_topic(settings, config.acks_topic))
    produced = Counter(topic for topic, _, _ in [*data.records, malformed])
    for source in config.source_names:
        labels = (("source", source),)
        # Every confirmed document is acked; duplicates within a task's batch are one write.
        assert samples[("fusion_acks_total", labels)] == acks[source] > 0
        assert samples[("fusion_indexed_documents_total", labels)] == acks[source]
        read = samples[("fusion_source_records_total", labels)]
        assert read == produced[config.topic_of(config.source(source))]
    lookups = samples[("fusion_es_requests_total", (("kind", "mget"), ("stage", "enricher")))]
    assert lookups == result["es_requests"] > 0
    assert samples[("fusion_enrichment_latency_seconds_count", ())] == len(data.expected)
    assert samples[("fusion_enrichment_latency_seconds_sum", ())] > 0
    assert samples[("fusion_server_up", (("server", "kafka"),))] == 1
    # `fusion status` counts the same pending keys in the counter's state, by what they miss.
    state = counter_state.summary(spark, config)
    keys = len(data.expected) + len(data.missing)
    assert (state.keys, state.pending) == (keys, len(data.missing))
    missing = Counter(name for names in data.missing.values() for name in names)
    assert state.pending_by_missing == dict(missing) and missing
    with pytest.raises(urllib.error.URLError):
        scrape(url)  # the endpoint ends with the run


def _wait(probe: Any, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while (found := probe()) is None:
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)
    return found
