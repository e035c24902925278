"""The one line worth reading in a Spark error, and the Fusion error class it names."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fusion.core import FusionError

if TYPE_CHECKING:
    pass


_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exceeded))(: .*)?$")


# "java.lang.IllegalStateException: KafkaAccessError: ..." from fusion.output.Writer.
_JVM_NAMED = re.compile(r"Exception: ((?:Kafka\w*|MessageTooLarge|Transaction|Fenced)Error: .*)$")


_JVM_PACKAGES = ("org.", "java.", "javax.", "scala.", "py4j.", "pyspark.errors.")


def root_cause(text: str) -> str:
    """The most telling line of a Spark error's text (a Java stack trace with Python inside).

    The innermost Python exception raised by Fusion or a library it calls,
    else the first line of the text.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = [
        line for line in lines if _EXCEPTION_LINE.match(line) and not line.startswith(_JVM_PACKAGES)
    ]
    if not found:
        # The executor's JVM writer names Fusion's error inside a Java exception's message.
        found = [match.group(1) for line in lines if (match := _JVM_NAMED.search(line))]
    return (found[-1] if found else lines[0] if lines else "no message")[:500]


def error_class(cause: str) -> tuple[type[FusionError], str] | None:
    """The first Fusion error class a :func:`root_cause` line names, and the text after it.

    ``micro-batch of single failed: MessageTooLargeError: ...``: the stage's
    wrapping first, the task's error inside it.
    """
    classes: dict[str, type[FusionError]] = {}
    pending: list[type[FusionError]] = [FusionError]
    while pending:
        cls = pending.pop()
        classes[cls.__name__] = cls
        pending += cls.__subclasses__()
    for match in re.finditer(r"(\w+Error): ", cause):
        found = classes.get(match.group(1))
        if found is not None and found.__name__ != "StageError":
            return found, cause[match.end() :]
    return None
