"""Bulk item outcomes: the record's fault (dead letter) or the deployment's (stop)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta
from elasticsearch import ApiError

from fusion.elastic.bulk import Target, WriteResult, _settle, write_documents
from fusion.elastic.errors import IndexAccessError, IndexGoneError
from fusion.elastic.retry import mget_docs

TARGET = Target("p-billing", "indexer", "billing", 100)


@dataclass(frozen=True)
class Doc:
    key: str = "K1"
    source: dict[str, Any] = field(default_factory=dict)
    where: tuple[str, int, int] = ("billing", 0, 3)
    original: bytes = b"{}"
    version: int | None = None


def _settle_failure(status: int, error: dict[str, str]) -> WriteResult:
    record = Doc()
    result = WriteResult()
    item = {"index": {"_index": TARGET.index, "status": status, "error": error}}
    _settle(TARGET, record, False, item, {record.key: record}, result)
    return result


def test_a_mapping_conflict_is_the_records_fault() -> None:
    result = _settle_failure(400, {"type": "document_parsing_exception", "reason": "bad date"})

    assert len(result.dead) == 1 and "bad date" in result.dead[0].reason


@pytest.mark.parametrize("status", [401, 403])
def test_a_missing_privilege_stops_with_the_index_and_dead_letters_nothing(status: int) -> None:
    error = {"type": "security_exception", "reason": "action [indices:data/write] is unauthorized"}

    with pytest.raises(IndexAccessError) as raised:
        _settle_failure(status, error)

    assert "p-billing" in str(raised.value) and "unauthorized" in str(raised.value)
    assert raised.value.exit_code == 4


def test_an_index_that_is_gone_stops_with_its_name() -> None:
    error = {"type": "index_not_found_exception", "reason": "no such index [p-billing]"}

    with pytest.raises(IndexGoneError) as raised:
        _settle_failure(404, error)

    assert "index p-billing does not exist" in str(raised.value)


def test_mget_of_a_missing_index_is_fatal_not_a_recovering_shard() -> None:
    gone = {"type": "index_not_found_exception", "reason": "no such index [p-lab]"}
    response = {"docs": [{"_index": "p-lab", "_id": "K1", "error": gone}]}

    with pytest.raises(IndexGoneError) as raised:
        mget_docs(response)

    assert "index p-lab does not exist" in str(raised.value)


class _Bulk:
    """A ``_bulk`` endpoint: reads the NDJSON body as Elasticsearch does, refuses key "bad"."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.bodies: list[list[Any]] = []
        self.refuse = refuse

    def bulk(self, *, operations: bytes, refresh: str) -> dict[str, Any]:
        assert refresh == "wait_for" and operations.endswith(b"\n")
        lines = [json.loads(line) for line in operations.splitlines()]
        self.bodies.append(lines)
        if self.refuse is not None:
            raise self.refuse
        items, at = [], 0
        while at < len(lines):
            ((op, meta),) = lines[at].items()
            at += 1 if op == "delete" else 2
            status = 400 if meta["_id"] == "bad" else 201
            items.append({op: {"_id": meta["_id"], "status": status, "_version": 7}})
        return {"items": items}


def test_a_bulk_body_holds_each_action_and_its_source_as_they_were_in_chunks() -> None:
    docs = [Doc(key=k, source={"n": 2**70}, version=5) for k in ("a", "bad", "c")]
    es = _Bulk()

    result = write_documents(es, Target("p-billing", "indexer", "billing", 2), docs)  # type: ignore[arg-type]

    assert [len(b) for b in es.bodies] == [4, 2]  # two actions a request, each with its source
    assert es.bodies[0][:2] == [
        {
            "index": {
                "_index": "p-billing",
                "_id": "a",
                "version": 5,
                "version_type": "external_gte",
            }
        },
        {"n": 2**70},
    ]
    assert [c.record.key for c in result.confirmed] == ["a", "c"]
    assert [d.key for d in result.dead] == ["bad"] and result.requests == 2


def test_a_bulk_request_refused_whole_fails_each_of_its_actions() -> None:
    too_large = ApiError("request too large", ApiResponseMeta(413, "1.1", {}, 0.1, None), {})  # type: ignore[arg-type]
    es = _Bulk(refuse=too_large)

    result = write_documents(es, TARGET, [Doc(key="a"), Doc(key="b")])  # type: ignore[arg-type]

    assert [d.key for d in result.dead] == ["a", "b"]
    assert all("413" in d.reason or "too large" in d.reason for d in result.dead)
