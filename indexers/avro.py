"""Avro records in a schema registry's wire format, decoded on the executors.

A record of an Avro topic (Confluent's wire format) is a zero byte, the id of
its writer schema (4 bytes, big-endian) and the Avro body. The schema comes
from the registry by id (``GET <url>/schemas/ids/<id>``), once per id and
Python worker: a producer that evolves its schema mid-stream gets a new id, and
each record is read with the schema it was written with. The record becomes
the JSON document every later step indexes: bytes as base64, decimals as
their text (as Debezium's ``decimal.handling.mode = string`` writes them),
dates and times in ISO-8601.

A record that is not in the wire format, names an id the registry does not
have, or does not decode with its schema raises :class:`NotAvro`: a dead
letter with the reason. A registry that does not answer is retried within
the pipeline's retry budget, then stops the query with the exit code of an
unavailable server (:class:`~fusion.core.errors.ServiceUnavailableError`).
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from decimal import Decimal
from typing import Any, ClassVar

from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential,
)

from fusion.core import CredentialsError, RegistrySettings, ServiceUnavailableError

MAGIC = 0
HEADER = 5  # the zero byte and the schema id


class NotAvro(Exception):
    """Why a record cannot be read as Avro; ``str(self)`` is the dead letter's reason."""


class _Unanswered(Exception):
    """The registry did not answer (a refused connection, a timeout, a 5xx): retried."""


class Schemas:
    """The registry's writer schemas by id: fetched on first use, kept for the worker's life."""

    _parsed: ClassVar[dict[tuple[str, int], Any]] = {}

    def __init__(self, registry: RegistrySettings, budget_seconds: float) -> None:
        if registry.url is None:  # the pipeline file's check makes this unreachable
            raise NotAvro("no schema registry is set ([registry] url)")
        self.url = registry.url
        self.registry = registry
        self.budget_seconds = budget_seconds

    def get(self, schema_id: int) -> Any:
        """The parsed writer schema of ``schema_id``."""
        key = (self.url, schema_id)
        if key not in self._parsed:
            self._parsed[key] = _parse(schema_id, self._fetch(schema_id))
        return self._parsed[key]

    def latest(self, subject: str) -> dict[str, Any]:
        """The registry's answer for ``subject``'s latest version (:class:`NotAvro`: none)."""
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest"
        return self._answer(path, f"subject {subject!r} is not in the registry at {self.url}")

    def _fetch(self, schema_id: int) -> dict[str, Any]:
        missing = f"schema id {schema_id} is not in the registry at {self.url}"
        return self._answer(f"/schemas/ids/{schema_id}", missing)

    def _answer(self, path: str, missing: str) -> dict[str, Any]:
        try:
            for attempt in Retrying(
                stop=stop_after_delay(self.budget_seconds),
                wait=wait_exponential(multiplier=0.25, max=5.0),
                retry=retry_if_exception_type(_Unanswered),
            ):
                with attempt:
                    return self._call(path, missing)
        except RetryError as exc:
            detail = str(exc.last_attempt.exception())
            raise ServiceUnavailableError(
                "schema registry", self.url, detail, " --registry"
            ) from None
        raise AssertionError("unreachable: Retrying returns or raises")

    def _call(self, path: str, missing: str) -> dict[str, Any]:
        request = urllib.request.Request(self.url + path, headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=self.registry.request_timeout) as got:
                answer: dict[str, Any] = json.loads(got.read())
                return answer
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise NotAvro(missing) from None
            if exc.code >= 500 or exc.code in (408, 429):
                raise _Unanswered(f"{exc.code} {exc.reason}") from None
            detail = f"{exc.code} {exc.reason}"
            if exc.code in (401, 403):
                raise CredentialsError("schema registry", self.url, detail) from None
            raise ServiceUnavailableError(
                "schema registry", self.url, detail, " --registry"
            ) from None
        except (OSError, ValueError) as exc:
            raise _Unanswered(f"{type(exc).__name__}: {exc}") from None

    def _headers(self) -> dict[str, str]:
        if not self.registry.username:
            return {}
        password = self.registry.password.get_secret_value() if self.registry.password else ""
        token = base64.b64encode(f"{self.registry.username}:{password}".encode()).decode()
        return {"Authorization": f"Basic {token}"}


def _parse(schema_id: int, answer: dict[str, Any]) -> Any:
    import fastavro

    kind = answer.get("schemaType", "AVRO")
    if kind != "AVRO":
        raise NotAvro(f"schema id {schema_id} is a {kind} schema, not Avro")
    try:
        return fastavro.parse_schema(json.loads(answer["schema"]))
    except (KeyError, ValueError, TypeError, fastavro.schema.SchemaParseException) as exc:
        raise NotAvro(f"schema id {schema_id} does not parse as Avro: {exc}") from None


def decode(value: bytes, schemas: Schemas) -> dict[str, Any]:
    """The record of ``value`` as a JSON object, read with the writer schema its header names."""
    import fastavro

    if len(value) < HEADER or value[0] != MAGIC:
        raise NotAvro(
            "not in the schema registry's wire format (a zero byte, then a 4-byte schema id, "
            f"then the Avro body); it starts {value[:HEADER].hex() or 'empty'}"
        )
    schema_id = int.from_bytes(value[1:HEADER], "big")
    schema = schemas.get(schema_id)
    body = io.BytesIO(value[HEADER:])
    try:
        record = fastavro.schemaless_reader(body, schema, None)
    except Exception as exc:  # fastavro raises what the bytes lead it to (EOF, ValueError, ...)
        raise NotAvro(f"does not decode with schema id {schema_id}: {_first_line(exc)}") from None
    left = len(value) - HEADER - body.tell()
    if left:
        raise NotAvro(f"{left} bytes left after the record of schema id {schema_id}")
    if not isinstance(record, dict):
        raise NotAvro(f"schema id {schema_id} is not a record schema (got {type(record).__name__})")
    document: dict[str, Any] = as_json(record)
    return document


def as_json(value: Any) -> Any:
    """An Avro value as JSON holds it."""
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return aware.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
