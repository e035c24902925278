"""The counter's ack parser reads every ack as Spark's ``from_json`` does, malformed ones too.

``fusion.counter.AckParser`` replaced ``from_json(value, ACK_SPARK_SCHEMA)``
for speed; the dead letters' reasons depend on which fields of a malformed
ack survive, so the two must give the same row for any bytes. The rows of
``from_json`` (with the Kafka key as the fallback join key, as the counter
used it) are the specification; the input is a list of awkward acks and a
few thousand random mutations of a valid one.
"""

from __future__ import annotations

import random
from typing import Any

from acks.contract import ACK_SPARK_SCHEMA

VALID = (
    b'{"key": "T-1", "source": "billing", "index": "healthcare-billing", "doc_id": "T-1", '
    b'"seq_no": 3, "primary_term": 1, "version": 2, "topic": "billing", "partition": 0, '
    b'"offset": 41, "acked_at": "2026-11-21T10:00:00.123456Z", "digest": "9f2c4e1a0b7d3e55"}'
)

AWKWARD: list[bytes | None] = [
    VALID,
    None,  # a tombstone
    b"",
    b"   ",
    b"null",
    b'"T-1"',
    b"42",
    b'[{"key": "T-1"}]',
    b'{"key": "T-1", "source": 5, "acked_at": {"a": [1, 2.50, "x"]}, "version": "2"}',
    b'{"key": "T-1", "source": true, "acked_at": 1.50, "digest": 1e3, "version": 2.5}',
    b'{"key": "T-1", "source": "b", "acked_at": "x", "version": 99999999999999999999}',
    b'{"key": "T-1", "source": "b", "version": -7, "partition": "zz", "offset": [1]}',
    b'{"key": "T-1", "version": 2, "version": "x", "digest": "d"}',  # a failed repeat keeps 2
    b'{"key": "T-1", "key": "T-2"}',
    b'{"KEY": "T-1", "Source": "b"}',
    b"{'key': 'T-1', 'source': 'b'}",  # single quotes: Spark's default allows them
    b'{key: "T-1"}',
    b'{"key": "T-1", /* c */ "source": "b"}',
    b'{"key": "T-1", "source": "b",}',
    b'{"key": "T-1", "source": "b"',
    b'{"key": "T-1"} trailing',
    b'{"key": "T-1"}{"key": "T-2"}',
    b'{"key": "T-1", "version": 01}',
    b'{"key": "T-1", "version": NaN, "digest": NaN}',
    b'{"key": "T-1", "version": true, "digest": false, "source": null}',
    b'{"key": "", "source": "b", "acked_at": "x"}',
    b'{"key": "T-1", "nested": {"key": "T-9", "deep": [[{"source": "x"}]]}, "source": "s"}',
    b'{"key": "T-1", "source": "b\\u00e9\\n", "acked_at": "\\ud83d", "digest": "\\ud83d\\ude00"}',
    b'{"key": "T-1", "source": "tab\there"}',  # an unescaped control character
    b'{"key": "T-1", "source": "\xff\xfe", "acked_at": "caf\xc3\xa9"}',  # invalid UTF-8
    b'{"key": "T-1", "\xffsource": "b", "digest": "d"}',
    b'{"key": "T-1", "index": "\xff", "digest": "d"}',
    b'{"key": "T-1", "acked_at": {"a": "\xff"}}',
    b'{"key": "T-1", "source": ["a", {"b": null}], "digest": {}}',
    b'\xef\xbb\xbf{"key": "T-1"}',  # a byte order mark
    b'{"key": "T-1", "version": 9223372036854775807, "digest": -0}',
    b'{"key": "T-1", "version": -9223372036854775809}',
    b'{"key": "T-1", "version": 12345678901234567890123456789}',
    b'{"key": "T-1", "source": 1.0e-400, "acked_at": 123456789012345678901234567890.5}',
    # A slot ack's reference (docs/dimensions.md): the row's id and its version.
    b'{"key": "T-1", "source": "brand", "ref": "17", "ref_version": 4, "version": 9}',
    b'{"key": "T-1", "source": "brand", "ref": 17, "ref_version": "4"}',
    b'{"key": "T-1", "source": "brand", "ref": {"id": [1]}, "ref_version": 1e40}',
    b'{"key": "T-1", "source": "brand", "ref": null, "ref_version": -1}',
    # A chain's rows between (docs/dimensions.md): read as their JSON text, whatever it holds.
    b'{"key": "T-1", "source": "brand/company", "via": [42, 7], "ref": "C", "ref_version": 3}',
    b'{"key": "T-1", "source": "brand/company", "via": [ 1.50, "x", {"a": null} ]}',
    b'{"key": "T-1", "via": "[1]", "ref_version": 2}',
    b'{"key": "T-1", "via": 5, "digest": "d"}',
    b'{"key": "T-1", "via": [99999999999999999999], "digest": "d"}',
    b'{"key": "T-1", "via": [1, 2, "digest": "d"}',
]


