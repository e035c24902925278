"""The JVM limits of the JVM that runs the tasks, derived from ``task_chunk_bytes``.

A task holds about a chunk's bytes at once (:func:`fusion.spark.tasks.byte_chunks`):
Arrow batches of a quarter chunk in direct memory on their way to and from
Python, and the rows and Kafka records of a chunk on the heap. So what the
tasks need grows with ``task_chunk_bytes`` times the task slots, never with
the records' size or count, and the limits follow from those two numbers:

- heap: :data:`HEAP_BASE` for Spark itself plus :data:`HEAP_CHUNKS` chunks per
  slot, at least :data:`HEAP_FLOOR`. With the defaults (4 MiB, 8 slots) that is
  512 MiB, half Spark's own default: a warm burst ran as fast in it (1.54 and
  1.59 times the floor, against 1.66 and 1.57 in 1 GiB), and the collector,
  which fills whatever heap it has under a stream of large records, keeps the
  JVM's resident peak lower (docs/benchmark.md, memory);
- direct memory (``-XX:MaxDirectMemorySize``): :data:`DIRECT_BASE` plus
  :data:`DIRECT_CHUNKS` chunks per slot. Without it the JVM allows as much
  direct memory as heap, so the two could together take twice the heap.

``fusion run`` also reserves the heap when it starts (``-Xms`` at the limit,
``-XX:+AlwaysPreTouch``). Under a stream of large records the collector grows
the heap to its limit whatever is live, so the JVM's footprint would depend on
the records after all; reserved, it is the same at any record size and known
before the first record arrives (docs/benchmark.md, memory).

In local mode the driver's JVM runs the tasks (``spark.driver.memory``,
``spark.driver.extraJavaOptions``); on a cluster each executor does
(``spark.executor.memory``, ``spark.executor.extraJavaOptions``), with
``spark.executor.cores`` slots: without that setting the executors' slots are
not known here and Spark's defaults stay. A limit set in ``[spark.conf]`` wins.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

MIB = 1 << 20
HEAP_FLOOR = 512 * MIB
HEAP_BASE = 256 * MIB
HEAP_CHUNKS = 8  # measured: about 4.5 chunks per slot live at most, with 500 KB records
DIRECT_BASE = 128 * MIB
DIRECT_CHUNKS = 4  # a quarter-chunk batch each way, each in a buffer rounded up to a power of 2
DIRECT_OPTION = "-XX:MaxDirectMemorySize"
RESERVE_OPTIONS = "-XX:+AlwaysPreTouch"

_LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")


@dataclass(frozen=True)
class TaskMemory:
    """The limits of one task-running JVM with ``slots`` task slots."""

    slots: int
    chunk_bytes: int

    @property
    def heap_bytes(self) -> int:
        return max(HEAP_FLOOR, HEAP_BASE + HEAP_CHUNKS * self.slots * self.chunk_bytes)

    @property
    def direct_bytes(self) -> int:
        return DIRECT_BASE + DIRECT_CHUNKS * self.slots * self.chunk_bytes


def local_slots(master: str) -> int | None:
    """The task threads of a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master."""
    found = _LOCAL.match(master.strip())
    if found is None:
        return None
    threads = found.group(1)
    if threads is None:
        return 1
    return (os.cpu_count() or 1) if threads == "*" else int(threads)


def with_task_limits(
    conf: Mapping[str, str], master: str, chunk_bytes: int, reserve: bool = False
) -> dict[str, str]:
    """``conf`` plus the heap and direct-memory limits of the JVM that runs the tasks.

    ``reserve``: that JVM also commits its whole heap when it starts.
    """
    slots = local_slots(master)
    role = "driver"
    if slots is None:
        role = "executor"
        cores = conf.get("spark.executor.cores")
        if cores is None or not cores.isdigit():
            return dict(conf)
        slots = int(cores)
    limits = TaskMemory(slots, chunk_bytes)
    out = dict(conf)
    out.setdefault(f"spark.{role}.memory", f"{limits.heap_bytes // MIB}m")
    options_key = f"spark.{role}.extraJavaOptions"
    options = out.get(options_key, "")
    if DIRECT_OPTION not in options:
        options += f" {DIRECT_OPTION}={limits.direct_bytes // MIB}m"
    if reserve and "-Xms" not in options:
        options += f" -Xms{out[f'spark.{role}.memory']} {RESERVE_OPTIONS}"
    out[options_key] = options.strip()
    return out
