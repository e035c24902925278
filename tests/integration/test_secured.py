"""Fusion against a secured pair: Kafka on SASL_SSL (SCRAM-SHA-512), Elasticsearch with HTTPS.

The servers are real and secured by `fusion infra up --secure`'s own code path
(a throwaway CA, a SCRAM user, a file-realm user with a password); the pipeline
runs end to end through them, Spark's Kafka source and sink included, and the
wrong password or CA stops `fusion run` at start with one line, and no secret
reaches any output of any command.
"""

from __future__ import annotations

import base64
import os
import secrets
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import AuthenticationException, Elasticsearch

from fusion.bench.generator import GenOptions, build_dataset, produce
from fusion.core.config import PipelineConfig
from fusion.core.errors import CredentialsError, ExitCode
from fusion.core.machine import procfs
from fusion.core.machine.ports import free_port
from fusion.core.settings import RuntimeSettings, Settings
from fusion.elastic import client as es_client
from fusion.elastic import indexes as es_indexes
from fusion.infra.elasticsearch import ES_USER as ES_NODE_USER
from fusion.infra.java import elasticsearch_java_home
from fusion.infra.runtime import LocalRuntime
from fusion.infra.secure import ES_USER as FUSION_USER
from fusion.infra.secure import SecureMaterial
from fusion.infra.services import Endpoints
from fusion.kafka import client as kafka_client
from fusion.kafka import topics as kafka_topics
from tests.integration.conftest import server_jvm_options
from tests.integration.pipelines import drop, enriched_docs, make_config, read_topic, run_pipeline


@pytest.fixture(scope="module")
def secured() -> Iterator[tuple[Endpoints, SecureMaterial]]:
    home = RuntimeSettings.model_validate(
        {"home": os.environ.get("FUSION_HOME", "~/.cache/fusion")}
    ).home
    state_dir = Path(tempfile.mkdtemp(prefix="test-secured-", dir=home))
    runtime = LocalRuntime(home, state_dir, secure=True, jvm_options=server_jvm_options())
    try:
        endpoints = runtime.up(kafka_port=free_port(), es_port=free_port())
        assert runtime.material is not None
        yield endpoints, runtime.material
    finally:
        runtime.down()
        shutil.rmtree(state_dir, ignore_errors=True)


def _cmdline(pid: int) -> str:
    return b" ".join(procfs.cmdline(pid) or []).decode(errors="replace")


def env_of(material: SecureMaterial) -> dict[str, str]:
    """The settings `fusion infra up --secure` wrote to fusion.env."""
    env = {}
    for line in material.env_file.read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = shlex.split(value)[0]
    return env


def secured_settings(material: SecureMaterial, **overrides: str) -> Settings:
    env = env_of(material) | {
        "FUSION_SPARK_MASTER": "local[2,4]",
        "FUSION_SPARK_SHUFFLE_PARTITIONS": "2",
    }
    if "FUSION_HOME" in os.environ:
        env["FUSION_HOME"] = os.environ["FUSION_HOME"]
    return Settings.load(env=env | overrides)


def test_the_servers_refuse_anyone_without_the_credentials(
    secured: tuple[Endpoints, SecureMaterial],
) -> None:
    endpoints, material = secured
    assert endpoints.es_url.startswith("https://")
    anonymous = Elasticsearch(endpoints.es_url, ca_certs=str(material.ca))
    with pytest.raises(AuthenticationException):
        anonymous.cluster.health()
    with pytest.raises(CredentialsError, match=r"Kafka at .* refused the credentials"):
        settings = secured_settings(material, FUSION_KAFKA_SASL_PASSWORD="not-the-password")
        kafka_client.check(settings.kafka, timeout=15)
    settings = secured_settings(material)
    assert kafka_client.check(settings.kafka, timeout=15) == 1
    assert es_client.check(settings.elasticsearch).startswith(("8.", "9."))


