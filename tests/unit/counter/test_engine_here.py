"""Which counter engine a pipeline runs where there is, or is not, a JDK compiler."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from fusion.core.config import PipelineConfig
from fusion.core.config_values import CounterEngineName
from fusion.counter.engine import (
    ENGINES,
    NO_JAVAC,
    JvmEngine,
    PythonEngine,
    engine_here,
    engine_of,
)
from fusion.infra import jvm_code as jvm

EXAMPLE = Path(__file__).parents[3] / "fusion" / "examples" / "healthcare.toml"


def example(**pipeline: str) -> PipelineConfig:
    config = PipelineConfig.load(EXAMPLE, env={})
    if pipeline:
        config = config.model_copy(update={"pipeline": config.pipeline.model_copy(update=pipeline)})
    return config


def test_without_javac_an_unchosen_engine_is_python_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jvm, "find_javac", lambda: None)
    config, line = engine_here(example())
    assert config.pipeline.counter_engine == "python"
    assert line == NO_JAVAC


def test_without_javac_a_chosen_engine_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jvm, "find_javac", lambda: None)
    config, line = engine_here(example(counter_engine="jvm"))
    assert (config.pipeline.counter_engine, line) == ("jvm", None)


def test_with_javac_the_default_is_the_jvm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jvm, "find_javac", lambda: "/usr/bin/javac")
    config, line = engine_here(example())
    assert (config.pipeline.counter_engine, line) == ("jvm", None)


def test_each_engine_the_pipeline_file_names_is_one_engine_object() -> None:
    assert set(ENGINES) == set(get_args(CounterEngineName))
    assert isinstance(engine_of(example(counter_engine="python")), PythonEngine)
    assert isinstance(engine_of(example(counter_engine="jvm")), JvmEngine)
