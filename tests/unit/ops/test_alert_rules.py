"""The alert rules that ship (fusion/ops/alerts.yml), held by Prometheus's own promtool.

``promtool test rules`` evaluates each alert on the synthetic series of
alerts_test.yml; these tests also hold that every alert has such a test that
sees it fire, and a runbook section in docs/operations.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from fusion.ops.prometheus import ALERT_RULES
from tests.promtool import promtool

ROOT = Path(__file__).resolve().parents[3]
RULE_TESTS = Path(__file__).with_name("alerts_test.yml")


def _alerts() -> list[dict[str, object]]:
    groups = yaml.safe_load(ALERT_RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def _anchors(doc: Path) -> set[str]:
    """The anchors a Markdown renderer gives the document's headings (not code's comments)."""
    found, fenced = set(), False
    for line in doc.read_text().splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("#") and not fenced:
            title = re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower())
            found.add(title.replace(" ", "-"))
    return found


def test_promtool_finds_the_rules_valid() -> None:
    done = promtool("check", "rules", str(ALERT_RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(_alerts())} rules found" in done.stdout


def test_each_alert_fires_on_its_synthetic_series_and_stays_silent_on_a_healthy_one() -> None:
    done = promtool("test", "rules", str(RULE_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_test_that_sees_it_fire_and_a_runbook() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    fired = {
        case["alertname"]
        for group in tests
        for case in group.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    headings = _anchors(ROOT / "docs" / "operations.md")
    for alert in _alerts():
        name = str(alert["alert"])
        assert name in fired, f"{name}: no test in {RULE_TESTS.name} sees it fire"
        runbook = dict(alert["annotations"])["runbook"]  # type: ignore[call-overload]
        assert runbook.startswith("docs/operations.md#"), runbook
        assert runbook.split("#")[1] in headings, f"{name}: docs/operations.md has no {runbook}"
        assert dict(alert["labels"])["severity"] in ("critical", "warning")  # type: ignore[call-overload]
