"""The JVM that runs the tasks gets limits from the chunk budget and its task slots."""

from __future__ import annotations

import pytest

from fusion.spark.memory_limits import MIB, TaskMemory, local_slots, with_task_limits


@pytest.mark.parametrize(
    ("master", "slots"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[8,4]", 8),
        ("local[12, 2]", 12),
        ("spark://m:7077", None),
    ],
)
def test_the_slots_of_a_local_master(master: str, slots: int | None) -> None:
    assert local_slots(master) == slots


def test_local_mode_limits_the_drivers_jvm_by_chunks_times_slots() -> None:
    conf = with_task_limits({"spark.driver.extraJavaOptions": "-Xlog:gc"}, "local[8,4]", 16 * MIB)
    # 256 MiB for Spark + 8 chunks per slot; 128 MiB + 4 chunks per slot of direct memory
    assert conf["spark.driver.memory"] == f"{256 + 8 * 8 * 16}m"
    assert (
        conf["spark.driver.extraJavaOptions"]
        == f"-Xlog:gc -XX:MaxDirectMemorySize={128 + 4 * 8 * 16}m"
    )
    assert "spark.executor.memory" not in conf


def test_the_defaults_give_half_sparks_heap_and_never_less() -> None:
    assert TaskMemory(slots=8, chunk_bytes=4 * MIB).heap_bytes == 512 * MIB
    assert TaskMemory(slots=1, chunk_bytes=64 * 1024).heap_bytes == 512 * MIB
    assert TaskMemory(slots=8, chunk_bytes=4 * MIB).direct_bytes == 256 * MIB


def test_a_cluster_limits_its_executors_when_their_cores_are_known() -> None:
    conf = with_task_limits({"spark.executor.cores": "2"}, "spark://m:7077", 64 * MIB)
    assert conf["spark.executor.memory"] == f"{256 + 8 * 2 * 64}m"
    assert conf["spark.executor.extraJavaOptions"] == f"-XX:MaxDirectMemorySize={128 + 4 * 2 * 64}m"
    assert with_task_limits({}, "spark://m:7077", 64 * MIB) == {}


def test_limits_set_by_the_user_win() -> None:
    mine = {
        "spark.driver.memory": "3g",
        "spark.driver.extraJavaOptions": "-XX:MaxDirectMemorySize=1g",
    }
    assert with_task_limits(mine, "local[8]", 64 * MIB) == mine


def test_a_running_pipeline_reserves_its_whole_heap_at_start() -> None:
    conf = with_task_limits({}, "local[8,4]", 4 * MIB, reserve=True)
    assert conf["spark.driver.extraJavaOptions"].endswith("-Xms512m -XX:+AlwaysPreTouch")
    mine = with_task_limits({"spark.driver.memory": "2g"}, "local[8,4]", 4 * MIB, reserve=True)
    assert "-Xms2g -XX:+AlwaysPreTouch" in mine["spark.driver.extraJavaOptions"]
    assert (
        "-Xms" not in with_task_limits({}, "local[8,4]", 4 * MIB)["spark.driver.extraJavaOptions"]
    )
