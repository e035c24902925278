"""The sustained-load benchmark's verdict and data shape (pure parts, no servers)."""

from __future__ import annotations

from collections import defaultdict

from fusion.bench.meter import Objective, Seen, Sent, Step, backlog_trend, judge, quantiles
from fusion.bench.sustain.options import SustainOptions
from fusion.bench.sustain.run import _at_rates
from fusion.bench.sustain.step import steady_dataset
from fusion.core.config import PipelineConfig

RATE, SECONDS, SOURCES = 100.0, 30.0, 4


def _sent(keys: int = 10) -> Sent:
    names = [f"S-{i}" for i in range(keys)]
    return Sent(RATE, names, 1000.0, SECONDS, {k: 1000.0 + i for i, k in enumerate(names)})


def _seen(sent: Sent, backlog: dict[float, int], found: int | None = None) -> Seen:
    keys = sent.keys[: len(sent.keys) if found is None else found]
    enriched = {k: sent.last_send[k] + 2.0 for k in keys}
    samples = [(sent.first + t, n) for t, n in backlog.items()]
    return Seen(enriched, samples, 5.0, lookups=3, enriched=len(keys))


def test_a_steady_backlog_is_sustained_with_its_latency_and_requests_per_key() -> None:
    sent = _sent()
    # Second half (from 15 s): 1000, 950, 1100, 1000: no upward trend.
    step = judge(sent, _seen(sent, {12: 900, 16: 1000, 20: 950, 24: 1100, 28: 1000}), SOURCES)

    assert step.sustained and step.kept_up, step.why
    assert step.latency_p50 == step.latency_p99 == 2.0
    assert step.requests_per_key == 0.3
    assert step.backlog_mean == 1012
    assert abs(step.backlog_rise) < 400


def test_a_backlog_that_rises_over_the_second_half_does_not_keep_up() -> None:
    sent = _sent()
    # 200 records a second more: 3,000 over the half, above 3 s of input (1,200).
    step = judge(sent, _seen(sent, {16: 1000, 20: 1800, 24: 2600, 28: 3400}), SOURCES)

    assert not step.kept_up and not step.sustained
    assert "backlog rose 3,000 records over the second half (200/s)" in step.why


def test_a_large_but_flat_backlog_keeps_up() -> None:
    sent = _sent()
    # Big, and bounded: a pipeline with big batches keeps a big backlog without falling behind.
    step = judge(
        sent, _seen(sent, {2: 50_000, 16: 30_000, 20: 31_000, 24: 29_000, 28: 30_500}), SOURCES
    )

    assert step.kept_up, step.why


def test_a_step_that_keeps_up_beyond_the_latency_objective_is_not_sustained() -> None:
    sent = _sent()
    seen = _seen(sent, {16: 10, 28: 10})

    step = judge(sent, seen, SOURCES, Objective(slo=1.5))

    assert step.kept_up and not step.sustained
    assert step.why == "kept up, but p99 2.00 s > objective 1.5 s"


def test_a_backlog_trend_is_the_least_squares_slope() -> None:
    slope, mean = backlog_trend([(0.0, 10), (1.0, 12), (2.0, 14), (3.0, 16)])

    assert slope == 2.0 and mean == 13.0
    assert backlog_trend([(5.0, 7)]) == (0.0, 7.0)


def test_keys_not_enriched_in_time_fail_the_step_whatever_the_backlog() -> None:
    sent = _sent()
    step = judge(sent, _seen(sent, {12: 0, 28: 0}, found=7), SOURCES)

    assert not step.sustained
    assert step.why.startswith("3 keys not enriched")
    assert step.enriched == 7


def test_quantiles_span_the_ordered_values() -> None:
    values = [float(v) for v in range(1000)]

    points = quantiles(values, 200)

    assert len(points) == 200 and points[0] == 0.0 and points[-1] == 995.0
    assert points == sorted(points)
    assert quantiles([], 10) == []


def test_steady_data_sends_each_keys_records_within_about_a_second() -> None:
    config = PipelineConfig.model_validate(
        {
            "pipeline": {"name": "s", "key_field": "id"},
            "sources": [{"name": f"s{i}", "topic": f"t{i}"} for i in range(SOURCES)],
        }
    )
    data = steady_dataset(config, rate=50, seconds=4, seed=7, prefix="S1")

    positions: dict[str, list[int]] = defaultdict(list)
    for position, (_, key, _) in enumerate(data.records):
        positions[key].append(position)
    assert len(data.expected) == 200 and len(data.records) == 200 * SOURCES
    per_second = 50 * SOURCES
    # A key's records fall in at most two neighbouring one-second windows.
    assert all(max(p) - min(p) < 2 * per_second for p in positions.values())
    # ...in random order: not always in source order.
    orders = {tuple(data.records[i][0] for i in sorted(p)) for p in positions.values()}
    assert len(orders) > 1


def test_a_step_keeps_the_cores_each_process_was_seen_to_use() -> None:
    sent = _sent()
    seen = _seen(sent, {16: 10, 28: 10})
    cores = {"jvm": 1.2, "machine": 1.9}

    step = judge(sent, Seen(**{**seen.__dict__, "cores": cores}), SOURCES)

    assert step.cores == cores


class _Rates:
    """A meter that records the rates it is asked for (the step's measurement is not the point)."""

    def __init__(self) -> None:
        self.rates: list[float] = []

    def step(self, rate: float) -> Step:
        self.rates.append(rate)
        sent = _sent()
        return judge(sent, _seen(sent, {16: 10, 28: 10}), SOURCES)


def test_the_rate_at_a_share_of_the_floor_follows_the_floor_as_the_report_shows_it() -> None:
    meter = _Rates()
    options = SustainOptions(at_rates=(10.0,), at_floor=(0.005, 0.1))

    # Shown as 590.0: 0.5 % of it is 2.95, rounded to 3.0 (2.9 from the unrounded 589.96).
    steps = _at_rates(meter, options, 589.96, lambda _: None)  # type: ignore[arg-type]

    assert meter.rates == [10.0, 3.0, 59.0]
    assert [s["floor_fraction"] for s in steps] == [None, 0.005, 0.1]
