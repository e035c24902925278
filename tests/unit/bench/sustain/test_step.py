"""Where a sustained step's batches spent their time, from the pipeline's counts (pure)."""

from __future__ import annotations

from fusion.bench.sustain import report as sustain_report
from fusion.bench.sustain.step import BATCHES, per_batch, spark_phases


def test_each_stage_is_its_milliseconds_per_batch_between_two_readings() -> None:
    before = {BATCHES: 100, "ms.index.write": 50_000, "ms.enrich.lookup": 9_000, "other": 5}
    after = {BATCHES: 110, "ms.index.write": 58_000, "ms.enrich.lookup": 9_250, "other": 9,
             "ms.index.parse": 1_234}  # fmt: skip

    stages = per_batch(before, after)

    assert stages == {"index.write": 800.0, "enrich.lookup": 25.0, "index.parse": 123.4}


def test_no_batch_between_two_readings_is_no_figure() -> None:
    assert per_batch({BATCHES: 7, "ms.index.write": 10}, {BATCHES: 7, "ms.index.write": 10}) == {}


def test_sparks_phases_are_per_batch_that_read_rows_per_query() -> None:
    counts = {
        "batches.single": 40, "phase_ms.single.addBatch": 20_000,
        "phase_ms.single.queryPlanning": 1_000, "phase_ms.single.walCommit": 400,
        "busy_ms.single": 22_000, "batches.idle": 0, "phase_ms.idle.addBatch": 5,
    }  # fmt: skip

    phases = spark_phases(counts)

    assert phases == {
        "single": {"batches": 40, "addBatch": 500.0, "queryPlanning": 25.0, "walCommit": 10.0}
    }
    report = {"at_fraction": [{"fraction": 0.5, "keys_per_second": 200,
                               "stages": {"index.write": 800.0}}],
              "at_rates": [], "spark_phases": phases}  # fmt: skip
    text = "\n".join(sustain_report.stages_table(report))
    assert "| 50% of the highest, 200 keys/s | - | 800.0 | - | - | - |" in text
    assert "`single` query's 40 batches" in text and "addBatch 500.0" in text


def test_the_cores_table_shows_each_process_at_each_step_beside_the_machine() -> None:
    cores = {"jvm": 1.1, "worker": 0.3, "driver": 0.05, "elasticsearch": 0.3, "kafka": 0.1,
             "bench": 0.1, "registry": 0.02, "machine": 1.98}  # fmt: skip
    report = {
        "machine": {"cores": 2},
        "search": [{"keys_per_second": 2000, "cores": cores}, {"keys_per_second": 100}],
        "at_fraction": [],
        "at_rates": [],
    }

    text = "\n".join(sustain_report.cores_table(report))

    assert "(of 2)" in text
    assert ("| step | keys/s | Spark JVM | Python workers | driver | Elasticsearch | Kafka "
            "| the benchmark (producer, timing) | registry | machine |") in text  # fmt: skip
    assert "| search | 2,000 | 1.1 | 0.3 | 0.05 | 0.3 | 0.1 | 0.1 | 0.02 | 1.98 |" in text
    assert "| 100 |" not in text  # a step measured before the cores were: no row
    assert sustain_report.cores_table({**report, "search": [{"keys_per_second": 1}]}) == []
