"""``fusion run``'s options change the pipeline for that run, through its config only."""

from __future__ import annotations

import pytest

from fusion.cli import parser
from fusion.cli.main import with_run_options
from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError

CONFIG = PipelineConfig.model_validate(
    {
        "pipeline": {"name": "options", "key_field": "id"},
        "sources": [{"name": "billing"}, {"name": "notes"}],
    }
)


def _run(*argv: str) -> PipelineConfig:
    return with_run_options(CONFIG, parser.build().parse_args(["run", *argv]))


def test_without_options_the_pipeline_is_the_files() -> None:
    assert _run() == CONFIG


def test_replay_unmarked_reaches_the_stages_through_the_config() -> None:
    assert not CONFIG.pipeline.replay_unmarked
    assert _run("--replay-unmarked").pipeline.replay_unmarked


def test_the_counter_engine_and_metrics_port_are_the_runs() -> None:
    config = _run("--counter-engine", "python", "--metrics-port", "9464")
    assert config.pipeline.counter_engine == "python"
    assert config.metrics.port == 9464


def test_a_metrics_port_out_of_range_is_one_line() -> None:
    with pytest.raises(ConfigError, match="not a port"):
        _run("--metrics-port", "70000")


def test_rebuild_state_reaches_the_stages_through_the_config() -> None:
    assert not CONFIG.pipeline.rebuild_state
    assert _run("--rebuild-state").pipeline.rebuild_state
