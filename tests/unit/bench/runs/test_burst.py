"""The burst benchmark's orchestration, with its measuring steps replaced (no servers)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def _no_generator(*_: Any) -> Iterator[None]:
    yield


def test_every_run_of_a_burst_benchmark_floors_the_same_dataset(monkeypatch: Any) -> None:
    """Run 2's floor once got run 1's per-mode dataset, whose topics the floor cannot map."""
    from fusion.bench.runs import burst
    from fusion.core.settings import Settings

    floored: list[set[str]] = []
    generating: list[Any] = []
    beside: list[bool] = []

    def floor(settings: Any, dataset: Any, config: Any) -> float:
        topics = {topic for topic, _, _ in dataset.records}
        assert topics == {config.topic_of(s) for s in config.sources}
        # Each timed floor is measured while the generator sends the same records, all at
        # once, to the floor's own pipeline's topics (no pipeline reads them).
        assert generating in ([], [(config.name, dataset, 0.0)])
        beside.append(bool(generating))
        floored.append(topics)
        return 1.0

    @contextlib.contextmanager
    def generator(config: Any, dataset: Any, rate: float) -> Iterator[None]:
        generating.append((config.name, dataset, rate))
        yield
        generating.clear()

    def mode(config: Any, dataset: Any, name: str, rate: float, workdir: Any, warm: Any) -> Any:
        return burst.ModeResult(name, 3, 2, 0, 0, 0.0, 0, 0, 2.0, 1.5, None, None, None, None, 0)

    monkeypatch.setattr(burst, "run_floor", floor)
    monkeypatch.setattr(burst, "generating", generator)
    monkeypatch.setattr(burst, "run_mode", mode)
    monkeypatch.setattr(
        burst, "run_counter_only", lambda *_: {"acks_per_second": 1, "baseline": {}}
    )
    monkeypatch.setattr(burst, "machine", lambda _: {})
    options = burst.BenchOptions(3, 2, ("batched",), 1, 2)

    report = burst.run_bench(Settings(), options)

    assert len(floored) == 3 and report["modes"][0]["ratio_to_floor"] == 2.0
    assert beside == [False, True, True]  # the untimed warm-up alone, then each run's


def test_a_warm_burst_first_sends_n_bursts_of_as_many_other_keys(monkeypatch: Any) -> None:
    from fusion.bench.runs import burst
    from fusion.core.settings import Settings

    waves: list[tuple[Any, Any]] = []

    def mode(config: Any, dataset: Any, name: str, rate: float, workdir: Any, warm: Any) -> Any:
        waves.append((dataset, warm))
        return burst.ModeResult(name, 3, 2, 0, 0, 0.0, 0, 0, 2.0, 1.5, None, None, None, None, 0)

    rates = iter([300, 100, 200, 5, 6, 7])
    monkeypatch.setattr(burst, "run_floor", lambda *_: 1.0)
    monkeypatch.setattr(burst, "generating", _no_generator)
    monkeypatch.setattr(burst, "run_mode", mode)
    monkeypatch.setattr(
        burst, "run_counter_only", lambda *_: {"acks_per_second": next(rates), "baseline": {}}
    )
    monkeypatch.setattr(burst, "machine", lambda _: {})
    options = burst.BenchOptions(20, 2, ("batched",), 1, 3, warm=2)

    report = burst.run_bench(Settings(), options)

    for dataset, (first, second) in waves:
        assert len(first.records) == len(second.records) == len(dataset.records)
        assert not set(first.expected) & set(second.expected)
        assert not (set(first.expected) | set(second.expected)) & set(dataset.expected)
    assert report["warm"] == 2 and report["counter_only"]["runs"] == [300, 100, 200]
    assert report["counter_only"]["acks_per_second"] == 200, "the median run"


def test_spark_alone_is_measured_once_a_run_and_shared_by_both_engines(monkeypatch: Any) -> None:
    from fusion.bench.runs import burst
    from fusion.core.settings import Settings

    asked: list[tuple[str, Any]] = []

    def alone(config: Any, dataset: Any, workdir: Any, engine: str, baseline: Any) -> Any:
        asked.append((engine, baseline))
        measured = baseline or {"measured_by": config.name}
        return {"acks_per_second": 1, "baseline": measured}

    monkeypatch.setattr(burst, "run_floor", lambda *_: 1.0)
    monkeypatch.setattr(burst, "generating", _no_generator)
    monkeypatch.setattr(burst, "run_mode", lambda *a: burst.ModeResult(
        a[2], 3, 2, 0, 0, 0.0, 0, 0, 2.0, 1.5, None, None, None, None, 0))  # fmt: skip
    monkeypatch.setattr(burst, "run_counter_only", alone)
    monkeypatch.setattr(burst, "machine", lambda _: {})

    burst.run_bench(Settings(), burst.BenchOptions(3, 2, ("batched",), 1, 2))

    jvm = [baseline for engine, baseline in asked if engine == "jvm"]
    python = [baseline for engine, baseline in asked if engine == "python"]
    assert jvm == [None, None], "the JVM engine's runs measure it"
    # Each Python run reuses the baseline of the JVM engine's run of the same number.
    assert [b["measured_by"][-4:] for b in python] == ["jvm0", "jvm1"]
