"""A counting HTTP proxy in front of the real Elasticsearch node.

Tests point Fusion at the proxy and compare what Fusion says it sent with
what the node was actually asked: every request is forwarded unchanged and
counted by kind (``bulk``, ``mget``, ``get``, ``search``, ``other``), by the
first index it names (from the path, or from the body of ``_bulk`` and
``_mget``), and by response status.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}


def classify(method: str, path: str, body: bytes) -> tuple[str, str]:
    """(kind, first index named) of one request."""
    route = urlsplit(path).path
    parts = [p for p in route.split("/") if p]
    if route.endswith("/_bulk"):
        first = json.loads(body.split(b"\n", 1)[0] or b"{}")
        action = next(iter(first.values()), {}) if first else {}
        return "bulk", action.get("_index", parts[0] if len(parts) > 1 else "")
    if route.endswith("/_mget"):
        docs = json.loads(body or b"{}").get("docs", [])
        return "mget", docs[0].get("_index", "") if docs else (parts[0] if len(parts) > 1 else "")
    if method == "GET" and len(parts) == 3 and parts[1] == "_doc":
        return "get", parts[0]
    if "_search" in parts or "_pit" in parts:
        return "search", parts[0] if parts and not parts[0].startswith("_") else ""
    return "other", parts[0] if parts and not parts[0].startswith("_") else ""


LEASES = "-fusion-lease"  # fusion.core.config.PipelineConfig.lease_index


class CountingProxy:
    """``with CountingProxy(es_url) as proxy:`` point clients at ``proxy.url``."""

    def __init__(self, upstream: str) -> None:
        target = urlsplit(upstream)
        self.host, self.port = target.hostname or "127.0.0.1", target.port or 9200
        self.requests: Counter[tuple[str, str]] = Counter()  # (kind, index)
        self.statuses: Counter[tuple[str, str, int]] = Counter()  # (kind, index, status)
        self._lock = threading.Lock()
        self.failing: int | None = None  # answer every request with this status instead
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                kind, index = classify(self.command, self.path, body)
                if proxy.failing is not None:
                    self._refuse(proxy.failing)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                response, payload = _send(
                    proxy.host, proxy.port, self.command, self.path, body, headers
                )
                proxy._count(kind, index, response.status)
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in HOP_BY_HOP | {"content-length"}:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _refuse(self, status: int) -> None:
                payload = json.dumps({"error": "injected by the test proxy", "status": status})
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload.encode())

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _count(self, kind: str, index: str, status: int) -> None:
        with self._lock:
            self.requests[(kind, index)] += 1
            self.statuses[(kind, index, status)] += 1

    def count(self, kind: str, index_prefix: str = "", status: int | None = None) -> int:
        """Requests of ``kind`` to indexes starting with ``index_prefix`` [answered ``status``].

        Not those to a pipeline's lease index (``<name>-fusion-lease``): a `fusion run`
        reads its leases, which are no lookup of the pipeline's.
        """

        def wanted(k: str, i: str) -> bool:
            return k == kind and i.startswith(index_prefix) and not i.endswith(LEASES)

        with self._lock:
            if status is None:
                return sum(n for (k, i), n in self.requests.items() if wanted(k, i))
            return sum(n for (k, i, s), n in self.statuses.items() if wanted(k, i) and s == status)

    def fail_with(self, status: int | None) -> None:
        """From now on answer every request with ``status`` (None: forward them again)."""
        self.failing = status

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()


_local = threading.local()


def _send(
    host: str, port: int, method: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[http.client.HTTPResponse, bytes]:
    """Forward one request on this thread's keep-alive connection (reopened once if stale)."""
    for attempt in (1, 2):
        connection: http.client.HTTPConnection | None = getattr(_local, "connection", None)
        if connection is None:
            connection = _local.connection = http.client.HTTPConnection(host, port, timeout=120)
        try:
            connection.request(method, path, body=body or None, headers=headers)
            response = connection.getresponse()
            return response, response.read()
        except (ConnectionError, http.client.HTTPException):
            connection.close()
            _local.connection = None
            if attempt == 2:
                raise
    raise AssertionError("unreachable")
