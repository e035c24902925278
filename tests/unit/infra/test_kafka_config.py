from __future__ import annotations

import base64
import uuid
from pathlib import Path

from fusion.infra.kafka import KafkaPorts, _cluster_id, _server_properties


def test_single_node_transactions_are_possible() -> None:
    properties = _server_properties(KafkaPorts(9092, 9093), Path("/data"))
    lines = dict(line.split("=", 1) for line in properties.splitlines())

    assert lines["process.roles"] == "broker,controller"
    assert lines["transaction.state.log.replication.factor"] == "1"
    assert lines["transaction.state.log.min.isr"] == "1"
    assert lines["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert lines["log.dirs"] == "/data"


def test_cluster_id_is_22_char_base64_of_a_uuid() -> None:
    value = uuid.uuid4()

    cluster_id = _cluster_id(value)

    assert len(cluster_id) == 22
    assert base64.urlsafe_b64decode(cluster_id + "==") == value.bytes
