"""The counter's rows, in and out: Python's one definition.

The JVM's is ``fusion.contract.CounterRows`` (``fusion/jvm/src/fusion/contract/``);
``tests/unit/counter/test_rows.py`` holds the two to each other. Both engines
read :data:`INPUT_COLUMNS` and emit :data:`OUTPUT_SCHEMA`, so the rest of the
pipeline does not know which one ran.
"""

from __future__ import annotations

# What the counter reads, in this order; ``kind`` is "ack", or "count" for the
# indexer's counts passing through a single query's counter (rows of COUNTS_KEY).
INPUT_COLUMNS = (
    "k",
    "source",
    "acked_at",
    "version",
    "digest",
    "raw",
    "topic",
    "partition",
    "offset",
    "kind",
)
INPUT_SCHEMA = (
    "k STRING, source STRING, acked_at STRING, version BIGINT, digest STRING, raw STRING, "
    "topic STRING, partition INT, offset BIGINT, kind STRING"
)

# What it emits, one row per event.
OUTPUT_COLUMNS = ("kind", "key", "event", "reason", "raw", "topic", "partition", "offset")
OUTPUT_SCHEMA = (
    "kind STRING, key STRING, event STRING, reason STRING, raw STRING, topic STRING, "
    "partition INT, offset BIGINT"
)

# The key of rows that carry counts, not acks: no join key can be it, since
# Fusion refuses keys with control characters (indexers/records.py).
COUNTS_KEY = "\u0000counts"
