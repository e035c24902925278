"""A writer's batch marker, the config file another process reads, the latency histogram."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from fusion.core.config import PipelineConfig
from fusion.core.config_file import write_config
from fusion.kafka.markers import PACKED, Marker, largest_marker, replay_unmarked

EXAMPLE = Path(__file__).parents[3] / "examples" / "healthcare.toml"


def test_a_marker_survives_its_round_trip_through_offset_metadata() -> None:
    marker = Marker("query-1", 41, {"indexer.billing.indexed": 7, "es.retries": 2})

    assert Marker.from_metadata(marker.to_metadata()) == marker
    assert len(marker.to_metadata()) < 4096  # Kafka's default offset.metadata.max.bytes
    assert Marker.from_metadata("") is None and Marker.from_metadata('{"q": 1}') is None
    # Stray bytes after the JSON, as librdkafka at times returns it: the marker still reads.
    assert Marker.from_metadata(marker.to_metadata() + "\x00\x17z") == marker


def test_a_replay_is_refused_only_when_it_waits_and_the_querys_marker_is_gone() -> None:
    mine = Marker("q-1", 6)

    assert replay_unmarked([5, 6, 7], [5, 6], None, "q-1") == 7  # expired: refused
    assert replay_unmarked([5, 6, 7], [5, 6], Marker("q-0", 9), "q-1") == 7  # an old query's
    assert replay_unmarked([5, 6, 7], [5, 6], mine, "q-1") is None  # markers there: exactly once
    assert replay_unmarked([5, 6, 7], [5, 6, 7], None, "q-1") is None  # nothing to replay
    assert replay_unmarked([0], [], None, "q-1") is None  # the first batch: no marker yet
    assert replay_unmarked([], [], None, "q-1") is None


def test_a_written_config_reads_back_equal_with_its_secrets(tmp_path: Path) -> None:
    config = PipelineConfig.load(
        EXAMPLE, env={"FUSION_ES_PASSWORD": "s3cret", "FUSION_KAFKA_SASL_PASSWORD": "k3y"}
    )
    path = write_config(config, tmp_path / "copy.toml")

    assert PipelineConfig.load(path, env={}) == config
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the secrets in clear


def test_markers_are_deflated_and_read_the_same_by_the_jvm(fusion_jvm: Any) -> None:
    counts = {f"indexer.department_{n:02d}.indexed": 1_000_000 + n for n in range(16)}
    marker = Marker("query-1", 41, counts)
    packed = marker.to_metadata()
    assert packed.startswith(PACKED) and len(packed) < len(json.dumps(counts)) / 2
    jvm_marker = fusion_jvm.fusion.output.Marker
    read = jvm_marker.parse(packed)
    assert (read.query(), read.batch(), dict(read.counts())) == ("query-1", 41, counts)
    # The JVM's writers pack it the same way: Python reads their markers.
    plain = json.dumps({"q": "query-2", "b": 7, "c": counts})
    assert Marker.from_metadata(jvm_marker.metadata(jvm_marker.parse(plain))) == Marker(
        "query-2", 7, counts
    )
    # A marker of the time before markers were packed still reads, in both languages.
    assert Marker.from_metadata(plain) == Marker("query-2", 7, counts)
    assert jvm_marker.parse(plain).batch() == 7
    assert Marker.from_metadata(PACKED + "not base64 of a deflated marker") is None
    assert jvm_marker.parse(PACKED + "AAAA") is None


def test_the_largest_marker_grows_with_the_sources() -> None:
    def config(sources: int) -> PipelineConfig:
        return PipelineConfig.model_validate(
            {
                "pipeline": {"name": "p", "key_field": "id"},
                "sources": [{"name": f"department_{n:02d}"} for n in range(sources)],
            }
        )

    sizes = [largest_marker(config(n)) for n in (4, 16, 64)]
    assert sizes == sorted(sizes)
    assert sizes[1] < 4096 < sizes[2]  # 16 sources fit Kafka's default, 64 do not
