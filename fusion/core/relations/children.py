"""Children: a source whose rows each belong to one key, gathered into an array (docs/children.md).

A source with ``parent`` is a table like ``order_lines``: each row has its own
key (``key = "line_id"``) and names the key it belongs to (``parent =
"order_id"``). The enriched order holds its lines as an array under the
source's name. The checks here run at load, so a children source that cannot
work stops with one line naming the source and the field.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusion.core import SourceConfig, key_spec

# The settings that only shape a children source's array.
ARRAY_SETTINGS = ("order_by", "mapping", "max_children")


def check_children(sources: Sequence[SourceConfig]) -> None:
    """ValueError naming the source and field of a children source that cannot work."""
    for source in sources:
        if source.children:
            _check_child(source)
        else:
            fields = SourceConfig.model_fields
            stray = [n for n in ARRAY_SETTINGS if getattr(source, n) != fields[n].default]
            if stray:
                raise ValueError(
                    f"{source.name}.{stray[0]} shapes the array of a children source, and "
                    f'{source.name!r} has no parent: add parent = "<field>" or drop it'
                )
    if all(source.dimension or source.children for source in sources):
        raise ValueError(
            "no source is keyed by the join key (each is a dimension or children): at least "
            "one must hold the key's own part"
        )


def _check_child(source: SourceConfig) -> None:
    name = source.name
    if source.key is None:
        raise ValueError(
            f"{name}.key is missing: a children source needs its rows' own key "
            f'(key = "line_id"); parent names the key they belong to'
        )
    if source.dimension:
        raise ValueError(
            f"{name}.parent: a source is children or a dimension, not both; drop one of "
            "parent and dimension = true"
        )
    if source.references:
        raise ValueError(
            f"{name}.references: children naming dimension rows are not supported yet; "
            "drop the references of the children source"
        )
    if source.required:
        raise ValueError(
            f"{name}.required: children never hold a key back (an order without lines is "
            "an order); drop required = true"
        )
    if source.timeout is not None:
        raise ValueError(
            f"{name}.timeout: children are not waited for, so they have no timeout; drop it"
        )
    assert source.parent is not None  # a children source has one
    if key_spec(source.parent).text == key_spec(source.key).text:
        raise ValueError(f"{name}.parent is its key too: a row cannot be its own parent")
