from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from fusion.cli.main import load_config
from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]

MINIMAL = """
[pipeline]
name = "clinic"
key_field = "visit_id"

[[sources]]
name = "checkin"
topic = "raw.checkin"
fields = { arrived_at = "date" }

[[sources]]
name = "lab"
"""


def _load(tmp_path: Path, text: str) -> PipelineConfig:
    path = tmp_path / "pipeline.toml"
    path.write_text(text)
    return PipelineConfig.load(path, env={})


def test_names_derive_from_the_pipeline_name(tmp_path: Path) -> None:
    config = _load(tmp_path, MINIMAL)

    assert config.source_names == ("checkin", "lab")
    assert config.topic_of(config.source("checkin")) == "raw.checkin"
    assert config.topic_of(config.source("lab")) == "lab"
    assert config.index_of(config.source("lab")) == "clinic-lab"
    assert config.enriched_index == "clinic-enriched"
    assert (config.acks_topic, config.ready_topic) == ("clinic.acks", "clinic.ready")
    assert (config.enriched_topic, config.dlq_topic) == ("clinic.enriched", "clinic.dlq")
    assert config.checkpoint_dir == (config.runtime.home / "checkpoints" / "clinic").as_uri()
    assert config.checkpoint("counter") == config.checkpoint_dir + "/counter"
    assert config.pipeline.lookup == "batched"


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        (MINIMAL + '\n[[sources]]\nname = "lab"\n', "sources", "duplicate source name 'lab'"),
        (
            MINIMAL.replace('name = "lab"', 'name = "lab"\ncolour = "red"'),
            "sources.1.colour",
            "unknown key",
        ),
        (
            '[pipeline]\nname = "p"\nkey_field = "k"\n[[sources]]\nname = "only"\n',
            "sources",
            "at least 2",
        ),
        (MINIMAL.replace('"clinic"', '"Clinic"'), "pipeline.name", "lowercase"),
        (MINIMAL.replace('"date"', '"datetime"'), "sources.0.fields.arrived_at", "keyword"),
        (MINIMAL.replace('key_field = "visit_id"', ""), "pipeline.key_field", "Field required"),
    ],
)
def test_invalid_pipeline_names_file_and_field(
    tmp_path: Path, text: str, field: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)

    assert caught.value.source == str(tmp_path / "pipeline.toml")
    assert caught.value.field == field
    assert problem in str(caught.value)


def test_shipped_healthcare_example_is_the_original_design() -> None:
    config = PipelineConfig.load(ROOT / "examples/healthcare.toml", env={})

    assert config.key_field == "txn_id"
    assert config.source_names == ("billing", "insurance", "medicine", "treatment")


def test_cli_loads_a_pipeline_or_plain_settings(tmp_path: Path) -> None:
    pipeline_file = tmp_path / "p.toml"
    pipeline_file.write_text(MINIMAL)
    settings_file = tmp_path / "s.toml"
    settings_file.write_text('[kafka]\nbootstrap = "k:1"\n')

    assert isinstance(load_config(pipeline_file), PipelineConfig)
    assert not isinstance(load_config(settings_file), PipelineConfig)


def test_lifecycle_settings_parse_durations_and_per_source_overrides() -> None:
    config = lifecycle_config(
        {"timeout": "10m", "state_ttl": "2d", "on_timeout": "partial"},
        {"required": False, "timeout": "90s"},
    )

    assert config.timeouts == {"billing": 600.0, "notes": 90.0}
    assert config.required_parts == ("billing",)
    assert config.pipeline.state_ttl == 2 * 86400
    assert config.pipeline.on_timeout == "partial"
    assert config.incomplete_topic == "life.incomplete"
    assert config.updates_topic == "life.updated"