def test_the_pipeline_runs_end_to_end_over_tls_with_credentials(
    spark: Any, secured: tuple[Endpoints, SecureMaterial], tmp_path: Path
) -> None:
    settings = secured_settings(secured[1])
    config = make_config(settings, tmp_path, ["billing", "insurance", "medicine"])
    try:
        data = build_dataset(config, GenOptions(keys=60, seed=5, duplicate_rate=0.1))
        produce(config, data.records)  # librdkafka over SASL_SSL

        # Spark's Kafka source and sink (PEM truststore, SCRAM) and the tasks' clients.
        metrics = run_pipeline(
            spark, config, lambda m: m.get("enricher.enriched") >= len(data.expected)
        )

        assert metrics.get("enricher.enriched") == len(data.expected)
        fired = Counter(key for key, _ in read_topic(settings, config.ready_topic))
        assert fired == Counter(set(data.expected))
        docs = enriched_docs(settings, config)
        assert set(docs) == set(data.expected)
        for key, doc in docs.items():
            doc.pop("fusion")
            assert doc == data.expected[key]
    finally:
        drop(config)


def pipeline_file(tmp_path: Path) -> Path:
    config_file = tmp_path / "pipeline.toml"
    config_file.write_text(
        f'[pipeline]\nname = "secured-{tmp_path.name[-12:]}"\nkey_field = "entity_id"\n'
        f'checkpoint_dir = "{tmp_path / "checkpoints"}"\n\n'
        '[[sources]]\nname = "billing"\n\n[[sources]]\nname = "insurance"\n'
    )
    return config_file


def run_fusion(
    material: SecureMaterial, tmp_path: Path, **overrides: str
) -> subprocess.CompletedProcess[str]:
    config_file = pipeline_file(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FUSION_")}
    env |= env_of(material) | overrides
    if "FUSION_HOME" in os.environ:
        env["FUSION_HOME"] = os.environ["FUSION_HOME"]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "fusion",
            "--config",
            str(config_file),
            "run",
            "--stop-when-idle",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("override", "names"),
    [
        ({"FUSION_KAFKA_SASL_PASSWORD": "wrong-password"}, "sasl_password"),
        ({"FUSION_ES_PASSWORD": "wrong-password"}, "username/password"),
        ({"FUSION_KAFKA_SSL_CA_LOCATION": "OTHER_CA"}, "ssl_ca_location"),
        ({"FUSION_ES_CA_CERTS": "OTHER_CA"}, "ca_certs"),
    ],
    ids=["kafka-password", "es-password", "kafka-ca", "es-ca"],
)
def test_a_wrong_secret_or_ca_stops_fusion_run_at_start_with_one_line(
    secured: tuple[Endpoints, SecureMaterial],
    tmp_path: Path,
    other_ca: Path,
    override: dict[str, str],
    names: str,
) -> None:
    _, material = secured
    override = {k: str(other_ca) if v == "OTHER_CA" else v for k, v in override.items()}

    result = run_fusion(material, tmp_path, **override)

    assert result.returncode == ExitCode.CREDENTIALS, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and names in lines[0], result.stderr[-2000:]
    creds = material.credentials()
    for secret in (creds.kafka_password, creds.kafka_broker_password, creds.es_password):
        assert secret not in result.stdout + result.stderr


READ_ONLY_ROLE = """\
fusion_reader:
  cluster: ["monitor"]
  indices:
    - names: ["*"]
      privileges: ["read", "view_index_metadata", "monitor"]
    - names: ["*-fusion-lease"]
      privileges: ["all"]
"""


