"""The counter's Python engine: a PySpark ``StatefulProcessor`` over the decisions.

:mod:`fusion.counter.decisions` decides; this module does Spark's state and timer I/O.

It keeps each key's state in the same value state as the JVM engine
(``fusion/jvm/src/fusion/counter/AckCounter.java``): the same name, the same
schema, the same TTL, so ``fusion status``, ``explain`` and the state reader
read either. It emits the same rows (:data:`fusion.counter.rows.OUTPUT_SCHEMA`), with events
serialized byte for byte as the JVM's (``tests/integration/test_counter_engines.py``
runs both over the same micro-batches and compares).

Why keep it beside the JVM engine: it needs no JDK compiler, and it is the
decisions' specification running as the counter. Why the JVM engine is the
default: every state call here is a round trip to Spark's state server, and
this engine counts several times fewer acks per second (docs/benchmark.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fusion.core import iso_from_ms
from fusion.counter.decisions import (
    AckSeen,
    Decision,
    Now,
    Rules,
    decide,
    on_deadline,
    restored_timer,
    retention_ms,
)
from fusion.counter.key_state import STATE_COLUMNS, STATE_SCHEMA, KeyState
from fusion.counter.rules import parse_via
from fusion.counter.state import STATE_VAR

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

from pyspark.sql import Row
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from fusion.counter.rows import COUNTS_KEY, INPUT_COLUMNS, OUTPUT_COLUMNS, OUTPUT_SCHEMA


def out_row(kind: str, key: str | None, event: str | None = None, **columns: Any) -> Row:
    """One output row; ``columns`` may give any other of :data:`OUTPUT_COLUMNS`."""
    fields = {name: columns.get(name) for name in OUTPUT_COLUMNS}
    return Row(**fields | {"kind": kind, "key": key, "event": event})


def decision_rows(key: str, before: KeyState | None, decision: Decision) -> list[Row]:
    """What a decision emits, in the JVM engine's order (``AckCounter.apply``)."""
    rows: list[Row] = []
    if decision.register_timer is not None:
        rows.append(out_row("timer", key, str(decision.register_timer)))
    if decision.delete_timer is not None:
        rows.append(out_row("untimer", key, str(decision.delete_timer)))
    if decision.new_key:
        rows.append(out_row("new", key))
    after = decision.state
    expired_before = before is not None and before.expired_at is not None and not before.fired
    if expired_before and after is not None and after.fired:
        # Reported incomplete, then fired by a late source: counted once as pending, not twice.
        rows.append(out_row("late", key))
    for event in decision.events:
        kind = getattr(event, "kind", "incomplete")
        rows.append(out_row(kind, key, event.model_dump_json()))
    for ack, reason in decision.rejected:
        where = {"topic": ack.topic, "partition": ack.partition, "offset": ack.offset}
        rows.append(out_row("dead", key, None, reason=reason, raw=ack.raw, **where))
    return rows


def acks_of(rows: Iterable[Any]) -> list[AckSeen]:
    """The input rows of one key as the decisions read acks."""
    return [
        AckSeen(
            source=r.source,
            acked_at=r.acked_at,
            raw=r.raw,
            topic=r.topic,
            partition=r.partition,
            offset=r.offset,
            version=r.version,
            digest=r.digest,
            deleted=bool(r.deleted),
            ref=r.ref,
            ref_version=r.ref_version or 0,
            via=parse_via(r.via),
        )
        for r in rows
    ]


def now_of(timer_values: Any) -> Now:
    # The batch's timestamp, not the wall clock: a replayed batch decides the same.
    ms = int(timer_values.getCurrentProcessingTimeInMs())
    return Now(iso_from_ms(ms), ms)


class AckCounter(StatefulProcessor):
    """Spark's side of the counter in Python: state and timer I/O around the decisions."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules

    def init(self, handle: Any) -> None:
        self.handle = handle
        ttl = self.rules.state_ttl_ms
        # Longer than state_ttl: a key's TTL deadline reports it before Spark drops its state.
        ttl_ms = None if ttl is None else retention_ms(ttl)
        self.state = handle.getValueState(STATE_VAR, STATE_SCHEMA, ttl_ms)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Row]:
        k = key[0]
        if k == COUNTS_KEY:  # the indexer's counts in a single query: no state of theirs
            for r in rows:
                yield out_row(
                    "count",
                    None,
                    count_name=r.count_name,
                    count_value=r.count_value,
                    executor=r.executor,
                )
            return
        before = self._load()
        decision = decide(k, before, acks_of(rows), self.rules, now_of(timerValues))
        yield from self._apply(k, before, decision)

    def handleInitialState(self, key: Any, initialState: Any, timerValues: Any) -> None:
        """A key's rebuilt state (:mod:`fusion.counter.rebuild`), stored with the timer it needs."""
        restored = KeyState.from_row(tuple(initialState[name] for name, _ in STATE_COLUMNS))
        timer = restored_timer(restored, self.rules, now_of(timerValues))
        if timer is not None:
            self.handle.registerTimer(timer)
            restored = replace(restored, deadline_ms=timer)
        self.state.update(restored.to_row())

    def handleExpiredTimer(
        self, key: Any, timerValues: Any, expiredTimerInfo: Any
    ) -> Iterator[Row]:
        k = key[0]
        before = self._load()
        yield from self._apply(k, before, on_deadline(k, before, self.rules, now_of(timerValues)))

    def close(self) -> None:
        pass

    def _load(self) -> KeyState | None:
        if not self.state.exists():
            return None
        return KeyState.from_row(tuple(self.state.get()))

    def _apply(self, key: str, before: KeyState | None, decision: Decision) -> list[Row]:
        if decision.delete_timer is not None:
            self.handle.deleteTimer(decision.delete_timer)
        if decision.register_timer is not None:
            self.handle.registerTimer(decision.register_timer)
        after = decision.state
        if after is not None and after != before:  # only a change: an update restarts the TTL
            self.state.update(after.to_row())
        return decision_rows(key, before, decision)


def count(acks: DataFrame, rules: Rules, initial: DataFrame | None = None) -> DataFrame:
    """The parsed acks grouped by join key into the Python engine's keyed state.

    ``initial``: the keys' rebuilt state (``k`` and the state's columns), for a
    query started without its checkpoint.
    """
    grouped = acks.select(*INPUT_COLUMNS).groupBy("k")
    restored = None if initial is None else initial.groupBy("k")
    return grouped.transformWithState(
        AckCounter(rules), OUTPUT_SCHEMA, "Append", "ProcessingTime", initialState=restored
    )
