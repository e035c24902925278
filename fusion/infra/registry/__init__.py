"""A schema registry beside Kafka, for Avro sources: Apicurio Registry.

What other packages import from here: the names below, each imported when first
used (:mod:`fusion.core.surface`)."""

from typing import TYPE_CHECKING

from fusion.core.surface import attach

if TYPE_CHECKING:
    from fusion.infra.registry import apicurio as apicurio

__getattr__, __dir__, __all__ = attach(__name__, __file__)
