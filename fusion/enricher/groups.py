"""How many keys an enrichment task takes at once: a group whose documents fit a byte budget."""

from __future__ import annotations

from typing import ClassVar

from fusion.enricher.spec import EnrichSpec


class GroupSizer:
    """How many keys a task enriches at once, for their documents to stay near a byte budget.

    A key's documents are not known in size before they are fetched, so the
    first group of a worker assumes the largest (every source at
    ``max_record_bytes``); each group then sizes the next by what its own keys
    weighed. The estimate lives as long as the worker (Spark reuses it for
    later tasks), so a steady stream pays that first small group once.
    """

    _ESTIMATES: ClassVar[dict[str, float]] = {}

    def __init__(self, name: str, budget: int, worst: float) -> None:
        self.name = name
        self.budget = budget
        self.worst = worst

    @classmethod
    def of(cls, spec: EnrichSpec) -> GroupSizer:
        worst = float(len(spec.sources) * spec.max_record_bytes)
        return cls(spec.enriched_index, spec.task_chunk_bytes, worst)

    def keys(self) -> int:
        per_key = self._ESTIMATES.get(self.name, self.worst)
        return max(1, int(self.budget // max(per_key, 1.0)))

    def observe(self, keys: int, size: int) -> None:
        if keys and size:
            self._ESTIMATES[self.name] = min(self.worst, size / keys)
