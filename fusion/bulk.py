"""Bulk-write keyed documents with ``refresh=wait_for`` and sort every item's outcome.

The indexers write source documents and the enricher writes enriched ones
through this one module. Each item ends in exactly one of three places:

- **confirmed**: Elasticsearch indexed it and, because of ``refresh=wait_for``,
  it is searchable (the indexer acks it);
- **dead**: Elasticsearch rejected it for good (a mapping conflict, a malformed
  document): it goes to the dead-letter topic with Elasticsearch's reason;
- **retried**: a 429, a 5xx or a connection failure; the items still pending
  are sent again with exponential backoff, and if the retry budget runs out
  :class:`IndexingError` fails the micro-batch, which Spark replays from its
  checkpoint (the writes are idempotent: ``_id`` = join key).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from elasticsearch import Elasticsearch, helpers
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt
from tenacity import wait_random_exponential as backoff

from fusion.errors import FusionError
from fusion.events import DeadLetter, Stage

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class IndexingError(FusionError):
    """Elasticsearch kept failing transiently until the retry budget ran out."""

    def __init__(self, index: str, pending: int, detail: str) -> None:
        self.index = index
        self.pending = pending
        super().__init__(
            f"{pending} document(s) for {index} still failing after all retries ({detail}); "
            "the query stops and resumes from its checkpoint on restart"
        )


class Document(Protocol):
    """A document to write under ``_id`` = ``key``, and the Kafka record it came from."""

    @property
    def key(self) -> str: ...
    @property
    def doc(self) -> dict[str, Any]: ...
    @property
    def where(self) -> tuple[str, int, int]: ...
    @property
    def original(self) -> bytes: ...


class _Pending(Exception):
    """Some items failed transiently: retry them."""


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 8
    initial: float = 0.5
    maximum: float = 30.0


@dataclass(frozen=True)
class Confirmed:
    """A document Elasticsearch indexed, with the coordinates the ack carries."""

    record: Document
    index: str
    seq_no: int
    primary_term: int
    version: int


@dataclass
class WriteResult:
    confirmed: list[Confirmed] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
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
    records: Iterable[Document],
    retry: RetryPolicy | None = None,
) -> WriteResult:
    """Index ``records`` into ``target.index``; see the module docstring for the outcomes."""
    retry = retry or RetryPolicy()
    pending: dict[str, Document] = {record.key: record for record in records}
    result = WriteResult()
    last_error = ""
    try:
        for attempt in Retrying(
            stop=stop_after_attempt(retry.attempts),
            wait=backoff(multiplier=retry.initial, max=retry.maximum),
            retry=retry_if_exception_type(_Pending),
            reraise=False,
        ):
            with attempt:
                last_error = _send(es, target, pending, result)
                if pending:
                    raise _Pending(last_error)
    except RetryError:
        raise IndexingError(target.index, len(pending), last_error) from None
    return result


def _send(
    es: Elasticsearch, target: Target, pending: dict[str, Document], result: WriteResult
) -> str:
    """One pass over ``pending``: settle what can be settled, leave the transient failures."""
    last_error = ""
    records = list(pending.values())
    result.requests += -(-len(records) // target.chunk_size)
    outcomes = helpers.streaming_bulk(
        es,
        bulk_actions(target.index, records),
        chunk_size=target.chunk_size,
        max_chunk_bytes=50 * 1024 * 1024,
        refresh="wait_for" if target.wait_for_refresh else "false",
        raise_on_error=False,
        raise_on_exception=False,
        max_retries=0,
    )
    for record, (ok, item) in zip(records, outcomes, strict=True):
        outcome: dict[str, Any] = item.get("index", item)
        status = outcome.get("status")
        if ok:
            del pending[record.key]
            result.confirmed.append(
                Confirmed(
                    record,
                    outcome["_index"],
                    outcome["_seq_no"],
                    outcome["_primary_term"],
                    outcome["_version"],
                )
            )
        elif isinstance(status, int) and status not in TRANSIENT_STATUS:
            del pending[record.key]
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
        else:
            last_error = f"status {status}: {_reason(outcome)}"
    return last_error


def _reason(outcome: dict[str, Any]) -> str:
    error = outcome.get("error") or outcome.get("exception") or "unknown error"
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('reason', '')}".strip()
    return str(error)


def bulk_actions(index: str, records: Iterable[Document]) -> Iterable[dict[str, Any]]:
    """One bulk ``index`` action per record, ``_id`` = key; the record is not modified."""
    for record in records:
        yield {"_op_type": "index", "_index": index, "_id": record.key, "_source": record.doc}
