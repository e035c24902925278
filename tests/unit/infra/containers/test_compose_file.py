"""The compose file, checked by reading it: these need no Docker engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.infra.artifacts import ELASTICSEARCH_VERSION, KAFKA_VERSION
from fusion.topology import topology_of

ROOT = Path(__file__).resolve().parents[4]


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def test_servers_use_official_images_at_the_versions_we_test() -> None:
    services = _compose()["services"]

    assert services["kafka"]["image"] == f"apache/kafka:{KAFKA_VERSION}"
    assert services["elasticsearch"]["image"] == f"elasticsearch:{ELASTICSEARCH_VERSION}"


def test_kafka_is_single_node_kraft_with_transactions() -> None:
    kafka = _compose()["services"]["kafka"]
    env = kafka["environment"]

    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == 1
    assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == 1
    # The host port is the advertised one: 9092 unless FUSION_COMPOSE_KAFKA_PORT says otherwise.
    assert "127.0.0.1:${FUSION_COMPOSE_KAFKA_PORT:-9092}:9092" in kafka["ports"]
    assert (
        "HOST://127.0.0.1:${FUSION_COMPOSE_KAFKA_PORT:-9092}" in env["KAFKA_ADVERTISED_LISTENERS"]
    )
    assert "INTERNAL://kafka:29092" in env["KAFKA_ADVERTISED_LISTENERS"]


def test_elasticsearch_is_single_node_without_security() -> None:
    es = _compose()["services"]["elasticsearch"]
    env = es["environment"]

    assert env["discovery.type"] == "single-node"
    assert env["xpack.security.enabled"] == "false"
    assert "127.0.0.1:${FUSION_COMPOSE_ES_PORT:-9200}:9200" in es["ports"]


def test_every_server_has_a_healthcheck_and_a_volume() -> None:
    services = _compose()["services"]

    for name in ("kafka", "elasticsearch"):
        assert services[name]["healthcheck"]["test"][0] == "CMD-SHELL"
        assert services[name]["volumes"]


def test_project_service_reaches_servers_by_their_compose_names() -> None:
    services = _compose()["services"]
    check = services["fusion-check"]

    settings = Settings.load(env=check["environment"])

    assert settings.kafka.bootstrap == "kafka:29092"
    assert settings.elasticsearch.url == "http://elasticsearch:9200"
    assert check["build"] == "."
    assert {name: dep["condition"] for name, dep in check["depends_on"].items()} == {
        "kafka": "service_healthy",
        "elasticsearch": "service_healthy",
    }
    assert (ROOT / "Dockerfile").is_file()


def test_one_spark_submit_service_per_component_and_a_generator() -> None:
    services = _compose()["services"]
    # One application per component needs the layout of one query per stage.
    config = PipelineConfig.load(ROOT / "examples/healthcare-components.toml", env={})
    components = ["indexers", "counter", "enricher"]

    for component in components:
        service = services[component]
        command = service["command"][-1]
        # $$ is compose's escape: the shell gets $(fusion spark-submit-args).
        assert command.startswith("spark-submit --conf spark.cores.max=2 ")
        assert (
            "$$(fusion spark-submit-args) --config examples/healthcare-components.toml" in command
        )
        assert command.endswith(f"--only {component}")
        topology_of(config).select(component)  # the pipeline file allows running it alone
        assert service["image"] == "fusion:latest"
        assert service["environment"]["FUSION_KAFKA_BOOTSTRAP"] == "kafka:29092"
        assert "checkpoints:/opt/fusion/checkpoints" in service["volumes"]
        assert service["depends_on"]["kafka"]["condition"] == "service_healthy"
        assert service["depends_on"]["spark-master"]["condition"] == "service_healthy"
        assert service["environment"]["FUSION_SPARK_MASTER"] == "spark://spark-master:7077"
    generator = services["generator"]["command"]
    assert generator[:4] == ["fusion", "--config", "examples/healthcare.toml", "generate"]
    assert "COPY examples ./examples" in (ROOT / "Dockerfile").read_text()


def test_a_spark_master_and_two_workers_run_from_the_project_image() -> None:
    services = _compose()["services"]
    master = services["spark-master"]
    workers = [services[f"spark-worker-{i}"] for i in (1, 2)]

    assert master["image"] == "fusion:latest"
    assert master["command"][:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert "--port" in master["command"] and "7077" in master["command"]
    assert master["healthcheck"]["test"][0] == "CMD-SHELL"
    for worker in workers:
        assert worker["image"] == "fusion:latest"
        assert worker["command"][:2] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
        assert worker["command"][-1] == "spark://spark-master:7077"
        # Executors write the counter's state store under the checkpoints: shared volume.
        assert "checkpoints:/opt/fusion/checkpoints" in worker["volumes"]


def test_every_published_port_binds_to_this_machine_only() -> None:
    # A compose project on a shared host must not expose Kafka, Elasticsearch,
    # the Spark master (which runs code it is sent) or Prometheus on every interface.
    services = _compose()["services"]

    published = {name: s["ports"] for name, s in services.items() if "ports" in s}

    assert set(published) == {"kafka", "elasticsearch", "spark-master", "prometheus"}
    for name, ports in published.items():
        for port in ports:
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"
