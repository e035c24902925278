"""Kafka clients built from :class:`fusion.core.settings.KafkaSettings`, and the start-up check.

Nothing here holds state but the shared admin of :func:`shared_admin`: every
function builds a fresh client from the frozen settings, so the same code talks
to the local runtime, to a testcontainers pair or to a production cluster.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fusion.core import CredentialsError, KafkaSettings, ServiceUnavailableError, TlsTrustError

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient


# librdkafka reports transient retries (coordinator loading, reconnects) as warnings;
# they are retried internally, and real failures surface as errors and exceptions.
kafka_log = logging.getLogger("fusion.kafka")


kafka_log.setLevel(logging.ERROR)


# The start-up check reports what librdkafka logs (a refused login, an untrusted
# certificate) as its own one line, so its log lines would only repeat it.
_check_log = logging.getLogger("fusion.kafka.check")


_check_log.setLevel(logging.CRITICAL + 1)


_check_log.propagate = False


def admin(settings: KafkaSettings) -> AdminClient:
    from confluent_kafka.admin import AdminClient

    return AdminClient(dict(settings.as_librdkafka_options()), logger=kafka_log)


_SHARED_ADMINS: dict[str, AdminClient] = {}


_SHARED_LOCK = threading.Lock()


def shared_admin(settings: KafkaSettings) -> AdminClient:
    """One admin client per cluster for the life of the process, for periodic probes.

    An AdminClient has no close(): it goes when the garbage collector frees
    it, and a probe's exceptions keep it in reference cycles until then. A
    driver restarting its queries would pile up four librdkafka threads and
    their sockets a restart; shared, there is one.
    """
    key = repr(sorted(settings.as_librdkafka_options().items()))
    with _SHARED_LOCK:
        shared = _SHARED_ADMINS.get(key)
        if shared is None:
            shared = _SHARED_ADMINS[key] = admin(settings)
        return shared


def producer(settings: KafkaSettings, options: Mapping[str, Any] | None = None) -> Producer:
    """A producer with idempotence on: a retried send never writes a record twice."""
    from confluent_kafka import Producer

    defaults = {"enable.idempotence": True, "linger.ms": 5, "logger": kafka_log}
    return Producer(settings.as_librdkafka_options() | defaults | dict(options or {}))


def consumer(
    settings: KafkaSettings, group_id: str, options: Mapping[str, Any] | None = None
) -> Consumer:
    """A consumer that sees only committed transactional records, from the earliest offset."""
    from confluent_kafka import Consumer

    defaults = {
        "group.id": group_id,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "logger": kafka_log,
    }
    return Consumer(settings.as_librdkafka_options() | defaults | dict(options or {}))


def check(settings: KafkaSettings, timeout: float = 5.0) -> int:
    """Number of brokers answering; ``ServiceUnavailableError`` if none do.

    librdkafka reports a refused login or an untrusted certificate through its
    error callback; the metadata request itself only fails with a transport
    error. Both are read to name the setting at fault.
    """
    from confluent_kafka.admin import AdminClient

    seen: list[str] = []
    options: dict[str, Any] = dict(settings.as_librdkafka_options())
    options["error_cb"] = lambda error: seen.append(str(error.str()))
    admin = None
    try:
        admin = AdminClient(options, logger=_check_log)
        metadata = admin.list_topics(timeout=timeout)
    except Exception as exc:
        if admin is not None:
            admin.poll(0.5)  # serves the error callback
        found = [str(exc), *seen]
        if any("certificate verify failed" in text.lower() for text in found):
            raise TlsTrustError("Kafka", settings.bootstrap, "certificate verify failed") from None
        if any("ssl.ca.location failed" in text for text in found):
            raise TlsTrustError("Kafka", settings.bootstrap, "not a PEM CA certificate") from None
        auth = [t for t in found if "authentication" in t.lower() or "sasl" in t.lower()]
        if auth:
            raise CredentialsError("Kafka", settings.bootstrap, auth[0]) from None
        raise ServiceUnavailableError("Kafka", settings.bootstrap, str(exc)) from None
    return len(metadata.brokers)
