"""Source records deleted before the pipeline read them: counted, said, and published.

Spark reads the source topics with ``failOnDataLoss=false`` so that a topic's
retention (or ``deleteRecords``) running ahead of a stopped or lagging
pipeline does not stop it for good. Spark then skips what is gone without a
word. Fusion says it: a micro-batch reads each partition from where the last
one ended (its *start*) to its planned end; if, before the batch's tasks read,
the partition's log already starts past that start, the records in between
can never be read. The driver checks this once per batch (one ``ListOffsets``
request for every source partition) and the batch then

- counts them (``indexer.<source>.lost``, in the stage's marker: ``fusion
  status``, the status line and Prometheus show it per source),
- raises an alert (one line on the status line, until the run ends), and
- publishes one dead letter per partition and batch with the lost offset range
  (reason ``records deleted before they were indexed``), in the transaction
  of the batch's marker: exactly once.

Records deleted after the check and before the tasks read them are not
counted (a window of milliseconds); nothing is counted that was read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from fusion.core import DeadLetter
from fusion.observe import names

Offsets = Mapping[tuple[str, int], int]


@dataclass(frozen=True)
class Lost:
    """Offsets ``[first, end)`` of one partition, gone before the pipeline read them."""

    topic: str
    partition: int
    first: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.first

    def reason(self) -> str:
        return (
            f"records deleted before they were indexed: offsets {self.first} to {self.end - 1} "
            f"({self.count}) of {self.topic}-{self.partition}; retention or deleteRecords ran "
            "ahead of the pipeline"
        )


def lost_ranges(starts: Offsets, ends: Offsets, earliest: Offsets) -> list[Lost]:
    """Each partition whose log starts past the batch's start: what the batch cannot read."""
    lost = []
    for (topic, partition), start in sorted(starts.items()):
        low = earliest.get((topic, partition))
        end = ends.get((topic, partition), start)
        if low is not None and low > start and end > start:
            lost.append(Lost(topic, partition, start, min(low, end)))
    return lost


def earliest_offsets(admin: AdminClient, partitions: Iterable[tuple[str, int]]) -> Offsets:
    """Where each partition's log starts now (one request)."""
    earliest = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    wanted = {TopicPartition(t, p): earliest for t, p in partitions}
    if not wanted:
        return {}
    futures = admin.list_offsets(wanted, request_timeout=30)
    return {(tp.topic, tp.partition): f.result(timeout=60).offset for tp, f in futures.items()}


def counts(lost: list[Lost], source_of: Mapping[str, str]) -> dict[str, int]:
    """The batch's counts: ``indexer.<source>.lost`` and, per partition,
    ``indexer.<source>.lost@<partition>``."""
    out: dict[str, int] = {}
    for item in lost:
        source = source_of[item.topic]
        for counted in (
            names.source_count(source, names.SOURCE_LOST),
            names.lost_in_partition(source, item.partition),
        ):
            out[counted] = out.get(counted, 0) + item.count
    return out


def dead_letters(lost: list[Lost], source_of: Mapping[str, str]) -> list[DeadLetter]:
    """One dead letter per partition: no original to carry, the range in its reason."""
    return [
        DeadLetter.of(
            item.reason(),
            "indexer",
            source_of[item.topic],
            (item.topic, item.partition, item.first),
            None,
        )
        for item in lost
    ]


def alert(lost: list[Lost], total: int) -> str:
    """The status line's alert: the run's total, and where the latest loss was."""
    where = ", ".join(f"{item.topic}-{item.partition}" for item in lost)
    return (
        f"{total:,} source records deleted before they were indexed (latest: {where}); see the DLQ"
    )
