"""Elasticsearch's errors: bulk writes still refused, retries exhausted, access, a missing index.

Every class roots in :class:`fusion.core.errors.FusionError` and says its exit code.
"""

from __future__ import annotations

from fusion.core import ExitCode, FusionError


class IndexingError(FusionError):
    """Some documents of a bulk write were still refused when the retry budget ran out."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, index: str, pending: int, detail: str) -> None:
        self.index = index
        self.pending = pending
        super().__init__(
            f"{pending} document(s) for {index} still failing after all retries ({detail})"
        )


class RetryBudgetExceeded(FusionError):
    """Elasticsearch kept failing transiently until the retry budget ran out."""

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, what: str, detail: str, budget_seconds: float) -> None:
        self.what = what
        self.detail = detail
        super().__init__(f"{what} still failing after {budget_seconds:.0f} s of retries ({detail})")


class IndexAccessError(FusionError):
    """Elasticsearch refused a write or read on an index for want of a privilege (401/403).

    The deployment's fault, not the record's: nothing is dead-lettered, the
    query stops (every later record would be refused the same way).
    """

    exit_code = ExitCode.CREDENTIALS

    def __init__(self, index: str, status: int, detail: str) -> None:
        self.index = index
        self.status = status
        super().__init__(
            f"Elasticsearch refused access to index {index} (HTTP {status}: {detail}); "
            "grant the configured user the write and read privileges on it "
            "(nothing was dead-lettered)"
        )


class IndexGoneError(FusionError):
    """An index the pipeline writes or reads does not exist (deleted while the pipeline ran)."""

    exit_code = ExitCode.DEPLOYMENT

    def __init__(self, index: str, detail: str) -> None:
        self.index = index
        super().__init__(
            f"index {index} does not exist ({detail}); restore it, or run `fusion run` "
            "again to create it empty (nothing was dead-lettered)"
        )


class IndexBlockedError(FusionError):
    """An index refuses writes for a block on it, not for want of a privilege (403).

    ``index.blocks.write``, ``index.blocks.read_only`` or the disk's flood-stage
    block (``read_only_allow_delete``): every record would meet it, so nothing is
    dead-lettered and the query stops.
    """

    exit_code = ExitCode.DEPLOYMENT

    def __init__(self, index: str, block: str) -> None:
        self.index = index
        self.block = block
        super().__init__(
            f"Elasticsearch refuses writes to index {index}: it is blocked ({block}); a disk "
            "past the flood-stage watermark: free space (Elasticsearch lifts the block below "
            f"the high watermark), else lift it: PUT {index}/_settings "
            '{"index.blocks.write": null, "index.blocks.read_only": null}; '
            "nothing was dead-lettered"
        )


class AlreadyRunningError(FusionError):
    """Another process holds the lease of a component this run would run (:mod:`.lease`)."""

    exit_code = ExitCode.ALREADY_RUNNING

    def __init__(self, pipeline: str, component: str, holder: str) -> None:
        self.pipeline = pipeline
        self.component = component
        self.holder = holder
        super().__init__(
            f"pipeline {pipeline} already runs its {component} in another process: {holder}; "
            "stop that one first (nothing was written; one process per pipeline component)"
        )


class LeaseLostError(FusionError):
    """Another process took over a component this one ran: this one stops."""

    exit_code = ExitCode.ALREADY_RUNNING

    def __init__(self, pipeline: str, component: str, holder: str) -> None:
        self.pipeline = pipeline
        self.component = component
        self.holder = holder
        super().__init__(
            f"pipeline {pipeline}: another process took its {component} over ({holder}) while "
            "this one could not renew its lease in Elasticsearch; this one stops"
        )
