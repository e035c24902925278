"""The elasticsearch client against the real node: bulk with refresh=wait_for, search, _mget."""

from __future__ import annotations

from collections.abc import Callable

from elasticsearch import Elasticsearch, helpers

from fusion.elastic import client as es_client


def test_bulk_wait_for_is_searchable_and_mget_finds_docs(
    es: Elasticsearch, make_index: Callable[[str], str]
) -> None:
    index = make_index("smoke")
    actions = [
        {"_op_type": "index", "_index": index, "_id": f"k{i}", "_source": {"n": i, "kind": "x"}}
        for i in range(50)
    ]

    ok, errors = helpers.bulk(es, actions, refresh="wait_for", raise_on_error=False)

    assert (ok, errors) == (50, [])
    # refresh=wait_for returned, so every document is already visible to search.
    hits = es.search(index=index, query={"match": {"kind": "x"}}, size=0, track_total_hits=True)
    assert hits["hits"]["total"]["value"] == 50
    found = es.mget(index=index, ids=["k3", "k49", "missing"])["docs"]
    assert [doc["found"] for doc in found] == [True, True, False]
    assert found[0]["_source"] == {"n": 3, "kind": "x"}
    assert found[0]["_version"] == 1


def test_server_reports_version(es: Elasticsearch) -> None:
    assert es_client.version(es).startswith("8.")
