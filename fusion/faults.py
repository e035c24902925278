"""Named crash points for fault-injection tests: ``FUSION_CRASH_AT=<point>[,<point>...]``.

A stage calls :func:`crash_point` at the moments where a crash is most
dangerous (between an Elasticsearch write and its ack, inside a Kafka
transaction, ...). When the environment names that point, the process kills
itself with SIGKILL right there: no ``finally``, no flush, exactly like
``kill -9`` or a lost machine. ``point@N`` crashes on the N-th pass instead of
the first. Unset (always, outside the tests), a crash point costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter

ENV = "FUSION_CRASH_AT"
# Every stage's Kafka transaction also has "<stage>.before_commit" (records
# produced, not committed) and "<stage>.after_commit" (committed, Spark's batch
# not yet), with <stage> = indexer-<source>, counter or enricher.
POINTS = (
    "indexer.before_bulk",
    "indexer.after_bulk",
    "enricher.after_lookup",
    "enricher.after_write",
)

_passes: Counter[str] = Counter()
_lock = threading.Lock()


def crash_point(name: str) -> None:
    """SIGKILL this process if ``FUSION_CRASH_AT`` names ``name`` (see the module docstring)."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    for spec in wanted.split(","):
        point, _, nth = spec.strip().partition("@")
        if point != name:
            continue
        with _lock:
            _passes[name] += 1
            hit = _passes[name] == int(nth or 1)
        if hit:
            os.kill(os.getpid(), signal.SIGKILL)
