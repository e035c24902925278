"""Bulk-write keyed documents with ``refresh=wait_for`` and sort every item's outcome.

The indexers write source documents and the enricher writes enriched ones
through this one module. Each item ends in exactly one of these places:

- **confirmed**: Elasticsearch indexed it and, because of ``refresh=wait_for``,
  it is searchable (the indexer acks it);
- **dead**: Elasticsearch rejected it for good (a mapping conflict, a malformed
  document): it goes to the dead-letter topic with Elasticsearch's reason;
- **stopped**: a refusal that is the deployment's, not the record's (401/403: no
  privilege; 404: the index is gone): :class:`IndexAccessError` or
  :class:`IndexGoneError` stops the query and nothing is dead-lettered;
- **stale**: the document carries an external version and Elasticsearch
  already holds a newer one (a replay of older data), or it is to be created
  and is there already: nothing to write, no ack;
- **retried**: a 429, a 5xx or a connection failure; the items still pending
  are sent again with exponential backoff (:mod:`fusion.elastic.retry`), and if the
  budget runs out :class:`IndexingError` fails the micro-batch, which Spark
  replays from its checkpoint.

Replays are safe: ``_id`` is the join key, and with a version the write is
``version_type=external_gte``, so the same version rewrites the same content
and an older one can never overwrite a newer document.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from elasticsearch import ApiError, Elasticsearch

from fusion.core import DeadLetter, Stage, codec
from fusion.elastic.errors import (
    IndexAccessError,
    IndexBlockedError,
    IndexGoneError,
    IndexingError,
    RetryBudgetExceeded,
)
from fusion.elastic.retry import (
    INDEX_GONE,
    TRANSIENT_STATUS,
    RetryPolicy,
    Transient,
    call_with_retries,
)
from fusion.observe import Metrics

VERSION_CONFLICT = 409
NOT_FOUND = 404
ACCESS_DENIED = frozenset({401, 403})
# A block on the index (write, read-only, flood stage): 403 too, but no privilege is missing.
BLOCKED = "cluster_block_exception"


class Document(Protocol):
    """A document to write under ``_id`` = ``key``, and the Kafka record it came from."""

    @property
    def key(self) -> str: ...
    @property
    def source(self) -> dict[str, Any] | bytes:
        """The document's ``_source``: a dict, or its JSON when the caller serialized it already."""
        ...

    @property
    def where(self) -> tuple[str, int, int]: ...
    @property
    def original(self) -> bytes: ...
    @property
    def version(self) -> int | None:
        """External version (newer data, higher number), or None for last-write-wins."""
        ...


D = TypeVar("D", bound=Document)


@dataclass(frozen=True)
class Confirmed(Generic[D]):
    """A document Elasticsearch indexed, with the coordinates the ack carries."""

    record: D
    index: str
    seq_no: int
    primary_term: int
    version: int


@dataclass
class WriteResult(Generic[D]):
    confirmed: list[Confirmed[D]] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    stale: list[D] = field(default_factory=list)
    requests: int = 0


@dataclass(frozen=True)
class Target:
    """Where documents go, and how failures are attributed in dead letters."""

    index: str
    stage: Stage
    source: str | None
    chunk_size: int
    # Source documents must be searchable before they are acked; enriched ones
    # need not wait for a refresh to count as written.
    wait_for_refresh: bool = True


def write_documents(
    es: Elasticsearch,
    target: Target,
    records: Iterable[D],
    retry: RetryPolicy | None = None,
    metrics: Metrics | None = None,
) -> WriteResult[D]:
    """Index ``records`` into ``target.index``; see the module docstring for the outcomes."""
    pending: dict[str, D] = {record.key: record for record in records}
    result: WriteResult[D] = WriteResult()

    def one_pass() -> None:
        _send(es, target, pending, result)

    try:
        call_with_retries(
            one_pass, f"bulk write to {target.index}", retry or RetryPolicy(), metrics
        )
    except RetryBudgetExceeded as exc:
        raise IndexingError(target.index, len(pending), exc.detail) from None
    return result


def _send(es: Elasticsearch, target: Target, pending: dict[str, D], result: WriteResult[D]) -> None:
    """One pass over ``pending``: settle what can be settled, raise Transient for the rest."""
    if not pending:
        return
    last_error = ""
    refresh = "wait_for" if target.wait_for_refresh else "false"
    for chunk in _chunks(target.index, list(pending.values()), target.chunk_size):
        result.requests += 1
        # A broken connection raises out of here; call_with_retries retries it, and the
        # items settled before it stay settled (they left ``pending``).
        for record, (ok, item) in zip(chunk.records, _outcomes(es, chunk, refresh), strict=True):
            last_error = _settle(target, record, ok, item, pending, result) or last_error
    if pending:
        raise Transient(last_error)


# A bulk request's body at the most (Elasticsearch's http.max_content_length: 100 MB).
MAX_CHUNK_BYTES = 50 * 1024 * 1024


@dataclass
class _Chunk(Generic[D]):
    records: list[D] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    size: int = 0


