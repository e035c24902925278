"""The CDC part of the local runtime, without starting it: artifacts, configs, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusion.infra.artifacts import Coordinate
from fusion.infra.cdc.connect import DEBEZIUM_POSTGRES, postgres_connector
from fusion.infra.cdc.postgres import pg_bin
from fusion.infra.cdc.servers import cdc_urls, start_cdc
from fusion.infra.errors import InfraError, ToolMissingError
from fusion.infra.kafka import log4j2_config


def test_a_coordinate_leaves_out_what_it_excludes_and_everything_when_not_transitive() -> None:
    pom = DEBEZIUM_POSTGRES.pom_dependency(transitive=True)
    assert "<artifactId>debezium-storage-chronicle-queue</artifactId>" in pom
    assert "<groupId>org.apache.kafka</groupId><artifactId>*</artifactId>" in pom
    alone = Coordinate("g", "a", "1").pom_dependency(transitive=False)
    assert "<groupId>*</groupId><artifactId>*</artifactId>" in alone
    assert "exclusions" not in Coordinate("g", "a", "1").pom_dependency(transitive=True)


def test_without_the_server_package_one_line_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(ToolMissingError, match=r"apt-get install postgresql-15"):
        pg_bin(tmp_path)
    (tmp_path / "16" / "bin").mkdir(parents=True)
    (tmp_path / "16" / "bin" / "postgres").touch()
    assert pg_bin(tmp_path) == tmp_path / "16" / "bin"


def test_a_connector_per_prefix_has_its_own_slot_and_publication() -> None:
    config = postgres_connector(5432, "fusion", "shop-1.x", ["public.orders"], "fusion")
    assert config["slot.name"] == "shop_1_x_slot" and config["plugin.name"] == "pgoutput"
    assert config["publication.name"] == "shop_1_x_publication"
    assert config["table.include.list"] == "public.orders"
    assert config["decimal.handling.mode"] == "string"


def test_the_urls_of_what_up_cdc_started() -> None:
    assert cdc_urls({}) == (None, None)
    urls = cdc_urls({"postgres": {"port": 5433}, "connect": {"port": 8084}})
    assert urls == ("postgresql://fusion@127.0.0.1:5433/fusion", "http://127.0.0.1:8084")


def test_cdc_beside_a_secured_runtime_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InfraError, match="plain runtime"):
        start_cdc(tmp_path, tmp_path, {"secure": True}, "127.0.0.1:9092", (1, 2))


def test_a_server_log_config_names_its_extra_loggers() -> None:
    text = log4j2_config({"io.debezium": "INFO"})
    assert "- name: io.debezium\n        level: INFO" in text
    assert "- name: kafka\n        level: INFO" in text
