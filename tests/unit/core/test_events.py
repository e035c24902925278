"""Dead letters that would not fit in a Kafka message travel with their original cut."""

from __future__ import annotations

import hashlib
import json

from fusion.core.events import ORIGINAL_KEPT_BYTES, DeadLetter, dead_letter_records

WHERE = ("p.billing", 0, 7)


def _letter(original: bytes) -> DeadLetter:
    return DeadLetter.of("invalid JSON", "indexer", "billing", WHERE, original, "K1")


def test_a_dead_letter_that_fits_keeps_its_whole_original() -> None:
    letter = _letter(b'{"txn_id": "K1", "x": "' + b"a" * 1000 + b'"')

    ((topic, key, value),) = dead_letter_records("p.dlq", [letter], limit=100_000)

    decoded = json.loads(value)
    assert (topic, key) == ("p.dlq", "K1")
    assert decoded["original"] == letter.original
    assert decoded["original_size"] is None and decoded["original_sha256"] is None


def test_a_dead_letter_too_large_is_cut_and_names_the_whole_original() -> None:
    # Control characters escape to six bytes each: 200 KB of them is 1.2 MB of JSON.
    original = b"\x01" * 200_000

    ((_, key, value),) = dead_letter_records("p.dlq", [_letter(original)], limit=500_000)

    decoded = json.loads(value)
    assert len(value) <= 500_000
    assert key == "K1" and decoded["stage"] == "indexer" and decoded["offset"] == 7
    assert decoded["original"] == "\x01" * (500_000 // 8)
    assert decoded["original_size"] == 200_000
    assert decoded["original_sha256"] == hashlib.sha256(original).hexdigest()


def test_a_binary_original_is_cut_in_bytes_and_stays_base64() -> None:
    original = bytes(range(256)) * 1000
    letter = _letter(original).cut()

    assert letter.original_encoding == "base64"
    assert letter.original_bytes() == original[:ORIGINAL_KEPT_BYTES]
    assert letter.original_size == len(original)


def test_a_cut_never_splits_a_character() -> None:
    letter = _letter("é".encode() * 40_000).cut(keep=1001)

    assert letter.original == "é" * 500
