"""A lease's holder: told alive, gone or unknown from this process."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time

from fusion.core.machine import procfs
from fusion.core.machine.holder import Holder


def test_this_process_is_alive_to_itself_and_round_trips_through_its_document() -> None:
    here = Holder.this_process()
    assert here.pid == os.getpid() and here.start_ticks > 0 and here.boot
    assert Holder.from_doc(here.to_doc()) == here
    assert here.liveness(here) == "alive"


def test_a_process_that_ended_is_gone_and_a_reused_pid_is_another_process() -> None:
    here = Holder.this_process()
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert dataclasses.replace(here, pid=ended.pid).liveness(here) == "gone"
    zombie = subprocess.Popen(["true"])  # ended, not yet reaped by its parent
    while (found := procfs.stat(zombie.pid)) is not None and found.state != "Z":
        time.sleep(0.01)
    started = procfs.start_ticks(zombie.pid) or 0
    assert dataclasses.replace(here, pid=zombie.pid, start_ticks=started).liveness(here) == "gone"
    zombie.wait()
    # The same pid, started at another time: the holder is not this process.
    assert dataclasses.replace(here, start_ticks=here.start_ticks - 1).liveness(here) == "gone"


def test_a_holder_on_another_machine_or_boot_is_unknown() -> None:
    here = Holder.this_process()
    assert dataclasses.replace(here, host="elsewhere").liveness(here) == "unknown"
    assert dataclasses.replace(here, boot="another-boot").liveness(here) == "unknown"


def test_a_document_missing_fields_still_reads_and_names_its_process() -> None:
    holder = Holder.from_doc({"host": "h", "pid": 7})
    assert holder.describe().startswith("pid 7 on h")
