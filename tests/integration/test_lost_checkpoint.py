"""A lost checkpoint: `fusion run` stops with one line, and `--rebuild-state` fires nothing twice.

Each run is a `fusion run` process of its own. The pipeline is killed with
SIGKILL between its tasks' commits and its driver's (its last batch's events
are out, its marker and Spark's commit not), its whole checkpoint directory
is deleted, and more records arrive, some completing keys the lost state had
half seen. A run without the checkpoint must refuse, before Spark starts (in
the default layout, every ready event is then deleted, as retention would); a run with
``--rebuild-state`` is killed the same way before its first batch commits
(in the stages layout, its second), and the next run (no option) rebuilds
again (or resumes the rebuilt checkpoint). After a last clean run the
output is the exact join: every complete key fired and enriched once.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fusion.bench.generator import Dataset, GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.errors import ExitCode
from fusion.core.settings import Settings
from fusion.kafka import topics as kafka_topics
from tests.integration.pipelines import (
    assert_exact_join,
    delete_to_end,
    drop,
    read_raw,
    write_config_file,
)
from tests.integration.runs import RUN_TIMEOUT, crash, finish, kill_group, start_run

SOURCES = ["billing", "insurance", "medicine"]
KILL = "counter.driver.before_commit"  # every task committed its events, the driver not
# (options, the kill): the counter of the stages layout commits an empty first batch (its
# acks are not there yet), so it is killed at its second commit.
LAYOUTS = {
    "single": ({}, KILL),
    "single-python": ({"counter_engine": "python"}, KILL),
    "stages": ({"layout": "stages", "enrich_in": "enricher"}, f"{KILL}@2"),
}


def _slices(data: Dataset) -> list[list[tuple[str, str, bytes]]]:
    """Three slices by key; the first slice's keys lose their medicine records to the second,
    so the lost state had them half seen."""
    keys = sorted({key for _, key, _ in data.records})
    slice_of = {key: i * 3 // len(keys) for i, key in enumerate(keys)}
    held = {key for key in keys[: len(keys) // 6]}
    slices: list[list[tuple[str, str, bytes]]] = [[], [], []]
    for record in data.records:
        topic, key, _ = record
        late = key in held and topic.endswith(".medicine")
        slices[1 if late else slice_of[key]].append(record)
    return slices


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_lost_checkpoint_is_refused_and_rebuilt_without_a_second_fire(
    layout: str, settings: Settings, tmp_path: Path
) -> None:
    options, kill = LAYOUTS[layout]
    config_file = write_config_file(settings, tmp_path / "pipeline.toml", SOURCES, **options)
    config = PipelineConfig.load(config_file, env={})
    data = build_dataset(config, GenOptions(keys=60, seed=5, duplicate_rate=0.2, missing_rate=0.2))
    first, second, third = _slices(data)
    checkpoints = Path(config.checkpoint_dir.removeprefix("file://"))
    kafka_topics.ensure_topics(config)
    try:
        produce(config, first)
        crash(config_file, settings, [kill], "killed", tmp_path)
        fired = len(read_raw(settings, config.ready_topic))
        assert fired > 0, "the killed run's events are out"
        shutil.rmtree(checkpoints)
        produce(config, second)

        # The refusal is the engine's business in no way: the JVM engine's runs check it.
        if layout != "single-python":
            code, line = _refused(config_file, settings, tmp_path)
            assert code == ExitCode.CHECKPOINT_LOST, line
            assert f"pipeline {config.name} ran before" in line and "--rebuild-state" in line
            assert f"records on {config.ready_topic}" in line or "query committed" in line, line
            assert len(read_raw(settings, config.ready_topic)) == fired, "the refused run wrote"

        deleted: frozenset[str] = frozenset()
        if layout == "single":
            # Retention deleted every ready event too: only the enriched index still says
            # which keys fired (the enricher runs in the counter's task, so each has its
            # document). None of them may fire again; the keys that never fired do.
            deleted = frozenset(key for key, _, _ in read_raw(settings, config.ready_topic))
            delete_to_end(settings, config.ready_topic)
            assert read_raw(settings, config.ready_topic) == []

        # Rebuilt, and killed again before its first batch committed: the next run,
        # without the option, rebuilds again rather than replay that batch on empty state.
        crash(config_file, settings, [kill], "killed", tmp_path, "--rebuild-state")
        produce(config, third)
        finish(config, config_file, settings, len(data.expected))

        assert_exact_join(settings, config, data.expected, ready_deleted=deleted)
        if layout == "single":
            # Its checkpoint holds state now: nothing to rebuild, and the option is refused.
            code, line = _refused(config_file, settings, tmp_path, "--rebuild-state")
            assert code == ExitCode.CONFIG, line
            assert "is not lost, so there is nothing to rebuild" in line, line
    finally:
        drop(config)


def _refused(config_file: Path, settings: Settings, tmp: Path, *args: str) -> tuple[int, str]:
    """A run that must stop at start: its exit code and its one error line."""
    run = start_run(config_file, settings, [], tmp, *args)
    try:
        code = run.wait(timeout=RUN_TIMEOUT)
        stderr = run.stderr.read() if run.stderr else ""
    finally:
        kill_group(run)
    errors = [x for x in stderr.splitlines() if x.startswith("fusion: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr[-2000:]
    # A checkpoint on this disk is judged before a JVM starts (the run names Spark's log
    # once its session is up).
    assert "Spark's log" not in stderr, "refused only after Spark started"
    return code, errors[0]
