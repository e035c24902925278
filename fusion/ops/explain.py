"""`fusion explain KEY`: why a key is (or is not) enriched, from every place that knows.

Three witnesses are asked: Elasticsearch (which source documents exist, at
which version; is there an enriched document and which versions it holds), and
the counter's state in its checkpoint (which acks it saw and when, whether it
fired or expired, when its deadline is). :func:`explain` turns what they said
into a verdict (pure); :func:`gather` does the asking.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from elasticsearch import NotFoundError

from fusion.core import PipelineConfig, iso_from_ms
from fusion.counter import KeyState, Rules, deadline_of, has_state, state_of_key
from fusion.elastic import RetryPolicy
from fusion.elastic import client as es_client
from fusion.enricher import ChildRows, FoundDoc, enrich_spec, fetch_arrays, lookups
from fusion.observe import Metrics

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Evidence:
    """What Elasticsearch and the counter's checkpoint hold for one key."""

    key: str
    docs: Mapping[str, FoundDoc]
    enriched: Mapping[str, Any] | None  # the enriched document's _source
    state: KeyState | None
    state_expires_ms: int | None = None
    counter_started: bool = True  # False: the counter never committed a batch
    children: Mapping[str, ChildRows] | None = None  # its children, by children source


def gather(spark: SparkSession, config: PipelineConfig, key: str) -> Evidence:
    es = es_client.connect(config.elasticsearch)
    found = state_of_key(spark, config, key)
    state, ttl = found if found is not None else (None, None)
    # A dimension's row is looked up by the id the key's slot holds (docs/dimensions.md).
    rows = {name: s.ref for name, s in (state.seen.items() if state else ()) if s.ref}
    spec = enrich_spec(config)
    docs = lookups.fetch(es, spec, [key], Metrics(), rows={key: rows})[key]
    children = fetch_arrays(es, spec, [key], Metrics(), RetryPolicy())[key]
    try:
        enriched = es.get(index=config.enriched_index, id=key)["_source"]
    except NotFoundError:
        enriched = None
    return Evidence(key, docs, enriched, state, ttl, has_state(spark, config), children)


def explain(config: PipelineConfig, ev: Evidence) -> dict[str, Any]:
    """The report of one key: a verdict, a sentence saying why, and the facts behind it."""
    rules = Rules.of(config)
    enriched = _enriched(ev)
    verdict, why = _verdict(config, rules, ev, enriched)
    return {
        "key": ev.key,
        "pipeline": config.name,
        "verdict": verdict,
        "why": why,
        "sources": {
            name: _source(config, ev, name) for name in config.parts if name not in config.children
        },
        "children": {name: _children(ev, name) for name in config.children},
        "counter": _counter(rules, ev),
        "enriched": enriched,
    }


def _children(ev: Evidence, name: str) -> dict[str, Any]:
    """A children source's rows in Elasticsearch, and in the enriched document."""
    found = (ev.children or {}).get(name) or ChildRows()
    seen = ev.state.seen.get(name) if ev.state else None
    held = (ev.enriched or {}).get(name)
    truncated = (ev.enriched or {}).get("fusion", {}).get("truncated", {}).get(name, 0)
    return {
        "in_elasticsearch": len(found.rows) + found.left_out,
        "in_enriched_document": len(held) if isinstance(held, list) else None,
        "truncated": truncated,
        "changes_counted": seen.changes if seen else 0,
    }


def _source(config: PipelineConfig, ev: Evidence, name: str) -> dict[str, Any]:
    doc = ev.docs.get(name)
    seen = ev.state.seen.get(name) if ev.state else None
    return {
        "required": name in config.required_parts,
        "in_elasticsearch": doc is not None,
        "version": doc.version if doc else None,
        "acked": seen is not None,
        "acked_version": seen.version if seen else None,
        "acked_at": seen.acked_at if seen else None,
    }


def _counter(rules: Rules, ev: Evidence) -> dict[str, Any] | None:
    state = ev.state
    if state is None:
        return None
    deadline = deadline_of(state, rules) if not (state.fired or state.expired_at) else None
    return {
        "first_ack_at": state.first_ack_at,
        "fired_at": state.fired_at,
        "expired_at": state.expired_at,
        "missing": state.missing(rules.waited),
        "deadline_at": _iso(deadline),
        "state_expires_at": _iso(ev.state_expires_ms),
    }


