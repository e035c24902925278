"""Topics the pipeline created are listed before ensure_topics returns."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fusion.core.errors import TopologyError
from fusion.kafka import topics


class _Broker:
    """An admin client whose metadata lists a new topic only from the ``lists_from``-th look."""

    def __init__(self, lists_from: int) -> None:
        self.looks = 0
        self.lists_from = lists_from

    def list_topics(self, timeout: float) -> SimpleNamespace:
        self.looks += 1
        listed = ["t1", "t2"] if self.looks >= self.lists_from else ["t1"]
        return SimpleNamespace(topics=dict.fromkeys(listed))


def test_a_created_topic_is_waited_for_until_the_broker_lists_it() -> None:
    broker = _Broker(lists_from=3)

    topics._wait_listed(broker, ["t1", "t2"])

    assert broker.looks == 3


def test_a_topic_never_listed_is_one_line_naming_it() -> None:
    said = r"topic t2: created, but the broker did not list it within 0\.3 s"
    with pytest.raises(TopologyError, match=said):
        topics._wait_listed(_Broker(lists_from=10**6), ["t1", "t2"], timeout=0.3)
