"""The burst benchmark's orchestration, with its measuring steps replaced (no servers)."""

from __future__ import annotations

from typing import Any


def test_every_run_of_a_burst_benchmark_floors_the_same_dataset(monkeypatch: Any) -> None:
    """Run 2's floor once got run 1's per-mode dataset, whose topics the floor cannot map."""
    from fusion.bench import burst
    from fusion.core.settings import Settings

    floored: list[set[str]] = []

    def floor(settings: Any, dataset: Any, config: Any) -> float:
        topics = {topic for topic, _, _ in dataset.records}
        assert topics == {config.topic_of(s) for s in config.sources}
        floored.append(topics)
        return 1.0

    def mode(config: Any, dataset: Any, name: str, rate: float, workdir: Any) -> Any:
        return burst.ModeResult(name, 3, 2, 0, 0, 0.0, 0, 0, 2.0, 1.5, None, None, None, None, 0)

    monkeypatch.setattr(burst, "run_floor", floor)
    monkeypatch.setattr(burst, "run_mode", mode)
    monkeypatch.setattr(burst, "run_counter_only", lambda *_: {})
    monkeypatch.setattr(burst, "machine", lambda _: {})
    options = burst.BenchOptions(3, 2, ("batched",), 1, 2)

    report = burst.run_bench(Settings(), options)

    assert len(floored) == 3 and report["modes"][0]["ratio_to_floor"] == 2.0
