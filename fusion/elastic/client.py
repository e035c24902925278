"""Elasticsearch clients built from the frozen settings, and the start-up check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from elasticsearch import ApiError, Elasticsearch
from elasticsearch import TransportError as ESTransportError
from elasticsearch.serializer import JsonSerializer, NdjsonSerializer

from fusion.core import (
    CredentialsError,
    ElasticsearchSettings,
    ServiceUnavailableError,
    TlsTrustError,
    codec,
)

if TYPE_CHECKING:
    pass


class _Json(JsonSerializer):
    """The client's JSON through :mod:`fusion.core.codec`: parsing the answers of ``_mget``
    and ``_bulk`` was a sixth of a Python worker's time with the standard library."""

    def json_loads(self, data: bytes) -> Any:
        return codec.loads(data)

    def json_dumps(self, data: Any) -> bytes:
        try:
            return orjson.dumps(data, default=self.default)
        except TypeError:
            return super().json_dumps(data)


class _Ndjson(NdjsonSerializer, _Json):
    """A bulk body's lines, each through :class:`_Json`."""


def connect(settings: ElasticsearchSettings) -> Elasticsearch:
    # The compatibility mode's media types take these too (the client maps them over).
    serializers = {_Json.mimetype: _Json(), _Ndjson.mimetype: _Ndjson()}
    return Elasticsearch(**settings.as_client_options(), serializers=serializers)


def check(settings: ElasticsearchSettings) -> str:
    """The server's version; ``ServiceUnavailableError`` if it does not answer.

    Read from ``GET _nodes/_local``, not ``GET /``: the integ-test-zip
    distributions (8.9 on) do not serve the root endpoint, every distribution
    serves this one.
    """
    try:
        info = version(connect(settings))
    except ApiError as exc:
        if exc.meta.status in (401, 403):
            raise CredentialsError(
                "Elasticsearch", settings.shown_url, f"HTTP {exc.meta.status}"
            ) from None
        raise ServiceUnavailableError(
            "Elasticsearch", settings.shown_url, str(exc.message)
        ) from None
    except (ESTransportError, OSError) as exc:
        if "CERTIFICATE_VERIFY_FAILED" in str(exc):
            detail = "certificate verify failed"
            raise TlsTrustError("Elasticsearch", settings.shown_url, detail) from None
        raise ServiceUnavailableError(
            "Elasticsearch", settings.shown_url, type(exc).__name__
        ) from None
    return info


def version(es: Elasticsearch) -> str:
    """The version of the node ``es`` talks to."""
    nodes = es.nodes.info(node_id="_local", metric="_none", filter_path="nodes.*.version")
    return str(next(iter(nodes["nodes"].values()))["version"])


# The thread pools Fusion's requests go to: bulk writes, searches and _mget/GET lookups.
POOLS = ("write", "search", "get")


def rejected(es: Elasticsearch) -> int:
    """Requests every node rejected (429, a thread pool's queue full) since it started."""
    wanted = ",".join(f"nodes.*.thread_pool.{pool}.rejected" for pool in POOLS)
    stats = es.nodes.stats(metric="thread_pool", filter_path=wanted)
    return sum(
        int(pools.get(pool, {}).get("rejected", 0))
        for node in stats.get("nodes", {}).values()
        for pools in [node.get("thread_pool", {})]
        for pool in POOLS
    )
