"""Dimensions: sources keyed by their own key, joined to the keys whose records name them.

A source with ``dimension = true`` is a table like ``brand``: keyed by its own
id, and named by a field of another source (``references = { brand =
"brand_id" }`` on ``item``). The enriched document of an item holds the brand
row it names under the reference's name, ``brand``, as it holds a source's
part. A table referenced twice gets a name per reference (``buyer = {
dimension = "user", field = "buyer_id" }``, ``seller = ...``): the name is
the key's slot, the place in its document, and what a row's change is fanned
out through. The checks here run at load, so a pipeline whose references
cannot be followed stops with one line naming the source and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from fusion.core import ReferenceTable, SourceConfig, key_spec

T = TypeVar("T")


@dataclass(frozen=True)
class Reference:
    """``referrer``'s records name a row of ``dimension`` by the value at ``path``; the key's
    document holds that row under ``name`` (the dimension's own name unless written)."""

    referrer: str
    name: str
    text: str  # the path as written: "brand_id", "after.brand_id"
    dimension: str = ""  # "": the dimension named like the reference

    def __post_init__(self) -> None:
        if not self.dimension:
            object.__setattr__(self, "dimension", self.name)

    @property
    def path(self) -> tuple[str, ...]:
        return key_spec(self.text).path

    @property
    def field(self) -> str:
        """Where the pipeline file sets it, for messages."""
        return f"{self.referrer}.references.{self.name}"


def references_of(sources: Sequence[SourceConfig]) -> tuple[Reference, ...]:
    """Every reference of the pipeline, checked; ValueError naming the field at fault."""
    by_name = {source.name: source for source in sources}
    references = tuple(
        _reference(source.name, name, written)
        for source in sources
        for name, written in sorted(source.references.items())
    )
    for reference in references:
        _check_reference(reference, by_name)
    _check_no_cycle(references)
    _check_referenced(sources, references)
    _check_names_apart(sources, references)
    return references


def _reference(referrer: str, name: str, written: str | ReferenceTable) -> Reference:
    if isinstance(written, str):
        return Reference(referrer, name, written)
    return Reference(referrer, name, written.field, written.dimension)


def _check_reference(reference: Reference, by_name: Mapping[str, SourceConfig]) -> None:
    target = by_name.get(reference.dimension)
    where = f"{reference.field} = {reference.text!r}"
    if "." in reference.name or "/" in reference.name or not reference.name:
        raise ValueError(
            f"{reference.field}: a reference's name is a field of the enriched document, "
            "without '.' or '/'; name it otherwise"
        )
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


def _check_referenced(sources: Sequence[SourceConfig], references: Sequence[Reference]) -> None:
    """Each dimension is named once or more: by a source keyed by the join key, or by a
    dimension (a chain: item → brand → company)."""
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


def _check_names_apart(sources: Sequence[SourceConfig], references: Sequence[Reference]) -> None:
    """The enriched document holds each reference's row under its name, beside the key's
    own parts: two references, or a reference and a part, cannot share a name. A dimension's
    reference puts its row inside the dimension's row (``brand.company``), where the field
    it is read from must not be."""
    parts = {source.name for source in sources if not source.dimension}
    seen: dict[str, Reference] = {}
    declared = {source.name: source.fields for source in sources}
    for reference in references:
        if reference.referrer not in parts:
            if reference.name in declared[reference.referrer]:
                raise ValueError(
                    f"{reference.field}: the {reference.dimension} row goes in the "
                    f"{reference.referrer} row under {reference.name!r}, which "
                    f"{reference.referrer}.fields declares; name the reference otherwise"
                )
            if key_spec(reference.text).path[0] == reference.name:
                raise ValueError(
                    f"{reference.field} = {reference.text!r}: the {reference.dimension} row "
                    f"goes in the {reference.referrer} row under {reference.name!r}, in place "
                    f"of the field it is read from; name the reference otherwise "
                    f'({reference.name}_row = "{reference.text}")'
                )
            continue
        if reference.name in parts:
            raise ValueError(
                f"{reference.field}: {reference.name!r} is the name of a source of this "
                f"pipeline, whose part the enriched document holds there; name the reference "
                f'otherwise ({reference.name}_row = {{ dimension = "{reference.dimension}", '
                f'field = "{reference.text}" }})'
            )
        other = seen.setdefault(reference.name, reference)
        if other is not reference:
            raise ValueError(
                f"{reference.field} and {other.field}: two references named "
                f"{reference.name!r}; the enriched document holds one row under each name, "
                f'so name them apart ({{ dimension = "{reference.dimension}", field = "..." }})'
            )
