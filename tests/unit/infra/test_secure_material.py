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


def test_the_storage_tool_gets_salted_passwords_never_the_passwords(tmp_path: Path) -> None:
    """A command line is anyone's to read (/proc/<pid>/cmdline): no password goes on one."""
    import base64
    import hashlib

    from fusion.infra.kafka import SCRAM_ITERATIONS, _scram_users

    material = secure.ensure(tmp_path / "secure")
    creds = material.credentials()

    arguments = _scram_users(material)

    line = " ".join(arguments)
    for password in (creds.kafka_password, creds.kafka_broker_password):
        assert password not in line
        assert base64.b64encode(password.encode()).decode() not in line
    assert arguments[0::2] == ["--add-scram", "--add-scram"]
    # What the broker derives from the password itself (RFC 5802's Hi): it authenticates.
    fields = dict(part.split("=", 1) for part in arguments[1].split("[", 1)[1][:-1].split(","))
    salt = base64.b64decode(fields["salt"].strip('"'))
    want = hashlib.pbkdf2_hmac("sha512", creds.kafka_password.encode(), salt, SCRAM_ITERATIONS)
    assert base64.b64decode(fields["saltedpassword"].strip('"')) == want
