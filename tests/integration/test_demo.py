"""`fusion demo`: fits on one screen, restarts only its own pipeline, runs from anywhere."""

from __future__ import annotations

import fnmatch
import io
import re
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from fusion.cli.demo import DemoOptions, example_config, run_demo, start_afresh
from fusion.core.config import PipelineConfig
from fusion.core.errors import ConfigError
from fusion.core.settings import Settings
from fusion.infra.services import Endpoints
from fusion.kafka import topics as kafka_topics
from fusion.ops import teardown
from tests.integration.pipelines import drop

SCREEN = 60  # lines


@pytest.fixture
def demo_file(settings: Settings, tmp_path: Path) -> Iterator[Path]:
    """The shipped healthcare pipeline under a name and checkpoint directory of this test's."""
    name = f"demo{uuid.uuid4().hex[:8]}"
    text = example_config().read_text().replace('name = "healthcare"', f'name = "{name}"')
    text = text.replace("[pipeline]", f'[pipeline]\ncheckpoint_dir = "{tmp_path / "ckpt"}"', 1)
    # The session's servers, never the default ones a user's own demo may run on.
    text = text.replace('"127.0.0.1:9092"', f'"{settings.kafka.bootstrap}"')
    text = text.replace('"http://127.0.0.1:9200"', f'"{settings.elasticsearch.url}"')
    path = tmp_path / "demo.toml"
    path.write_text(text)
    yield path
    drop(PipelineConfig.load(path, env={}))


def _consoles() -> tuple[Console, Console, io.StringIO]:
    both = io.StringIO()  # stdout and stderr interleaved, as `make demo 2>&1` shows them
    return Console(file=both, width=100), Console(file=both, width=100, stderr=True), both


def test_the_demo_fits_on_one_screen_with_no_warning_and_no_stack_trace(
    spark: object, servers: Endpoints, demo_file: Path, settings: Settings
) -> None:
    out, err, both = _consoles()

    code = run_demo(DemoOptions(demo_file, keys=300), servers, out, err)

    text = both.getvalue()
    assert code == 0, text
    lines = text.splitlines()
    assert len(lines) <= SCREEN, text
    assert "WARN" not in text and "Traceback" not in text and "\tat " not in text, text
    assert re.search(r"keys enriched\s+(\d+) of \1 complete keys", text), text
    assert "one enriched document" in text and "fusion status" in text
    assert "Spark's log: " in text
    # How the backlog drained: the first key before half of them, half before all.
    drain = re.search(
        r"first key ([\d.]+) s after the first batch started, half ([\d.]+) s, all ([\d.]+) s", text
    )
    assert drain and 0 < float(drain[1]) <= float(drain[2]) <= float(drain[3]), text
    # Run again: the pipeline is the demo's own, so it starts afresh without --reset.
    start_afresh(PipelineConfig.load(demo_file, env={}), reset=False)


def test_the_demo_never_deletes_a_pipeline_it_did_not_create(
    demo_file: Path, servers: Endpoints
) -> None:
    config = PipelineConfig.load(demo_file, env={})
    kafka_topics.ensure_topics(config)  # someone's pipeline of that name, not the demo's

    with pytest.raises(ConfigError, match=r"the demo did not create it; run `fusion demo --reset`"):
        start_afresh(config, reset=False)
    assert set(teardown.existing(config)) >= set(config.all_topics())  # nothing deleted

    start_afresh(config, reset=True)
    start_afresh(config, reset=False)  # now it is the demo's: a rerun needs no --reset


def test_the_example_pipeline_ships_inside_the_package() -> None:
    import fusion

    path = example_config()
    package = Path(fusion.__file__).parent
    inside = path.relative_to(package).as_posix()  # raises if the file is not in the package
    # And the wheel takes it: a package-data glob of pyproject.toml matches it.
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["fusion"]
    assert any(fnmatch.fnmatch(inside, glob) for glob in globs), (inside, globs)
    assert PipelineConfig.load(path, env={}).name == "healthcare"
