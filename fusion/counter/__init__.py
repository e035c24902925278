"""The counter stage: keyed state over the acks, firing each key once.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.counter.checkpoint_age import outlived_state as outlived_state
    from fusion.counter.decisions import Now as Now
    from fusion.counter.decisions import Rules as Rules
    from fusion.counter.decisions import deadline_of as deadline_of
    from fusion.counter.engine import engine_here as engine_here
    from fusion.counter.engine import engine_of as engine_of
    from fusion.counter.key_state import STATE_COLUMNS as STATE_COLUMNS
    from fusion.counter.key_state import KeyState as KeyState
    from fusion.counter.key_state import Seen as Seen
    from fusion.counter.query import CounterBatch as CounterBatch
    from fusion.counter.query import restored_state as restored_state
    from fusion.counter.query import start_counter as start_counter
    from fusion.counter.query import start_with_clock as start_with_clock
    from fusion.counter.rules import REENRICH as REENRICH
    from fusion.counter.state import StateSummary as StateSummary
    from fusion.counter.state import has_state as has_state
    from fusion.counter.state import state_of_key as state_of_key
    from fusion.counter.state import summary as summary

__getattr__, __dir__, __all__ = attach(__name__, __file__)
