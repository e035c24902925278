"""Python's and the JVM's definitions of the counter's rows say the same thing."""

from __future__ import annotations

import re

from fusion.counter import rows
from fusion.infra import jvm_code as jvm

JAVA = jvm.SOURCES / "fusion" / "contract" / "CounterRows.java"


def _java_constant(name: str) -> str:
    """The string a ``static final`` constant of CounterRows holds (its literals joined)."""
    source = JAVA.read_text()
    match = re.search(rf"\b{name}\s*=\s*(.*?);", source, re.S)
    assert match, f"{name} is not defined in {JAVA}"
    literals = re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1))
    return "".join(literals).encode().decode("unicode_escape")


def _names(ddl: str) -> tuple[str, ...]:
    return tuple(part.split()[0] for part in ddl.split(","))


def test_the_input_columns_and_schema_are_the_jvms() -> None:
    assert ",".join(rows.INPUT_COLUMNS) == _java_constant("INPUT_COLUMNS")
    assert _java_constant("INPUT") == rows.INPUT_SCHEMA
    assert _names(rows.INPUT_SCHEMA) == rows.INPUT_COLUMNS


def test_the_output_schema_is_the_jvms() -> None:
    assert _java_constant("OUTPUT") == rows.OUTPUT_SCHEMA
    assert _names(rows.OUTPUT_SCHEMA) == rows.OUTPUT_COLUMNS


def test_the_counts_key_is_the_jvms() -> None:
    assert _java_constant("COUNTS_KEY") == rows.COUNTS_KEY
    assert _java_constant("KEY") == f"{rows.INPUT_COLUMNS[0]} STRING"