def mutations(count: int, seed: int = 7) -> list[bytes]:
    """Random byte edits of a valid ack: deletions, insertions and replacements."""
    rng = random.Random(seed)
    alphabet = b"{}[]\":,\\ 0123456789-.eE+tfnul'/\xff\xc3abc"
    out = []
    for _ in range(count):
        value = bytearray(VALID)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(value))
            edit = rng.choice("dir")
            if edit == "d":
                del value[at]
            elif edit == "i":
                value.insert(at, rng.choice(alphabet))
            else:
                value[at] = rng.choice(alphabet)
        out.append(bytes(value))
    return out


def test_the_parser_reads_every_ack_as_from_json(spark: Any) -> None:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    values = AWKWARD + mutations(3_000)
    rows = [
        (None if n % 3 == 0 else f"kafka-{n}".encode(), value, "acks", n % 2, n)
        for n, value in enumerate(values)
    ]
    kafka = spark.createDataFrame(
        rows, "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT"
    )
    ack = F.from_json(F.col("value").cast("string"), ACK_SPARK_SCHEMA)
    expected = kafka.select(
        F.coalesce(ack["key"], F.col("key").cast("string"), F.lit("")).alias("k"),
        ack["source"].alias("source"),
        ack["acked_at"].alias("acked_at"),
        ack["version"].alias("version"),
        ack["digest"].alias("digest"),
        F.col("value").cast("string").alias("raw"),
        "topic",
        "partition",
        "offset",
        F.lit("ack").alias("kind"),
        # An ack carries no count: the count columns are a count row's alone.
        F.lit(None).cast("string").alias("count_name"),
        F.lit(None).cast("bigint").alias("count_value"),
        F.lit(None).cast("string").alias("executor"),
        ack["deleted"].alias("deleted"),
        ack["ref"].alias("ref"),
        ack["ref_version"].alias("ref_version"),
        ack["via"].alias("via"),
    )
    parser = spark._jvm.fusion.counter.AckParser
    actual = DataFrame(parser.parse(kafka._jdf), spark)

    want = {row["offset"]: row.asDict() for row in expected.collect()}
    got = {row["offset"]: row.asDict() for row in actual.collect()}
    differ = [(values[n], want[n], got[n]) for n in sorted(want) if want[n] != got[n]]
    assert not differ, f"{len(differ)} of {len(values)} differ:\n" + "\n".join(map(str, differ))
    # The list reaches each way an ack can be read: whole, partial, and not at all.
    awkward = [want[n] for n in range(len(AWKWARD))]
    assert any(r["source"] is None and r["version"] is not None for r in awkward)
    assert any(r["k"] == "T-1" and r["version"] is None and r["digest"] for r in awkward)
    assert any(r["k"].startswith("kafka-") for r in awkward)
    assert any(r["ref"] == "17" and r["ref_version"] == 4 for r in awkward)
