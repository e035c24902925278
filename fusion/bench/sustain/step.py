"""One step of the sustained-load benchmark: fresh keys at a steady rate, measured.

:func:`steady_dataset` makes a step's keys; :class:`StepMeter` sends them at
the step's rate, samples the backlog meanwhile, waits for every key to be
enriched and judges the step (:func:`fusion.bench.meter.judge`).

Nothing reads the pipeline's records while it works on them. Once a step has
drained, a key's latency is taken from what the pipeline wrote: from its last
source record's Kafka timestamp, as the enriched document stores it
(``fusion.last_record_at``), to its enriched record's on the enriched topic
(written once Elasticsearch has the document). The hops come from the same
read of the topics (:func:`.hops.read_since`).
"""

from __future__ import annotations

import random
import threading
import time

from fusion.bench import (
    SAMPLE_SECONDS,
    Dataset,
    GenOptions,
    Objective,
    PipelineProcess,
    Seen,
    Sent,
    Step,
    SustainError,
    build_dataset,
    cores_between,
    cpu_snapshot,
    enriched_of,
    enriched_times,
    judge,
    produce_timed,
    server_pids,
)
from fusion.bench.sustain.hops import TopicTimes, hop_summary, read_since, topic_ends
from fusion.bench.sustain.options import SustainOptions
from fusion.core import PipelineConfig
from fusion.elastic import client as es_client
from fusion.kafka import lag
from fusion.observe import Figures, names
from fusion.topology import reads, topology_of


def steady_dataset(
    config: PipelineConfig, rate: float, seconds: float, seed: int, prefix: str
) -> Dataset:
    """``rate * seconds`` complete keys; each second's records shuffled among themselves.

    So a key's N records arrive in random order within about a second, as
    from N systems that each publish their part soon after the event.
    """
    keys = max(1, round(rate * seconds))
    options = GenOptions(keys=keys, seed=seed, duplicate_rate=0, missing_rate=0, shuffle=False,
                         key_prefix=prefix)  # fmt: skip
    data = build_dataset(config, options)
    window = max(len(config.sources), round(rate * len(config.sources)))
    rng = random.Random(seed)
    records = data.records
    for start in range(0, len(records), window):
        chunk = records[start : start + window]
        rng.shuffle(chunk)
        records[start : start + window] = chunk
    return data