@pytest.mark.parametrize(
    ("pipeline", "needle"),
    [
        ({"timeout": "soon"}, "is not a duration"),
        ({"timeout": "0s"}, "positive duration"),
        ({"timeout": "2h", "state_ttl": "1h"}, "state_ttl (3600 s) must be longer"),
        ({"on_update": "merge"}, "on_update"),
    ],
)
def test_bad_lifecycle_settings_are_rejected(pipeline: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValidationError) as error:
        lifecycle_config(pipeline, {})

    assert needle in str(error.value)


def lifecycle_config(pipeline: dict[str, Any], notes: dict[str, Any]) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "pipeline": {"name": "life", "key_field": "id"} | pipeline,
            "sources": [{"name": "billing"}, {"name": "notes"} | notes],
        }
    )


@pytest.mark.parametrize(
    ("written", "uri"),
    [
        ("hdfs://namenode:8020/fusion/clinic/", "hdfs://namenode:8020/fusion/clinic"),
        ("s3a://bucket/fusion", "s3a://bucket/fusion"),
        ("file:///var/lib/fusion", "file:///var/lib/fusion"),
        ("/var/lib/fusion/../fusion/clinic", "file:///var/lib/fusion/clinic"),
    ],
)
def test_checkpoints_go_anywhere_spark_can_write(tmp_path: Path, written: str, uri: str) -> None:
    text = MINIMAL.replace(
        'key_field = "visit_id"', f'key_field = "visit_id"\ncheckpoint_dir = "{written}"'
    )
    config = _load(tmp_path, text)

    assert config.checkpoint_dir == uri
    assert config.checkpoint("indexer-lab") == f"{uri}/indexer-lab"


def test_the_naive_baseline_is_a_component_the_benchmark_selects_not_a_setting(
    tmp_path: Path,
) -> None:
    from fusion.bench import naive
    from fusion.topology import topology_of

    with pytest.raises(ConfigError, match=r"pipeline\.mode: unknown key"):
        _load(
            tmp_path,
            MINIMAL.replace('key_field = "visit_id"', 'key_field = "visit_id"\nmode = "naive"'),
        )
    config = _load(tmp_path, MINIMAL)
    assert naive.query(config).name == "naive"
    assert "naive" not in topology_of(config).inputs()


@pytest.mark.parametrize("name", ["id", "fusion"])
def test_a_source_named_like_a_field_of_the_enriched_document_is_rejected(name: str) -> None:
    # The enriched document nests each source under its name, beside the key and "fusion".
    with pytest.raises(ValidationError) as error:
        lifecycle_config({}, {"name": name})

    assert f"name {name!r} (a source's or a reference's) is taken" in str(error.value)


def test_output_topics_take_n_plus_one_records_of_the_largest_size() -> None:
    config = lifecycle_config({"max_record_bytes": 100_000}, {})

    assert config.message_limit == 3 * 100_000 + 64 * 1024
    assert config.topic_message_bytes > config.message_limit
    assert config.enriched_topic in config.output_topics()
    assert config.markers_topic not in config.output_topics()


def test_the_counter_engine_is_jvm_or_python(tmp_path: Path) -> None:
    assert _load(tmp_path, MINIMAL).pipeline.counter_engine == "jvm"
    python = MINIMAL.replace(
        'key_field = "visit_id"', 'key_field = "visit_id"\ncounter_engine = "python"'
    )
    assert _load(tmp_path, python).pipeline.counter_engine == "python"
    with pytest.raises(
        ConfigError, match=r"pipeline\.counter_engine: Input should be 'jvm' or 'python'"
    ):
        _load(tmp_path, python.replace('"python"', '"rust"'))


def test_every_source_optional_is_a_full_join_and_reconcile_says_what_it_needs() -> None:
    from fusion.ops.reconcile import reconcile

    config = lifecycle_config({"required": False}, {})
    assert config.required_parts == () and not config.has_deadlines
    with pytest.raises(ConfigError, match="required = true"):
        reconcile(None, config)  # type: ignore[arg-type]  # refused before Spark is asked
