from __future__ import annotations

from pathlib import Path

import pytest

from fusion.core.errors import ConfigError
from fusion.core.settings import Settings


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fusion.toml"
    path.write_text(text)
    return path


def test_defaults_point_at_the_local_runtime() -> None:
    settings = Settings.load(env={})

    assert settings.kafka.bootstrap == "127.0.0.1:9092"
    assert settings.elasticsearch.url == "http://127.0.0.1:9200"
    assert settings.runtime.home == Path("~/.cache/fusion").expanduser()


def test_file_then_env_overrides(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[kafka]\nbootstrap = "k1:9092,k2:9092"\n[elasticsearch]\nurl = "http://es:9200/"\n',
    )

    settings = Settings.load(path, env={"FUSION_ES_URL": "https://prod:9243", "FUSION_HOME": "/x"})

    assert settings.kafka.bootstrap == "k1:9092,k2:9092"
    assert settings.elasticsearch.url == "https://prod:9243"
    assert settings.runtime.home == Path("/x")


def test_settings_are_frozen() -> None:
    settings = Settings.load(env={})

    with pytest.raises(ValueError):
        settings.kafka.bootstrap = "elsewhere:1"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ('[kafka]\nbootstrapp = "x:1"\n', "kafka.bootstrapp", "unknown key"),
        ('[elasticsearch]\nurl = "es:9200"\n', "elasticsearch.url", "http:// or https://"),
        ('[kafka]\nsecurity_protocol = "TLS"\n', "kafka.security_protocol", "PLAINTEXT"),
        ("[kafka\n", "", "invalid TOML"),
    ],
)
def test_bad_file_names_file_and_field(tmp_path: Path, text: str, field: str, problem: str) -> None:
    path = _write(tmp_path, text)

    with pytest.raises(ConfigError) as caught:
        Settings.load(path, env={})

    assert caught.value.source == str(path)
    assert caught.value.field == field
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_bad_env_override_names_the_variable() -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.load(env={"FUSION_KAFKA_BOOTSTRAP": "no-port"})

    assert caught.value.source == "environment FUSION_KAFKA_BOOTSTRAP"
    assert "host:port" in str(caught.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        Settings.load(tmp_path / "nope.toml", env={})


def test_secrets_are_hidden_but_reach_the_clients() -> None:
    settings = Settings.load(
        env={
            "FUSION_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "FUSION_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "FUSION_KAFKA_SASL_USERNAME": "svc",
            "FUSION_KAFKA_SASL_PASSWORD": "hunter2",
            "FUSION_ES_API_KEY": "s3cr3t-key",
        }
    )

    assert "hunter2" not in repr(settings) and "s3cr3t-key" not in repr(settings)
    assert settings.kafka.as_librdkafka_options()["sasl.password"] == "hunter2"
    assert 'password="hunter2"' in settings.kafka.as_spark_options()["kafka.sasl.jaas.config"]
    assert settings.elasticsearch.as_client_options()["api_key"] == "s3cr3t-key"


def test_the_kafka_ca_reaches_spark_as_a_pem_truststore() -> None:
    settings = Settings.load(
        env={
            "FUSION_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "FUSION_KAFKA_SSL_CA_LOCATION": "/etc/fusion/ca.pem",
        }
    )

    spark = settings.kafka.as_spark_options()
    librdkafka = settings.kafka.as_librdkafka_options()

    assert spark["kafka.ssl.truststore.location"] == librdkafka["ssl.ca.location"]
    assert spark["kafka.ssl.truststore.type"] == "PEM"  # not Java's default, JKS


def test_spark_conf_carries_jars_and_state_store() -> None:
    settings = Settings.load(env={"FUSION_SPARK_SHUFFLE_PARTITIONS": "3"})

    conf = settings.spark.as_spark_conf([Path("/j/a.jar"), Path("/j/b.jar")])

    assert conf["spark.jars"] == "/j/a.jar,/j/b.jar"
    assert conf["spark.sql.shuffle.partitions"] == "3"
    assert conf["spark.sql.streaming.stateStore.providerClass"].endswith(
        "RocksDBStateStoreProvider"
    )
    # A retried indexer task's acks carry other ack times: not a reason to fail the batch.
    assert conf["spark.sql.shuffle.orderIndependentChecksum.enabled"] == "false"


def test_spark_submit_gets_the_master_that_was_set_and_no_other(tmp_path: Path) -> None:
    """Under spark-submit the master comes from its command line: a set one must be printed."""
    from_env = Settings.load(env={"FUSION_SPARK_MASTER": "spark://master:7077"})
    from_file = Settings.load(_write(tmp_path, '[spark]\nmaster = "spark://m2:7077"\n'), env={})

    assert from_env.spark.submit_master() == "spark://master:7077"
    assert from_file.spark.submit_master() == "spark://m2:7077"
    assert from_file.spark.submit_master("yarn") == "yarn"
    # The default local master is not printed: it would override the user's own --master.
    assert Settings.load(env={}).spark.submit_master() is None
