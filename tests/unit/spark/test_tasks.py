"""A task takes its partition in chunks of ``task_chunk_bytes`` and returns each chunk's output."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from fusion.core.config import PipelineConfig
from fusion.spark.tasks import Job, TaskOutput, arrow_slices, byte_chunks, partition_function


def _batch(rows: int, width: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"value": [b"x" * width] * rows})


def test_chunks_stay_within_the_budget_in_order_and_leave_no_row_out() -> None:
    batches = [_batch(10, 100), _batch(0, 100), _batch(10, 100), _batch(30, 100), _batch(1, 5)]
    budget = batches[0].nbytes * 2
    chunks = list(byte_chunks(iter(batches), budget))
    assert [[b.num_rows for b in chunk] for chunk in chunks] == [[10, 10], [30], [1]]
    assert all(sum(b.nbytes for b in c) <= budget for c in chunks if len(c) > 1)
    assert list(byte_chunks(iter([_batch(0, 1)]), budget)) == []


def test_a_task_works_chunk_by_chunk_and_returns_each_chunks_output() -> None:
    config = PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "id", "task_chunk_bytes": 64 * 1024},
            "sources": [{"name": "a"}, {"name": "b"}],
        }
    )
    job = Job("indexers", "indexer", "q", 0, config.pipeline.task_chunk_bytes)
    seen: list[int] = []

    def work(job: Job, table: Any) -> TaskOutput:
        seen.append(table.nbytes)
        return TaskOutput("t-0", [("out", "k", b"v")] * table.num_rows, {"rows": table.num_rows})

    batches = [_batch(100, 300) for _ in range(8)]  # 8 x ~31 KB: 4 chunks of 64 KiB
    out = list(partition_function(job, work)(iter(batches)))
    assert len(seen) == 4 and max(seen) <= 64 * 1024
    assert sum(b.num_rows for b in out) == 800 + 4  # every record, and each chunk's count row
    assert sum(x for x in pa.Table.from_batches(out).column("amount").to_pylist() if x) == 800


def test_a_tasks_output_goes_back_in_arrow_batches_of_a_quarter_chunk() -> None:
    # Each batch sits in the JVM's direct memory on its way back: whole-chunk
    # batches doubled what the tasks took there at 500 KB records.
    config = PipelineConfig.model_validate(
        {
            "pipeline": {"name": "p", "key_field": "id", "task_chunk_bytes": 64 * 1024},
            "sources": [{"name": "a"}, {"name": "b"}],
        }
    )
    job = Job("indexers", "indexer", "q", 0, config.pipeline.task_chunk_bytes)

    def work(job: Job, table: Any) -> TaskOutput:
        return TaskOutput("t-0", [("out", "k", b"v" * 1000)] * 60, {"rows": table.num_rows})

    out = list(partition_function(job, work)(iter([_batch(10, 100)])))
    assert sum(b.num_rows for b in out) == 61
    assert len(out) > 1 and all(b.nbytes <= 16 * 1024 + 1100 for b in out)


def test_slices_keep_every_row_in_order_and_a_big_row_alone() -> None:
    batch = pa.RecordBatch.from_pydict({"value": [b"a" * 10, b"b" * 5000, b"c" * 10, b"d" * 10]})
    slices = list(arrow_slices(batch, 2000))
    assert [v for s in slices for v in s.column(0).to_pylist()] == batch.column(0).to_pylist()
    small = _batch(3, 10)
    assert list(arrow_slices(small, 10_000)) == [small]
