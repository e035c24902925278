"""The secured runtime's throwaway CA, certificate and credentials."""

from __future__ import annotations

import ssl
import stat
from pathlib import Path

from fusion.infra import secure


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_material_is_made_once_with_private_files(tmp_path: Path) -> None:
    material = secure.ensure(tmp_path / "secure")
    first = material.credentials()

    again = secure.ensure(tmp_path / "secure")

    assert again.credentials() == first  # kept, not regenerated
    assert len({first.kafka_password, first.kafka_broker_password, first.es_password}) == 3
    for private in (material.credentials_file, material.server_key, material.kafka_keystore):
        assert mode(private) == 0o600, private
    # The server certificate names the loopback address the clients dial, and its CA is a CA.
    server = ssl._ssl._test_decode_cert(str(material.server_cert))  # type: ignore[attr-defined]
    assert ("IP Address", "127.0.0.1") in server["subjectAltName"]
    context = ssl.create_default_context(cafile=str(material.ca))
    assert context.cert_store_stats()["x509_ca"] == 1


def test_the_env_file_holds_the_secrets_privately(tmp_path: Path) -> None:
    material = secure.ensure(tmp_path / "secure")

    env = secure.write_env(material, "127.0.0.1:9093", "https://127.0.0.1:9201")

    text = env.read_text()
    assert mode(env) == 0o600
    assert "export FUSION_KAFKA_SECURITY_PROTOCOL='SASL_SSL'" in text
    assert f"export FUSION_KAFKA_SASL_PASSWORD='{material.credentials().kafka_password}'" in text
    assert f"export FUSION_ES_CA_CERTS='{material.ca}'" in text
