"""Dimensions: sources keyed by their own key, joined to the keys whose records name them.

A source with ``dimension = true`` is a table like ``brand``: keyed by its own
id, and named by a field of another source (``references = { brand =
"brand_id" }`` on ``item``). The enriched document of an item holds the brand
row it names under ``brand``, as it holds a source's part. The checks here
run at load, so a pipeline whose references cannot be followed stops with
one line naming the source and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from fusion.core import SourceConfig, key_spec

T = TypeVar("T")


@dataclass(frozen=True)
class Reference:
    """``referrer``'s records name a row of ``dimension`` by the value at ``path``."""

    referrer: str
    dimension: str
    text: str  # the path as written: "brand_id", "after.brand_id"

    @property
    def path(self) -> tuple[str, ...]:
        return key_spec(self.text).path

    @property
    def field(self) -> str:
        """Where the pipeline file sets it, for messages."""
        return f"{self.referrer}.references.{self.dimension}"


def references_of(sources: Sequence[SourceConfig]) -> tuple[Reference, ...]:
    """Every reference of the pipeline, checked; ValueError naming the field at fault."""
    by_name = {source.name: source for source in sources}
    references = tuple(
        Reference(source.name, dimension, path)
        for source in sources
        for dimension, path in sorted(source.references.items())
    )
    for reference in references:
        _check_reference(reference, by_name)
    _check_no_cycle(references)
    _check_referenced_once(sources, references)
    return references


def _check_reference(reference: Reference, by_name: Mapping[str, SourceConfig]) -> None:
    target = by_name.get(reference.dimension)
    where = f"{reference.field} = {reference.text!r}"
    if target is None:
        raise ValueError(
            f"{where} names {reference.dimension!r}, which is no source of this pipeline"
        )
    if reference.dimension == reference.referrer:
        raise ValueError(f"{where}: a dimension cannot reference itself")
    if not target.dimension:
        raise ValueError(
            f"{where} names {reference.dimension!r}, which is not a dimension: add "
            f"dimension = true to it, or join it on the key as a source"
        )
    if key_spec(reference.text).in_record_key:
        raise ValueError(f"{where}: a reference is a field of the record's value, not its key")


def _check_no_cycle(references: Sequence[Reference]) -> None:
    """No dimension reaches itself through other dimensions (brand → company → brand)."""
    next_of: dict[str, list[Reference]] = {}
    for reference in references:
        next_of.setdefault(reference.referrer, []).append(reference)
    for start in next_of:
        _walk(start, next_of, [start])


def _walk(at: str, next_of: Mapping[str, Sequence[Reference]], path: list[str]) -> None:
    for reference in next_of.get(at, ()):
        if reference.dimension in path:
            cycle = " → ".join([*path[path.index(reference.dimension) :], reference.dimension])
            raise ValueError(
                f"{reference.field}: dimensions reference each other in a cycle ({cycle}); "
                "remove one of the references"
            )
        _walk(reference.dimension, next_of, [*path, reference.dimension])


def _check_referenced_once(
    sources: Sequence[SourceConfig], references: Sequence[Reference]
) -> None:
    """Each dimension is named by exactly one source, itself keyed by the join key."""
    for source in sources:
        if not source.dimension:
            continue
        named_by = [r for r in references if r.dimension == source.name]
        if not named_by:
            raise ValueError(
                f"dimension {source.name!r} is referenced by no source: add "
                f'references = {{ {source.name} = "<field>" }} to the source whose records '
                "name its rows"
            )
        if len(named_by) > 1:
            fields = ", ".join(r.field for r in named_by)
            raise ValueError(
                f"dimension {source.name!r} is referenced by more than one source ({fields}): "
                "the enriched document holds one row under its name; keep one reference"
            )
        chained = [r for r in named_by if r.referrer in _dimension_names(sources)]
        if chained:
            raise ValueError(
                f"{chained[0].field}: a dimension referencing a dimension (a chain, "
                f"{chained[0].referrer} → {source.name}) is not supported yet; reference "
                f"{source.name!r} from a source keyed by the join key"
            )


def _dimension_names(sources: Sequence[SourceConfig]) -> set[str]:
    return {source.name for source in sources if source.dimension}
