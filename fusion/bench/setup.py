"""What every benchmark run starts from: its options, its pipeline, and its records sent on time."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from fusion.bench.generator import Dataset
from fusion.core import PipelineConfig, Settings, SourceFormat
from fusion.kafka import Publisher, delete_topics, topics

Mode = Literal["naive", "counted", "batched"]
MODES: tuple[Mode, ...] = ("naive", "counted", "batched")
SOURCE_NAMES = [
    "billing", "insurance", "medicine", "treatment", "lab", "pharmacy", "radiology", "admission",
]  # fmt: skip
_PIPELINE = {
    "naive": {},  # run as `fusion run --only naive`: see run_mode
    "counted": {"lookup": "per-source"},
    "batched": {"lookup": "batched"},
}


@dataclass(frozen=True)
class BenchOptions:
    keys: int
    sources: int
    modes: tuple[Mode, ...] = MODES
    seed: int = 42
    runs: int = 1
    # Records per second to produce at; 0 sends everything at once (a burst).
    rate: float = 0.0
    # Records per micro-batch and query (the pipeline's default when None).
    max_offsets: int | None = None
    # First this many bursts of the same size on other keys, unmeasured: the measured burst
    # meets a running pipeline whose JVM compiled (some of) its hot code, as a burst in
    # production does. 0: a burst into a fresh process.
    warm: int = 0
    format: SourceFormat = "json"  # "debezium": each record a change event of its row
    pipeline: tuple[tuple[str, str], ...] = ()  # [pipeline] options from the command line (--set)


def bench_config(settings: Settings, mode: Mode, options: BenchOptions, tag: str) -> PipelineConfig:
    """A pipeline of ``options.sources`` sources, named for one mode of one run, on fresh topics."""
    sources = options.sources
    extra = [f"s{i + 1}" for i in range(sources)]
    names = SOURCE_NAMES[:sources] if sources <= len(SOURCE_NAMES) else extra
    name = f"bench-{mode}-{tag}"
    data = settings.model_dump(mode="python")
    data["pipeline"] = {"name": name, "key_field": "txn_id", **_PIPELINE[mode]}
    data["pipeline"].update(options.pipeline)
    if options.max_offsets:
        data["pipeline"]["max_offsets_per_trigger"] = options.max_offsets
    data["sources"] = [{"name": n, "topic": f"{name}.{n}", "format": options.format} for n in names]
    return PipelineConfig.model_validate(data)


def produce_timed(
    config: PipelineConfig,
    dataset: Dataset,
    rate: float,
    due: float | None = None,
    stop: threading.Event | None = None,
) -> tuple[float, dict[str, float]]:
    """Send at ``rate`` per second if set, the first record ``due`` (epoch s; late: catch
    up) if given, until every record is sent or ``stop`` is set; return when the first was
    due and each key's last send time."""
    publisher = Publisher(config.kafka, {"linger.ms": 5, "batch.num.messages": 10_000})
    last_send: dict[str, float] = {}
    first = time.time() if due is None else due
    # Pace in steps of up to 100 records, at least 50 steps a second.
    every = max(1, min(100, int(rate / 50)))
    for sent, (topic, key, value) in enumerate(dataset.records):
        if rate and sent % every == 0:  # ahead of schedule: wait for it
            if stop is not None and stop.is_set():
                break
            ahead = first + sent / rate - time.time()
            if ahead > 0:
                time.sleep(ahead)
        publisher.send(topic, key, value)
        last_send[key] = time.time()
    publisher.flush()
    return first, last_send


@contextlib.contextmanager
def generating(config: PipelineConfig, dataset: Dataset, rate: float) -> Iterator[None]:
    """The load generator sending ``dataset`` to ``config``'s source topics at ``rate``
    records/s (0: all at once) while the block runs, as it does to a pipeline: a floor
    measured in the block pays the generator's cores as the pipeline does. No pipeline reads
    the topics; they are deleted after."""
    topics.ensure_topics(config)
    stop = threading.Event()
    sender = threading.Thread(target=produce_timed, args=(config, dataset, rate, None, stop))
    sender.start()
    try:
        yield
    finally:
        stop.set()
        sender.join()
        delete_topics(config, config.all_topics())
