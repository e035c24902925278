"""Ctrl-C during `fusion run`: the first asks the watch loop to stop, the second interrupts."""

from __future__ import annotations

import os
import signal

import pytest

from fusion.spark.watch import ctrl_c_stops_at_next_poll


def test_the_first_ctrl_c_only_sets_the_event_the_second_interrupts() -> None:
    before = signal.getsignal(signal.SIGINT)
    with ctrl_c_stops_at_next_poll() as interrupted:
        os.kill(os.getpid(), signal.SIGINT)  # would raise KeyboardInterrupt mid py4j call
        assert interrupted.is_set()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before
