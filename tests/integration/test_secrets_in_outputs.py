"""No secret from the configuration reaches anything Fusion prints or logs, on real servers.

A pipeline file carries an Elasticsearch password and API key and a Kafka
SASL password (the local servers run without security and ignore them, so
every command runs its real code paths with the secrets loaded). Every
command an operator uses runs with ``--debug`` and Spark logging at DEBUG;
the test then searches all they wrote (stdout, stderr, Spark's log files) and
the errors of a run that cannot reach Elasticsearch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.settings import Settings
from fusion.infra.process import free_port
from fusion.runtime import topology
from tests.integration.pipelines import drop, write_config_file

BIN = Path(sys.executable).parent


def test_no_secret_in_any_output_of_any_command(settings: Settings, tmp_path: Path) -> None:
    secrets = {
        "es_password": f"es-pw-{uuid.uuid4().hex}",
        "es_api_key": f"es-key-{uuid.uuid4().hex}",
        "kafka_password": f"kafka-pw-{uuid.uuid4().hex}",
    }
    config_file = write_config_file(settings, tmp_path / "p.toml", ["a", "b"])
    es_lines = (
        'username = "elastic"\n'
        f'password = "{secrets["es_password"]}"\n'
        f'api_key = "{secrets["es_api_key"]}"\n'
    )
    kafka_lines = (
        'sasl_mechanism = "PLAIN"\nsasl_username = "svc"\n'
        f'sasl_password = "{secrets["kafka_password"]}"\n'
    )
    text = config_file.read_text()
    text = text.replace("[elasticsearch]\n", "[elasticsearch]\n" + es_lines)
    config_file.write_text(text.replace("[kafka]\n", "[kafka]\n" + kafka_lines))
    config = PipelineConfig.load(config_file, env={})
    assert config.elasticsearch.password is not None  # the secrets are really in the settings
    logs = tmp_path / "logs"
    env = dict(
        os.environ,
        FUSION_HOME=str(settings.runtime.home),
        FUSION_SPARK_LOG_LEVEL="DEBUG",
        FUSION_SPARK_LOG_DIR=str(logs),
    )

    def fusion(*args: str, extra: dict[str, str] | None = None) -> tuple[int, str]:
        result = subprocess.run(
            [BIN / "fusion", "--debug", *args, "--config", str(config_file)],
            env=env | (extra or {}), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        return result.returncode, result.stdout + result.stderr

    data = build_dataset(config, GenOptions(keys=10, seed=2, missing_rate=0, duplicate_rate=0))
    topology.ensure_topics(config)
    produce(config, data.records)
    try:
        outputs = {
            "check": fusion("check"),
            "run": fusion("run", "--stop-when-idle", "6"),
            "status": fusion("status"),
            "explain": fusion("explain", next(iter(data.expected))),
            "reconcile": fusion("reconcile"),
            "unreachable": fusion(
                "run", extra={"FUSION_ES_URL": f"http://127.0.0.1:{free_port()}"}
            ),
        }
        for command, (code, _) in outputs.items():
            assert (code != 0) == (command == "unreachable"), (command, outputs[command][1][-2000:])
        written = {name: text for name, (_, text) in outputs.items()}
        written |= {f"log {p.name}": p.read_text(errors="replace") for p in logs.glob("*.log")}

        for name, text in written.items():
            for secret_name, secret in secrets.items():
                assert secret not in text, f"{secret_name} appears in the output of {name}"
        # Not vacuous: the logs are there, at DEBUG, and they did talk about credentials.
        spark_logs = "".join(text for name, text in written.items() if name.startswith("log "))
        assert " DEBUG " in spark_logs
        assert "sasl.jaas.config" in spark_logs  # the Kafka clients' config dump, value hidden
        assert "unreachable" in written["unreachable"]
    finally:
        drop(config)
