"""Bulk item outcomes: the record's fault (dead letter) or the deployment's (stop)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from fusion.elastic.bulk import Target, WriteResult, _settle
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