class StepMeter:
    """Runs one step: fresh keys at a rate, backlog samples, latencies per key and hop."""

    def __init__(
        self,
        config: PipelineConfig,
        options: SustainOptions,
        run: PipelineProcess,
        objective: Objective,
    ) -> None:
        self.config = config
        self.options = options
        self.run = run
        self.es = es_client.connect(config.elasticsearch)
        self.objective = objective
        self.stages = reads(topology_of(config).select())
        self.count = 0
        self.servers = server_pids(config)

    def step(self, rate: float, seconds: float | None = None) -> Step:
        seconds = seconds or self.options.step_seconds
        self.count += 1
        prefix = f"S{self.count}"
        data = steady_dataset(self.config, rate, seconds, self.options.seed + self.count, prefix)
        keys = list(data.expected)
        before = self._counts()
        times = TopicTimes(self.config)
        starts = topic_ends(self.config, times.topics)
        samples: list[tuple[float, int]] = []
        sampling = threading.Event()
        sampler = threading.Thread(target=self._sample, args=(samples, sampling), daemon=True)
        sampler.start()
        cpu = self._cpu()
        first, last_send = produce_timed(self.config, data, rate * self.options.sources)
        elapsed = time.time() - first
        cores = cores_between(cpu, self._cpu(), elapsed)
        sampling.set()
        sampler.join(timeout=30)
        drained, deadline = self._drain(prefix, len(keys))
        after = self._counts()
        lookups, enriched = (
            a - b for a, b in zip(_requests(after), _requests(before), strict=True)
        )
        read_since(self.config, starts, times)
        stored = enriched_times(self.es, self.config, prefix)
        found = {k: at for k in keys if (at := times.of(k).enriched) is not None and at <= deadline}
        sent = Sent(rate, keys, first, elapsed, last_send | _last_records(stored))
        hops = hop_summary(times.of(key) for key in keys)
        seen = Seen(found, samples, drained, lookups, enriched, hops, per_batch(before, after),
                    cores)  # fmt: skip
        return judge(sent, seen, self.options.sources, self.objective)

    def _cpu(self) -> dict[str, float]:
        assert self.run.process is not None
        return cpu_snapshot(self.run.process.pid, self.servers)

    def _sample(self, samples: list[tuple[float, int]], done: threading.Event) -> None:
        while not done.wait(SAMPLE_SECONDS):
            samples.append((time.time(), lag.behind(self.config, self.stages)))

    def _drain(self, prefix: str, keys: int) -> tuple[float, float]:
        """Wait until every key is enriched and every query committed its input: how long
        that took, and until when (epoch s) a key enriched counts as within the drain time."""
        started = time.monotonic()
        deadline = time.time() + self.options.drain_seconds
        while time.time() <= deadline:
            self.run.check()
            if self._caught_up(prefix, keys):
                return time.monotonic() - started, deadline
            time.sleep(0.5)
        # Not drained in time: let it finish anyway (up to 10 min), so the next
        # step starts from an empty pipeline; this step counts as not keeping up.
        give_up = time.monotonic() + 600
        while not self._caught_up(prefix, keys):
            self.run.check()
            if time.monotonic() > give_up:
                raise SustainError(
                    f"the pipeline did not catch up within 10 min after a step at "
                    f"{keys} keys; fix: lower --start-rate or --max-rate"
                )
            time.sleep(1)
        return self.options.drain_seconds, deadline

    def _caught_up(self, prefix: str, keys: int) -> bool:
        enriched = enriched_of(self.es, self.config, prefix) == keys
        return enriched and lag.behind(self.config, self.stages) == 0

    def _counts(self) -> dict[str, int]:
        """The pipeline's cumulative counts, from its stages' last markers, and under
        :data:`BATCHES` the sum of their batch ids (batches run so far)."""
        counts: dict[str, int] = {BATCHES: 0}
        for marker, _ in lag.stage_markers(self.config, self.stages).values():
            if marker is None:
                continue
            counts[BATCHES] += marker.batch
            for name, value in marker.counts.items():
                counts[name] = counts.get(name, 0) + value
        return counts


BATCHES = "batches"


def _last_records(stored: dict[str, tuple[float, float | None]]) -> dict[str, float]:
    """Each key's last source record's Kafka timestamp, as its enriched document stores it."""
    return {key: last for key, (_, last) in stored.items() if last is not None}


def _requests(counts: dict[str, int]) -> tuple[int, int]:
    """(lookups, enriched keys) of cumulative counts."""
    figures = Figures(counts)
    return figures.lookups, figures.enriched


def per_batch(before: dict[str, int], after: dict[str, int]) -> dict[str, float]:
    """Each stage's milliseconds (:data:`fusion.observe.names.STAGES`, summed over tasks)
    per batch between two readings of the counts; nothing if no batch ran."""
    batches = after.get(BATCHES, 0) - before.get(BATCHES, 0)
    if batches <= 0:
        return {}
    spent = {name: after.get(name, 0) - before.get(name, 0) for name in names.STAGES}
    return {name.removeprefix("ms."): round(ms / batches, 1) for name, ms in spent.items() if ms}


def spark_phases(counts: dict[str, int]) -> dict[str, dict[str, float]]:
    """Per query, Spark's own phases of a batch that read rows (``durationMs``: planning,
    offsets, ``addBatch``...) in milliseconds per such batch, over a whole run, with their
    number under ``batches``: from the pipeline's final counts (its listener's)."""
    phases: dict[str, dict[str, float]] = {}
    for name, value in counts.items():
        if name.startswith("batches.") and value:
            query = name.removeprefix("batches.")
            prefix = names.query_phase_ms(query, "")
            spent = {k.removeprefix(prefix): v for k, v in counts.items() if k.startswith(prefix)}
            phases[query] = {"batches": value} | {
                phase: round(ms / value, 1) for phase, ms in sorted(spent.items())
            }
    return phases
