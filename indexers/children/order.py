"""A keyword that sorts as a value does: what a children array is ordered by in Elasticsearch.

A children source's rows keep their ``order_by`` value as :func:`order_value`
(``fusion.order``, a keyword): Elasticsearch sorts keywords by their bytes,
and this text sorts as the values do, numbers by value whatever their type.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

# Sorts after every order_value: where a search skips the rest of a parent's children.
PAST_EVERY_ORDER = "\U0010ffff"


def order_value(value: Any) -> str:
    """A keyword that sorts as ``value`` does: booleans, then numbers by value, then text by
    code point, then objects and lists (by their JSON); a missing or null value last (as
    PostgreSQL's ``ORDER BY`` puts NULLs)."""
    if isinstance(value, bool):
        return "1" + ("1" if value else "0")
    if isinstance(value, int | float):
        return "2" + _number(Decimal(value))
    if isinstance(value, str):
        return "3" + value
    if value is None:
        return "5"
    return "4" + json.dumps(value, sort_keys=True, ensure_ascii=False)


# Decimal exponents of JSON numbers Python reads: floats from -324 to 308, integers of up
# to 4,300 digits; offset to stay positive and of one width.
_EXP_OFFSET = 50_000
_EXP_WIDTH = 6


def _number(number: Decimal) -> str:
    """A number as text that sorts as numbers do: a sign class, the exponent, the digits
    (negatives' complemented, then closed by ``~`` so that a longer one sorts first)."""
    if number.is_nan():
        return "0"  # Python reads NaN from JSON; before every other number
    if number.is_infinite():
        return "1" if number < 0 else "5"
    if number == 0:
        return "3"
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)  # finite
    # Trailing zeros go into the exponent (normalize() would round to 28 digits).
    text = "".join(map(str, digits)).lstrip("0")
    stripped = text.rstrip("0")
    exponent += len(text) - len(stripped)
    text = stripped
    # d.ddd x 10^e, with e the position of the leading digit
    leading = exponent + len(text) - 1 + _EXP_OFFSET
    if not sign:
        return f"4{leading:0{_EXP_WIDTH}d}{text}"
    flipped = 10**_EXP_WIDTH - 1 - leading
    complement = "".join(str(9 - int(d)) for d in text)
    return f"2{flipped:0{_EXP_WIDTH}d}{complement}~"
