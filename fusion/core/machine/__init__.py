"""The machine Fusion runs on: its processes (from /proc), each process told apart from every
other (a lease's holder), and its free ports.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.core.machine import procfs as procfs
    from fusion.core.machine.holder import Holder as Holder
    from fusion.core.machine.ports import free_port as free_port
    from fusion.core.machine.ports import port_is_free as port_is_free

__getattr__, __dir__, __all__ = attach(__name__, __file__)