def _add_reader(material: SecureMaterial, password: str) -> None:
    """A file-realm user who may read every index and write none but the leases.

    The node reloads its users and roles files by itself; the user is added the
    way `fusion infra up --secure` adds Fusion's (the password on standard input).
    """
    node = material.dir.parent / "elasticsearch"
    (node / "config" / "roles.yml").write_text(READ_ONLY_ROLE)
    runtime = LocalRuntime(material.dir.parent.parent, state_dir=material.dir.parent)
    command = [str(runtime.cache.elasticsearch_home() / "bin" / "elasticsearch-users")]
    env = {
        "ES_JAVA_HOME": str(elasticsearch_java_home(runtime.es_version)),
        "ES_PATH_CONF": str(node / "config"),
        "PATH": os.environ.get("PATH", ""),
    }
    subprocess.run(
        [*command, "useradd", "reader", "-r", "fusion_reader"],
        input=f"{password}\n{password}\n",
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    if os.geteuid() == 0:  # the node runs as its own user, and reads the files it owns
        shutil.chown(node / "config" / "users", ES_NODE_USER)
        shutil.chown(node / "config" / "users_roles", ES_NODE_USER)
        shutil.chown(node / "config" / "roles.yml", ES_NODE_USER)


def test_a_user_without_the_write_privilege_stops_fusion_run_with_one_line(
    secured: tuple[Endpoints, SecureMaterial], tmp_path: Path
) -> None:
    """A real refusal (403) of a real user: one line naming the index, exit code 4."""
    endpoints, material = secured
    password = secrets.token_urlsafe(16)
    _add_reader(material, password)
    reader = Elasticsearch(
        endpoints.es_url, ca_certs=str(material.ca), basic_auth=("reader", password)
    )
    deadline = time.monotonic() + 60
    while True:  # until the node reloaded its users file
        try:
            reader.cluster.health()
            break
        except AuthenticationException:
            assert time.monotonic() < deadline, "the node never took the new user"
            time.sleep(0.5)
    # Fusion's own user sets the pipeline up; the reader then runs it.
    config = PipelineConfig.load(pipeline_file(tmp_path), env=env_of(material))
    kafka_topics.ensure_topics(config)
    es_indexes.ensure_indexes(es_client.connect(config.elasticsearch), config)
    try:
        produce(config, [(config.topic_of(config.source("billing")), "K1", b'{"entity_id": "K1"}')])
        result = run_fusion(
            material, tmp_path, FUSION_ES_USERNAME="reader", FUSION_ES_PASSWORD=password
        )
        assert result.returncode == ExitCode.CREDENTIALS, result.stderr[-2000:]
        errors = [line for line in result.stderr.splitlines() if line.startswith("fusion: error")]
        assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
        index = config.index_of(config.source("billing"))
        assert f"refused access to index {index} (HTTP 403" in errors[0], errors[0]
        assert "grant the configured user the write and read privileges" in errors[0]
        assert read_topic(config, config.dlq_topic) == [], "nothing dead-lettered"
    finally:
        drop(config)


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA that signed nothing the servers present."""
    from fusion.infra.secure import ensure

    return ensure(tmp_path_factory.mktemp("other-ca")).ca


def test_no_secret_in_any_output_of_any_command(
    secured: tuple[Endpoints, SecureMaterial], tmp_path: Path
) -> None:
    """No secret reaches anything Fusion prints or logs, with every secret really in use.

    The servers refuse anyone without them: the commands below succeed only
    because Fusion sent the SCRAM password and the Elasticsearch password. An
    API key is sent too (``check`` and ``explain`` again), and refused: keys
    live in the security index, whose mapping needs the analysis-common module
    that the integ-test-zip leaves out, so no valid key can be made on these
    servers. The node checks the key it is sent; a refusal is where a key is
    most likely to be echoed. Every command runs with ``--debug`` and Spark
    logging at DEBUG; the test then searches everything they wrote (stdout,
    stderr, Spark's log files) and the errors of a run that cannot reach
    Elasticsearch.
    """
    _, material = secured
    creds = material.credentials()
    settings = secured_settings(material)
    key_secret = secrets.token_urlsafe(16)
    api_key = base64.b64encode(f"{uuid.uuid4().hex[:20]}:{key_secret}".encode()).decode()
    hidden = {
        "kafka_password": creds.kafka_password,
        "es_password": creds.es_password,
        "es_api_key": api_key,
        "es_api_key_secret": key_secret,
    }
    # Each secret as it may leak: plain, URL-encoded, and as an HTTP Basic header carries it.
    forms = {
        f"{name} ({how})": form
        for name, secret in hidden.items()
        for how, form in (
            ("plain", secret),
            ("URL", urllib.parse.quote(secret, safe="")),
            ("Basic", base64.b64encode(f"{FUSION_USER}:{secret}".encode()).decode()),
        )
    }
    url_with_password = f"https://{FUSION_USER}:{creds.es_password}@127.0.0.1:{free_port()}"
    config_file = tmp_path / "pipeline.toml"
    config_file.write_text(
        f'[pipeline]\nname = "secrets-{uuid.uuid4().hex[:8]}"\nkey_field = "entity_id"\n'
        f'checkpoint_dir = "{tmp_path / "checkpoints"}"\n\n'
        '[[sources]]\nname = "a"\n\n[[sources]]\nname = "b"\n'
    )
    config = PipelineConfig.load(config_file, env=env_of(material))
    logs = tmp_path / "logs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FUSION_")}
    env |= env_of(material) | {
        "FUSION_SPARK_LOG_LEVEL": "DEBUG",
        "FUSION_SPARK_LOG_DIR": str(logs),
        "FUSION_SPARK_MASTER": "local[2,4]",
    }
    if "FUSION_HOME" in os.environ:
        env["FUSION_HOME"] = os.environ["FUSION_HOME"]

    def fusion(*args: str, extra: dict[str, str] | None = None) -> tuple[int, str]:
        result = subprocess.run(
            [sys.executable, "-m", "fusion", "--debug", *args, "--config", str(config_file)],
            env=env | (extra or {}), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        return result.returncode, result.stdout + result.stderr

    data = build_dataset(config, GenOptions(keys=10, seed=2, missing_rate=0, duplicate_rate=0))
    key = next(iter(data.expected))
    with_key = {"FUSION_ES_API_KEY": api_key, "FUSION_ES_PASSWORD": "not-the-password"}
    try:
        produce(config, data.records)
        outputs = {
            "check": fusion("check"),
            "run": fusion("run", "--stop-when-idle", "6"),
            "status": fusion("status"),
            "explain": fusion("explain", key),
            "reconcile": fusion("reconcile"),
            "check with an API key": fusion("check", extra=with_key),
            "explain with an API key": fusion("explain", key, extra=with_key),
            "unreachable": fusion(
                "run", extra={"FUSION_ES_URL": f"https://127.0.0.1:{free_port()}"}
            ),
            # A password in the URL itself is redacted wherever the URL is named.
            "a password in the URL": fusion("check", extra={"FUSION_ES_URL": url_with_password}),
            "run with a password in the URL": fusion(
                "run", extra={"FUSION_ES_URL": url_with_password}
            ),
        }
        refused = {
            "check with an API key",
            "explain with an API key",
            "unreachable",
            "a password in the URL",
            "run with a password in the URL",
        }
        for command, (code, text) in outputs.items():
            assert (code != 0) == (command in refused), (command, text[-2000:])
        written = {name: text for name, (_, text) in outputs.items()}
        written |= {f"log {p.name}": p.read_text(errors="replace") for p in logs.glob("*.log")}
        # Every file the commands wrote: checkpoints, Spark's logs, the pipeline's own files.
        files = {
            f"file {p.relative_to(tmp_path)}": p.read_bytes().decode("latin-1")
            for p in tmp_path.rglob("*")
            if p.is_file()
        }
        assert any("checkpoints" in name for name in files), sorted(files)
        # And what anyone on the machine can read: every process's command line.
        commands = {f"command line of {pid}": _cmdline(pid) for pid in procfs.pids()}

        for name, text in (written | files | commands).items():
            for secret_name, form in forms.items():
                assert form not in text, f"{secret_name} appears in {name}"
        # Not vacuous: the run enriched every key through the secured servers; the logs
        # are there, at DEBUG, and they did talk about credentials.
        assert set(enriched_docs(settings, config)) == set(data.expected)
        spark_logs = "".join(text for name, text in written.items() if name.startswith("log "))
        assert " DEBUG " in spark_logs
        assert "sasl.jaas.config" in spark_logs  # the Kafka clients' config dump, value hidden
        assert "unreachable" in written["unreachable"]
        assert f"{FUSION_USER}:***@127.0.0.1" in written["a password in the URL"]
        # The files that must hold a secret are their owner's alone.
        state_dir = material.dir.parent
        for private in (material.credentials_file, *state_dir.glob("**/server.properties")):
            assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
        for command in ("check with an API key", "explain with an API key"):
            assert "refused the credentials (HTTP 401)" in written[command], written[command]
    finally:
        drop(config)
