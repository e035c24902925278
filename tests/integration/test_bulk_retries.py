"""Bulk writes to a node nobody runs: retried, then the batch fails naming the cause.

Real 429s from a real node: tests/integration/test_backpressure.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from elasticsearch import Elasticsearch

from fusion.core.machine.ports import free_port
from fusion.core.settings import ElasticsearchSettings
from fusion.elastic.bulk import Target, write_documents
from fusion.elastic.errors import IndexingError
from fusion.elastic.retry import RetryPolicy
from fusion.observe.metrics import Metrics
from tests.integration.pipelines import parsed_records


def test_an_unreachable_node_is_retried_and_then_fails_the_batch_naming_the_cause(
    make_index: Callable[[str], str],
) -> None:
    nobody = ElasticsearchSettings(url=f"http://127.0.0.1:{free_port()}")
    es = Elasticsearch(**nobody.as_client_options())
    target = Target(make_index("down"), "indexer", "s", chunk_size=100)
    metrics = Metrics()

    with pytest.raises(IndexingError) as caught:
        write_documents(
            es, target, parsed_records(2), RetryPolicy(initial=0.01, budget_seconds=1), metrics
        )

    assert "ConnectionError" in str(caught.value)
    assert metrics.get("es.retries") >= 2
    # The status line shows the outage while it lasts.
    assert "Elasticsearch unavailable" in metrics.alerts()["elasticsearch"]
