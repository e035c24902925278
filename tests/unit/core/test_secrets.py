"""No secret from the configuration reaches an error message, a dump, the status line or logs."""

from __future__ import annotations

import json
import logging

import pytest

from fusion.core.errors import ConfigError, CredentialsError, ServiceUnavailableError
from fusion.core.settings import Settings
from fusion.observe.metrics import Metrics
from fusion.pipeline import status_line, summary

SECRETS = {
    "FUSION_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "FUSION_KAFKA_SASL_MECHANISM": "PLAIN",
    "FUSION_KAFKA_SASL_USERNAME": "svc",
    "FUSION_KAFKA_SASL_PASSWORD": "kafka-pw-7781",
    "FUSION_ES_USERNAME": "elastic",
    "FUSION_ES_PASSWORD": "es-pw-5523",
}
HIDDEN = ("kafka-pw-7781", "es-pw-5523")


def _clean(text: str) -> None:
    for secret in HIDDEN:
        assert secret not in text


def test_settings_dumps_and_reprs_hide_secrets() -> None:
    settings = Settings.load(env=SECRETS)

    _clean(repr(settings))
    _clean(str(settings))
    _clean(settings.model_dump_json())
    _clean(json.dumps(settings.model_dump(mode="json")))


def test_errors_name_the_server_and_setting_but_not_the_secret() -> None:
    settings = Settings.load(env=SECRETS)
    errors = [
        ServiceUnavailableError("Elasticsearch", settings.elasticsearch.url, "ConnectionError"),
        CredentialsError("Elasticsearch", settings.elasticsearch.url, "HTTP 401"),
        CredentialsError("Kafka", settings.kafka.bootstrap, "SASL authentication failed"),
    ]
    for error in errors:
        _clean(str(error))
    assert "api_key or username/password" in str(errors[1])
    assert "sasl_password" in str(errors[2])


def test_a_bad_secret_value_is_not_echoed_by_validation() -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.load(env={**SECRETS, "FUSION_ES_REQUEST_TIMEOUT": "kafka-pw-7781"})
    _clean(str(caught.value))


def test_status_line_summary_and_logs_carry_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings.load(env=SECRETS)
    metrics = Metrics()
    metrics.alert("elasticsearch", "Elasticsearch unavailable, retrying: ConnectionError")
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("fusion").debug("settings: %s", settings)

    _clean(status_line(metrics))
    _clean(json.dumps(summary(metrics)))
    _clean(caplog.text)
