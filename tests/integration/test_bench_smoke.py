"""A tiny benchmark of every mode, checked against what the Elasticsearch node really served.

The benchmark's pipelines talk to Elasticsearch through a counting proxy
(:mod:`tests.integration.es_proxy`): the requests Fusion reports per mode
must be the requests the node received, and those must follow the design
(naive K·N·(N-1) GETs, counted K·N GETs, batched a few ``_mget``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from fusion.bench.runs import burst as bench
from fusion.bench.runs import burst_report as report_files
from fusion.core.settings import Settings
from tests.integration.es_proxy import CountingProxy

KEYS, SOURCES = 25, 3


def test_request_counts_are_what_the_node_served(settings: Settings, tmp_path: Path) -> None:
    with CountingProxy(settings.elasticsearch.url) as proxy:
        proxied = settings.model_copy(
            update={"elasticsearch": settings.elasticsearch.model_copy(update={"url": proxy.url})}
        )
        report = bench.run_bench(proxied, bench.BenchOptions(KEYS, SOURCES), workdir=tmp_path)

    modes = {m["mode"]: m for m in report["modes"]}
    for name, mode in modes.items():
        indexes = f"bench-{name}-"
        served = proxy.count("get", indexes) + proxy.count("mget", indexes)
        assert mode["es_requests"] == served, (name, mode["es_requests"], served)
        assert mode["bulk_requests"] == proxy.count("bulk", indexes), name
        if name != "batched":
            assert mode["docs_fetched"] == proxy.count("get", indexes, 200), name
    # The design, on the node's own count:
    assert proxy.count("get", "bench-naive-") == KEYS * SOURCES * (SOURCES - 1)
    # Naive looks a key up after each of its records is indexed: the j-th record finds j-1.
    assert proxy.count("get", "bench-naive-", 200) == KEYS * SOURCES * (SOURCES - 1) // 2
    assert modes["naive"]["wasted_requests"] == KEYS * (SOURCES - 1) ** 2
    assert proxy.count("get", "bench-counted-") == KEYS * SOURCES
    assert proxy.count("mget", "bench-counted-") == 0
    batched = proxy.count("mget", "bench-batched-")
    # One _mget per 1,000 documents of a batch's task, plus, in a worker's first task, one
    # for a first small group (how much a key's documents weigh is not known before it).
    per_batch = math.ceil(KEYS * SOURCES / 1000) + 1
    assert 1 <= batched <= modes["batched"]["counters"]["enricher.batches"] * per_batch
    assert proxy.count("get", "bench-batched-") == 0

    for mode in modes.values():
        assert mode["keys"] == KEYS and mode["latency_count"] == KEYS
        # Latency runs from a key's last record sent to its enriched document: never negative.
        assert 0 < mode["latency_min"] <= mode["latency_p50"] <= mode["latency_p99"]
    for name, engine in (("counter_only", "jvm"), ("counter_only_python", "python")):
        counter = report[name]
        # Two waves of acks (a warm-up, then the measured one): every ack counted, every key
        # fired, on each engine.
        assert counter["engine"] == engine
        assert counter["acks"] + counter["cold_first_batch"]["acks"] == 2 * KEYS * SOURCES
        assert counter["acks"] > 0 and counter["fired"] == KEYS
        # Spark alone counted the same two waves, in its own JVM, cold first batch apart.
        baseline = counter["baseline"]
        assert baseline["acks"] + baseline["cold_first_batch"]["acks"] == 2 * KEYS * SOURCES
        assert baseline["cold_first_batch"]["acks"] > 0 and baseline["acks_per_second"] > 0
        assert counter["of_baseline"]["warm"] > 0

    paths = report_files.write_report(report, tmp_path)

    assert json.loads(paths[0].read_text())["keys"] == KEYS
    assert f"| naive | {KEYS * SOURCES * (SOURCES - 1)} |" in paths[1].read_text()
    assert "counter alone, Python engine:" in paths[1].read_text()
    assert "as a fraction of Spark alone over the same acks" in paths[1].read_text()
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
