"""The counter's rows, in and out: Python's one definition.

The JVM's is ``fusion.contract.CounterRows`` (``fusion/jvm/src/fusion/contract/``);
``tests/unit/counter/test_rows.py`` holds the two to each other. Both engines
read :data:`INPUT_COLUMNS` and emit :data:`OUTPUT_SCHEMA`, so the rest of the
pipeline does not know which one ran.

Each column means one thing. An ack fills the ack's columns; a count passing
through (the indexer's, in a single query) fills ``count_name``,
``count_value`` and ``executor`` under the key :data:`COUNTS_KEY`, and comes
out of the counter as a ``count`` row with the same three.
"""

from __future__ import annotations

# What the counter reads, in this order; ``kind`` is "ack" or "count".
INPUT_SCHEMA = (
    "k STRING, source STRING, acked_at STRING, version BIGINT, digest STRING, raw STRING, "
    "topic STRING, partition INT, offset BIGINT, kind STRING, "
    "count_name STRING, count_value BIGINT, executor STRING, deleted BOOLEAN, "
    "ref STRING, ref_version BIGINT, via STRING"
)
INPUT_COLUMNS = tuple(part.split()[0] for part in INPUT_SCHEMA.split(", "))

# What it emits: one row per event, timer, dead letter or count.
OUTPUT_SCHEMA = (
    "kind STRING, key STRING, event STRING, reason STRING, raw STRING, topic STRING, "
    "partition INT, offset BIGINT, count_name STRING, count_value BIGINT, executor STRING"
)
OUTPUT_COLUMNS = tuple(part.split()[0] for part in OUTPUT_SCHEMA.split(", "))

# The key of rows that carry counts, not acks: no join key can be it, since
# Fusion refuses keys with control characters (indexers/records.py).
COUNTS_KEY = "\u0000counts"
