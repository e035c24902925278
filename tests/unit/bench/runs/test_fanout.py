"""The fan-out benchmark's pipeline and report (no servers)."""

from __future__ import annotations

from fusion.bench.runs.fanout import _median, fanout_config, markdown
from fusion.core.settings import Settings


def test_its_pipeline_joins_items_with_their_brand() -> None:
    config = fanout_config(Settings.load(env={}), "t", 500)
    assert config.dimensions == ("brand",) and config.pipeline.fanout_page == 500
    assert [r.field for r in config.references] == ["item.references.brand"]


def test_the_report_is_the_median_run_beside_its_floor() -> None:
    runs = [
        {"items": 10_000, "seconds": s, "items_per_second": 10_000 / s,
         "es_requests_per_item": 0.002, "floor_items_per_second": 20_000,
         "fraction_of_floor": 10_000 / s / 20_000, "new_keys_per_second_alone": 1_000.0,
         "new_keys_per_second_during": 600.0, "new_keys_fraction_during": 0.6}
        for s in (4.0, 2.0, 2.5)
    ]  # fmt: skip
    median = _median(runs)
    assert median["seconds"] == 2.5 and median["rates"] == [2_500, 5_000, 4_000]
    report = {
        "page": 5_000, "runs": 3, "date": "d", "commit": "c", "machine": {"cores": 2},
        "sizes": {"10000": {"median": median, "runs": runs}},
    }  # fmt: skip
    row = (
        "| 10,000 | 2.5 | 4,000 (2,500, 5,000, 4,000) | 20,000 | 0.20 | 0.0020 "
        "| 1,000 → 600 (0.60) |"
    )
    assert row in markdown(report)
