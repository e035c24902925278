"""An Elasticsearch URL's password never shows: not in `fusion check`, not in an error line."""

from __future__ import annotations

import pytest

from fusion.core.connections import ElasticsearchSettings, redact_url
from fusion.core.errors import ServiceUnavailableError
from fusion.core.machine.ports import free_port
from fusion.elastic import client as es_client


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://fusion:s3cr3t@es.example:9200", "https://fusion:***@es.example:9200"),
        ("http://fusion:p%40ss@127.0.0.1:9200/prefix", "http://fusion:***@127.0.0.1:9200/prefix"),
        ("http://fusion:a:b@c@[::1]:9200", "http://fusion:***@[::1]:9200"),
        ("http://token@127.0.0.1:9200", "http://token@127.0.0.1:9200"),
        ("http://127.0.0.1:9200", "http://127.0.0.1:9200"),
    ],
)
def test_a_password_in_a_url_is_shown_as_stars(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_an_unreachable_server_is_named_without_its_password() -> None:
    url = f"http://fusion:s3cr3t-pw@127.0.0.1:{free_port()}"
    settings = ElasticsearchSettings(url=url, request_timeout=2)

    with pytest.raises(ServiceUnavailableError) as refused:
        es_client.check(settings)

    assert "s3cr3t-pw" not in str(refused.value)
    assert "fusion:***@127.0.0.1" in str(refused.value)


@pytest.mark.parametrize(
    "mimetype",
    ["application/json", "application/vnd.elasticsearch+json; compatible-with=8",
     "application/vnd.elasticsearch+x-ndjson; compatible-with=8"],
)  # fmt: skip
def test_the_clients_answers_keep_an_integer_beyond_64_bits_whole(mimetype: str) -> None:
    """A source document holding 2**70 comes back from _mget as 2**70, not as a float."""
    es = es_client.connect(ElasticsearchSettings())
    serializer = es.transport.serializers.get_serializer(mimetype)

    answer = serializer.loads(b'{"n": 1180591620717411303424, "x": [1.5e300, "\\u00e9"]}')

    assert answer in ({"n": 2**70, "x": [1.5e300, "é"]}, [{"n": 2**70, "x": [1.5e300, "é"]}])
    assert type((answer if isinstance(answer, dict) else answer[0])["n"]) is int
