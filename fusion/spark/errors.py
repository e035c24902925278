"""The errors of Spark queries: a stopped query, a failed micro-batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusion.core import ExitCode, FusionError

if TYPE_CHECKING:
    pass


class QueryFailedError(FusionError):
    """A streaming query stopped with an error.

    ``cause``: the exit code of the Fusion error a task stopped it with (an
    index that is gone, Kafka refusing access), which the command ends with.
    """

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, query: str, detail: str, cause: ExitCode | None = None) -> None:
        self.query = query
        self.detail = detail
        self.cause = cause
        super().__init__(
            f"query {query} failed: {detail}; fix the cause and run again, "
            "it resumes from its checkpoint"
        )

    def code(self) -> ExitCode:
        return self.cause if self.cause is not None else self.exit_code


class StageError(FusionError):
    """A stage's micro-batch failed in its tasks; the message is the first cause worth reading."""

    exit_code = ExitCode.QUERY_FAILED

    def __init__(self, query: str, detail: str) -> None:
        self.query = query
        self.detail = detail
        super().__init__(f"micro-batch of {query} failed: {detail}")


class CheckpointLostError(FusionError):
    """A query would start on an empty checkpoint of a pipeline that ran before."""

    exit_code = ExitCode.CHECKPOINT_LOST

    def __init__(self, pipeline: str, checkpoint: str, evidence: list[str]) -> None:
        self.pipeline = pipeline
        self.checkpoint = checkpoint
        self.evidence = evidence
        super().__init__(
            f"pipeline {pipeline} ran before ({'; '.join(evidence)}) but its checkpoint "
            f"{checkpoint} is empty: started so, it would read its topics and fire its keys "
            "again. Restore the "
            "checkpoint (or fix checkpoint_dir), or run `fusion run --rebuild-state` to "
            "rebuild the counter's state from Elasticsearch and Kafka (only keys that never "
            "fired fire), or delete the pipeline's topics, indexes and groups to start afresh"
        )
