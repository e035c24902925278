"""The topics a pipeline writes, named from the pipeline's name unless ``[pipeline]`` sets them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fusion.core.config_tables import PipelineSection


class TopicNames:
    """:class:`fusion.core.config.PipelineConfig`'s output and bookkeeping topics."""

    if TYPE_CHECKING:
        pipeline: PipelineSection

        @property
        def name(self) -> str: ...

    @property
    def acks_topic(self) -> str:
        return self.pipeline.acks_topic or f"{self.name}.acks"

    @property
    def ready_topic(self) -> str:
        return self.pipeline.ready_topic or f"{self.name}.ready"

    @property
    def enriched_topic(self) -> str:
        return self.pipeline.enriched_topic or f"{self.name}.enriched"

    @property
    def dlq_topic(self) -> str:
        return self.pipeline.dlq_topic or f"{self.name}.dlq"

    @property
    def incomplete_topic(self) -> str:
        return self.pipeline.incomplete_topic or f"{self.name}.incomplete"

    @property
    def updates_topic(self) -> str:
        return self.pipeline.updates_topic or f"{self.name}.updated"

    @property
    def fanout_topic(self) -> str:
        """Dimension rows whose keys are owed slot acks (:mod:`acks.fanout`)."""
        return f"{self.name}.fanout"

    @property
    def slots_topic(self) -> str:
        """Slot acks, read back by what counts: a replayed batch counts the same ones."""
        return f"{self.name}.slots"

    @property
    def markers_topic(self) -> str:
        """Compacted topic of each query's last batch (:mod:`fusion.kafka.exactly_once`)."""
        return self.pipeline.markers_topic or f"{self.name}.markers"

    @property
    def clock_topic(self) -> str:
        """The counter's clock: a tick when a deadline is due (:mod:`fusion.counter.clock`)."""
        return f"{self.name}.clock"