def _chunks(index: str, records: list[D], chunk_size: int) -> Iterator[_Chunk[D]]:
    """The records' bulk requests: ``chunk_size`` actions or :data:`MAX_CHUNK_BYTES` each.

    The body is written here, not by the client's ``streaming_bulk``: each action line is
    one small dict to serialize, and the sources are bytes already (a tenth of the Python
    worker's time went to the helper's chunking and serializing, docs/benchmark.md).
    """
    chunk: _Chunk[D] = _Chunk()
    for record, (action, source) in zip(records, bulk_actions(index, records), strict=True):
        lines = [codec.dumps(action), b"\n"]
        if source is not None:
            lines += [source if isinstance(source, bytes) else codec.dumps(source), b"\n"]
        size = sum(len(line) for line in lines)
        if chunk.records and (
            len(chunk.records) >= chunk_size or chunk.size + size > MAX_CHUNK_BYTES
        ):
            yield chunk
            chunk = _Chunk()
        chunk.records.append(record)
        chunk.lines += lines
        chunk.size += size
    if chunk.records:
        yield chunk


def _outcomes(
    es: Elasticsearch, chunk: _Chunk[D], refresh: str
) -> list[tuple[bool, dict[str, Any]]]:
    """Each action's outcome: whether it was done, and its item of the answer. A refusal of
    the whole request (an ApiError: 413, 429, a 5xx) is every action's."""
    body = b"".join(chunk.lines)  # the client sends bytes as they are
    try:
        answer = es.bulk(operations=body, refresh=refresh)  # type: ignore[arg-type]
    except ApiError as exc:
        failed = {"error": str(exc), "status": exc.status_code, "exception": exc}
        return [(False, failed)] * len(chunk.records)
    items: list[dict[str, Any]] = answer["items"]
    return [(200 <= next(iter(item.values())).get("status", 500) < 300, item) for item in items]


def _settle(
    target: Target,
    record: D,
    ok: bool,
    item: dict[str, Any],
    pending: dict[str, D],
    result: WriteResult[D],
) -> str:
    """File one item's outcome; return the error text of a transient failure, else ''."""
    outcome: dict[str, Any] = item.get("index") or item.get("delete") or item
    status = outcome.get("status")
    if _deleting(record) and outcome.get("result") == "not_found":
        ok = True  # nothing to delete: the document is gone as asked
    if not ok and (not isinstance(status, int) or status in TRANSIENT_STATUS):
        return f"status {status}: {_reason(outcome)}"
    if not ok:
        _raise_if_deployment(target.index, status, outcome)
    del pending[record.key]
    if ok:
        result.confirmed.append(
            Confirmed(
                record,
                outcome.get("_index", target.index),
                outcome.get("_seq_no", -1),
                outcome.get("_primary_term", 1),
                outcome.get("_version", record.version or 0),
            )
        )
    elif status == VERSION_CONFLICT and (record.version is not None or _creating(record)):
        result.stale.append(record)
    else:
        result.dead.append(
            DeadLetter.of(
                f"rejected by Elasticsearch: {_reason(outcome)}",
                target.stage,
                target.source,
                record.where,
                record.original,
                record.key,
            )
        )
    return ""


def _raise_if_deployment(index: str, status: int | None, outcome: dict[str, Any]) -> None:
    """Stop on a refusal that every record would meet: no privilege, no index.

    Dead-lettering these would empty the whole stream into the dead-letter
    topic for one deployment mistake.
    """
    error = outcome.get("error")
    if isinstance(error, dict) and error.get("type") == BLOCKED:
        raise IndexBlockedError(index, str(error.get("reason", "")))
    if status is not None and status in ACCESS_DENIED:
        raise IndexAccessError(index, status, _reason(outcome))
    if status == NOT_FOUND or (isinstance(error, dict) and error.get("type") == INDEX_GONE):
        raise IndexGoneError(index, _reason(outcome))


def _reason(outcome: dict[str, Any]) -> str:
    error = outcome.get("error") or outcome.get("exception") or "unknown error"
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('reason', '')}".strip()
    return str(error)


def bulk_actions(
    index: str, records: Iterable[Document]
) -> Iterator[tuple[dict[str, Any], dict[str, Any] | bytes | None]]:
    """One bulk action per record, ``_id`` = key, and its source; the record is not modified.

    An ``index`` action, or a ``delete`` (no source) for a record that asks for one (its
    ``delete`` is true: an enriched document whose sources were deleted).
    """
    for record in records:
        meta: dict[str, Any] = {"_index": index, "_id": record.key}
        op = "delete" if _deleting(record) else "index"
        source = None if op == "delete" else record.source
        if _creating(record):
            op = "create"  # Elasticsearch's own version: above a deleted one's
        elif record.version is not None:
            meta |= {"version": record.version, "version_type": "external_gte"}
        yield {op: meta}, source


def _creating(record: Any) -> bool:
    """Whether the record is written only if its document is not there (an enriched document
    whose version only the counter knows, written where none is: ``EnrichedDoc.create``)."""
    return bool(getattr(record, "create", False))


def _deleting(record: Any) -> bool:
    return bool(getattr(record, "delete", False))
