"""Walk one slice of an index, a page of hits at a time: a point in time with ``search_after``.

Pages come from a point in time, sorted on a keyword field with doc values
(the join key), so that when the point in time is lost (Elasticsearch
restarted during the walk) a new one continues after the last key seen.
Every call is retried through an outage (:mod:`fusion.elastic.retry`).
Used by ``fusion reconcile`` and by the rebuild of the counter's state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from fusion.elastic.retry import RetryPolicy, call_with_retries

PAGE = 1_000
KEEP_ALIVE = "5m"


def pages(
    es: Elasticsearch,
    index: str,
    sort_field: str,
    part: tuple[int, int],
    retry: RetryPolicy,
    **search: Any,
) -> Iterator[list[dict[str, Any]]]:
    """The hits of slice ``part`` = (slice, slices) of ``index``, a page at a time.

    ``search``: more of the search's parameters (``source``, ``version``);
    by default hits carry no ``_source``.
    """
    n, slices = part
    # Elasticsearch refuses a slice of max 1: one slice is the whole index.
    sliced = {"id": n, "max": slices} if slices > 1 else None
    options = {"source": False} | search
    after: list[Any] | None = None
    while True:
        opened = partial(es.open_point_in_time, index=index, keep_alive=KEEP_ALIVE)
        pit = call_with_retries(opened, "open a point in time", retry)["id"]
        try:
            while True:
                query = partial(
                    es.search,
                    pit={"id": pit, "keep_alive": KEEP_ALIVE},
                    size=PAGE,
                    sort=[{sort_field: "asc"}],
                    search_after=after,
                    track_total_hits=False,
                    slice=sliced,
                    **options,
                )
                response = call_with_retries(query, f"search {index}", retry)
                pit = response.get("pit_id", pit)
                hits = response["hits"]["hits"]
                if not hits:
                    return
                after = hits[-1]["sort"]
                yield hits
        except NotFoundError:
            continue  # the point in time is gone: a new one, after the last key seen
        finally:
            with contextlib.suppress(Exception):  # it expires by itself if this fails
                es.options(ignore_status=404).close_point_in_time(id=pit)
