"""The fan-out benchmark's pipeline and report (no servers)."""

from __future__ import annotations

from fusion.bench.runs.fanout import fanout_config
from fusion.bench.runs.fanout_report import markdown, median_run
from fusion.core.settings import Settings


def test_its_pipeline_joins_items_with_their_brand() -> None:
    config = fanout_config(Settings.load(env={}), "t", 500)
    assert config.dimensions == ("brand",) and config.pipeline.fanout_page == 500
    assert [r.field for r in config.references] == ["item.references.brand"]


def test_its_chain_renames_a_company_that_a_hundred_brands_name() -> None:
    import json

    from fusion.bench.runs.fanout import CHAIN_BRANDS, _records
    from fusion.bench.runs.fanout_steps import Renamed

    config = fanout_config(Settings.load(env={}), "t", 500, chain=True)
    assert config.slots == ("brand", "brand/company")
    records = _records(config, 300, chain=True)
    brands = [json.loads(v) for t, _, v in records if t == config.topic_of(config.source("brand"))]
    assert len(brands) == CHAIN_BRANDS + 1 and {b["company_id"] for b in brands} == {"X", "Y"}
    items = [json.loads(v) for t, _, v in records if t == config.topic_of(config.source("item"))]
    assert len({item["brand"] for item in items}) == CHAIN_BRANDS
    topic, key, value = Renamed(chain=True).record(config, "Zed")
    assert (topic, key, json.loads(value)["name"]) == (f"{config.name}.company", "X", "Zed")
    assert Renamed(chain=True).field == "brand.company.name.keyword"


def test_the_report_is_the_median_run_beside_its_floor() -> None:
    runs = [
        {"items": 10_000, "seconds": s, "items_per_second": 10_000 / s,
         "es_requests_per_item": 0.002, "floor_items_per_second": 20_000,
         "fraction_of_floor": 10_000 / s / 20_000, "new_keys_per_second_alone": 1_000.0,
         "new_keys_per_second_during": 600.0, "new_keys_fraction_during": 0.6,
         "items_per_second_alone": 10_000 / (s - 1),
         "cores_alone": {"jvm": 0.5, "worker": 0.25, "elasticsearch": s}}
        for s in (4.0, 2.0, 2.5)
    ]  # fmt: skip
    median = median_run(runs)
    assert median["seconds"] == 2.5 and median["rates"] == [2_500, 5_000, 4_000]
    report = {
        "page": 5_000, "runs": 3, "date": "d", "commit": "c", "machine": {"cores": 2},
        "sizes": {"10000": {"median": median, "runs": runs}},
    }  # fmt: skip
    row = (
        "| 10,000 | 2.5 | 4,000 (2,500, 5,000, 4,000) | 20,000 | 0.20 | 0.0020 "
        "| 1,000 → 600 (0.60) | 6,667 (3,333, 10,000, 6,667) |"
    )
    assert row in markdown(report)
    assert (
        "- 10,000 items, the rename alone, cores busy: jvm 0.50, worker 0.25, "
        "elasticsearch 2.50" in markdown(report)
    )


def test_a_report_from_before_the_rename_alone_was_timed_says_so() -> None:
    run = {"items": 10, "seconds": 1.0, "items_per_second": 10.0, "es_requests_per_item": 0.1,
           "floor_items_per_second": 20, "fraction_of_floor": 0.5,
           "new_keys_per_second_alone": 5.0, "new_keys_per_second_during": 5.0,
           "new_keys_fraction_during": 1.0}  # fmt: skip
    report = {
        "page": 5, "runs": 1, "date": "d", "commit": "c", "machine": {"cores": 2},
        "sizes": {"10": {"median": median_run([run]), "runs": [run]}},
    }  # fmt: skip
    assert markdown(report).rstrip().endswith("| 5 → 5 (1.00) | - |")


def test_the_warm_renames_have_their_own_table_beside_the_median_floor() -> None:
    def run(rate: float, floor: int, fraction: float) -> dict[str, object]:
        return {"items": 10, "seconds": 10 / rate, "items_per_second": rate,
                "es_requests_per_item": 0.1, "floor_items_per_second": floor,
                "fraction_of_floor": rate / floor, "new_keys_per_second_alone": 5.0,
                "new_keys_per_second_during": 5.0, "new_keys_fraction_during": 1.0,
                "warm": {"items_per_second": rate * 2, "items_per_second_during": rate,
                         "new_keys_fraction_during": fraction}}  # fmt: skip

    runs = [run(4.0, 20, 0.7), run(2.0, 40, 0.5), run(3.0, 30, 0.9)]
    median = median_run(runs)
    assert median["median_warm"] == 6.0 and median["median_fraction_warm"] == 0.7
    report = {
        "page": 5, "runs": 3, "date": "d", "commit": "c", "machine": {"cores": 2},
        "warm": {"seconds": 45.0, "renames": 3},
        "sizes": {"10": {"median": median, "runs": runs}},
    }  # fmt: skip
    text = markdown(report)
    assert "after untimed renames of at least 45 s; the median of 3 renames" in text
    assert "| 10 | 3 (4, 2, 3) | 0.10 | 6 (8, 4, 6) | 0.20 | 0.70 (0.70, 0.50, 0.90) |" in text