def _enriched(ev: Evidence) -> dict[str, Any] | None:
    if ev.enriched is None:
        return None
    meta = ev.enriched.get("fusion", {})
    versions = meta.get("versions", {})
    current = {name: doc.version for name, doc in ev.docs.items()}
    return {
        "complete": meta.get("complete", True),
        "missing": meta.get("missing", []),
        "versions": versions,
        "up_to_date": versions == current,
        "fired_at": meta.get("fired_at"),
        "enriched_at": meta.get("enriched_at"),
    }


def _verdict(
    config: PipelineConfig, rules: Rules, ev: Evidence, enriched: Mapping[str, Any] | None
) -> tuple[str, str]:
    state, docs = ev.state, ev.docs
    missing_in_es = [s for s in config.required_parts if s not in docs]
    if enriched is not None:
        if enriched["complete"]:
            if not enriched["up_to_date"]:
                return "enriched", (
                    "enriched, but from older source versions than Elasticsearch holds now: "
                    "an update is on its way (or run `fusion reconcile`)"
                )
            return "enriched", "every required source was joined into the enriched document"
        return "partial", f"partial document: deadline passed without {enriched['missing']}"
    if state is not None:
        if state.fired:
            return "fired", f"fired at {state.fired_at}; the enricher has not written it yet"
        if state.expired_at:
            return "incomplete", (
                f"deadline passed at {state.expired_at} without "
                f"{state.missing(rules.waited)}; "
                "it still fires if they arrive"
            )
        deadline = _iso(deadline_of(state, rules))
        when = f"until {deadline}" if deadline else "with no deadline"
        waited = state.missing(rules.waited)
        return "waiting", f"waiting for {waited} {when}"
    if not docs:
        return "unknown", "no source document in Elasticsearch and no ack seen by the counter"
    if not missing_in_es:
        return "lost", (
            "complete in Elasticsearch but never enriched and unknown to the counter "
            "(acks lost or forgotten): run `fusion reconcile`"
        )
    started = "" if ev.counter_started else " (the counter has not run yet)"
    return "waiting", f"Elasticsearch lacks {missing_in_es}; no ack seen by the counter{started}"


def _iso(ms: int | None) -> str | None:
    return iso_from_ms(ms) if ms else None


def render(report: Mapping[str, Any]) -> str:
    """The report as text for a terminal."""
    lines = [f"key {report['key']} in pipeline {report['pipeline']}: {report['verdict'].upper()}"]
    lines.append(f"  {report['why']}")
    lines.append("  sources:")
    for name, s in report["sources"].items():
        kind = "required" if s["required"] else "optional"
        es = f"in Elasticsearch, version {s['version']}" if s["in_elasticsearch"] else "not indexed"
        ack = f"acked version {s['acked_version']} at {s['acked_at']}" if s["acked"] else "no ack"
        lines.append(f"    {name:<14} {kind:<9} {es:<34} {ack}")
    for name, c in report.get("children", {}).items():
        held = c["in_enriched_document"]
        doc = "not in an enriched document" if held is None else f"{held} in the enriched document"
        cut = f", {c['truncated']} left out" if c["truncated"] else ""
        lines.append(
            f"    {name:<14} children  {c['in_elasticsearch']} in Elasticsearch, {doc}{cut}; "
            f"{c['changes_counted']} changes counted"
        )
    counter = report["counter"]
    if counter is None:
        lines.append("  counter: no state for this key")
    else:
        lines.append(f"  counter: first ack {counter['first_ack_at']}")
        for label in ("fired_at", "expired_at", "deadline_at", "state_expires_at"):
            if counter[label]:
                lines.append(f"           {label.replace('_', ' ')} {counter[label]}")
        if counter["missing"]:
            lines.append(f"           missing {', '.join(counter['missing'])}")
    enriched = report["enriched"]
    if enriched is None:
        lines.append("  enriched: no document")
    else:
        state = "complete" if enriched["complete"] else f"PARTIAL, lacks {enriched['missing']}"
        current = "" if enriched["up_to_date"] else " (older than the sources)"
        lines.append(f"  enriched: {state}, versions {enriched['versions']}{current}")
        lines.append(f"            fired {enriched['fired_at']}, written {enriched['enriched_at']}")
    return "\n".join(lines)
