"""Bulk writes against the real node through a client that injects 429s (no mocks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from elastic_transport import ObjectApiResponse
from elasticsearch import Elasticsearch

from fusion.core.settings import ElasticsearchSettings, Settings
from fusion.elastic.bulk import Target, write_documents
from fusion.elastic.errors import IndexingError
from fusion.elastic.retry import RetryPolicy
from fusion.infra.process import free_port
from fusion.observe.metrics import Metrics
from indexers.records import RawRecord, SourceRecord, parse

FAST = RetryPolicy(attempts=4, initial=0.01, maximum=0.05)


def failing_bulk_client(settings: Settings, fail_times: int) -> Any:
    """A client whose first ``fail_times`` bulk requests get a 429 for every item.

    A subclass per call: elasticsearch-py clones the client (``options()``)
    with the class alone, so the failure budget lives on the class.
    """

    class FailingBulkClient(Elasticsearch):
        bulk_calls = 0

        def bulk(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            FailingBulkClient.bulk_calls += 1
            if FailingBulkClient.bulk_calls <= fail_times:
                count = len(kwargs["operations"]) // 2
                error = {"type": "es_rejected_execution_exception", "reason": "queue full"}
                items = [{"index": {"status": 429, "error": error}} for _ in range(count)]
                body = {"errors": True, "took": 1, "items": items}
                # A real response envelope (status, headers) from the node, with our body.
                return ObjectApiResponse(body=body, meta=self.cluster.health().meta)
            return super().bulk(*args, **kwargs)

    return FailingBulkClient(**settings.elasticsearch.as_client_options())


def _records(n: int) -> list[SourceRecord]:
    records = []
    for i in range(n):
        parsed = parse(RawRecord(b'{"id": "k%d"}' % i, "t", 0, i), "s", "id", 1000)
        assert isinstance(parsed, SourceRecord)
        records.append(parsed)
    return records


def test_transient_rejections_are_retried_until_indexed(
    settings: Settings, make_index: Callable[[str], str]
) -> None:
    es = failing_bulk_client(settings, 2)
    target = Target(make_index("retry"), "indexer", "s", chunk_size=100)

    result = write_documents(es, target, _records(10), FAST)

    assert len(result.confirmed) == 10 and result.dead == []
    assert es.bulk_calls == 3
    assert es.count(index=target.index)["count"] == 10


def test_exhausted_retry_budget_fails_the_batch_with_a_clear_error(
    settings: Settings, make_index: Callable[[str], str]
) -> None:
    es = failing_bulk_client(settings, 100)
    target = Target(make_index("retry"), "indexer", "s", chunk_size=100)

    with pytest.raises(IndexingError) as caught:
        write_documents(es, target, _records(3), FAST)

    assert caught.value.pending == 3
    assert "status 429" in str(caught.value) and "still failing after all retries" in str(
        caught.value
    )
    assert es.bulk_calls == FAST.attempts


def test_an_unreachable_node_is_retried_and_then_fails_the_batch_naming_the_cause(
    make_index: Callable[[str], str],
) -> None:
    nobody = ElasticsearchSettings(url=f"http://127.0.0.1:{free_port()}")
    es = Elasticsearch(**nobody.as_client_options())
    target = Target(make_index("down"), "indexer", "s", chunk_size=100)
    metrics = Metrics()

    with pytest.raises(IndexingError) as caught:
        write_documents(
            es, target, _records(2), RetryPolicy(initial=0.01, budget_seconds=1), metrics
        )

    assert "ConnectionError" in str(caught.value)
    assert metrics.get("es.retries") >= 2
    # The status line shows the outage while it lasts.
    assert "Elasticsearch unavailable" in metrics.alerts()["elasticsearch"]
