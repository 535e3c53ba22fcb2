"""SARIF 2.1.0 for a scan, so findings show up in GitHub code scanning and in editors.

One `run` with the tool `silica` and one reporting rule per scan rule; each finding is a `result` with
its file and line (relative to the scanned folder, `%SRCROOT%`). The level follows the finding's worst
impact on the targets: blocker -> error, needs-work -> warning, info -> note. The verdicts and the effort
travel in the run's `properties`, since SARIF has no place for them.
"""

from __future__ import annotations

from typing import Any

from silica.scan.report import IMPACTS, Finding, ScanReport

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "to_sarif"]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVEL = {"blocker": "error", "needs-work": "warning", "info": "note"}


def _worst(f: Finding) -> str:
    return max(f.impact.values(), key=IMPACTS.index, default="info")


def _rule(f: Finding) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": f.rule,
        "name": f.rule,
        "shortDescription": {"text": f.title},
        "defaultConfiguration": {"level": _LEVEL[_worst(f)]},
    }
    if f.alternative:
        rule["fullDescription"] = {"text": f.alternative}
        rule["help"] = {"text": f"Neuron alternative: {f.alternative}"}
    if f.source:
        rule["properties"] = {"source": f.source}
    return rule


def _result(f: Finding, index: int) -> dict[str, Any]:
    text = f.message + (f". Neuron alternative: {f.alternative}" if f.alternative else "")
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index,
        "level": _LEVEL[_worst(f)],
        "message": {"text": text},
        "properties": {"impact": dict(f.impact), "effortWeeks": f.effort_weeks},
    }
    if f.file is not None:
        location: dict[str, Any] = {"artifactLocation": {"uri": f.file, "uriBaseId": "%SRCROOT%"}}
        if f.line:
            location["region"] = {"startLine": f.line}
        result["locations"] = [{"physicalLocation": location}]
    return result


def to_sarif(report: ScanReport, *, version: str = "") -> dict[str, Any]:
    """The report as a SARIF 2.1.0 log (a JSON-ready dict)."""
    rules: dict[str, int] = {}
    descriptors: list[dict[str, Any]] = []
    results = []
    for f in report.findings:
        if f.rule not in rules:
            rules[f.rule] = len(descriptors)
            descriptors.append(_rule(f))
        results.append(_result(f, rules[f.rule]))
    driver: dict[str, Any] = {"name": "silica", "rules": descriptors}
    if version:
        driver["version"] = version
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": driver},
                "results": results,
                "properties": {
                    "subject": report.subject,
                    "task": report.task,
                    "targetVerdicts": {t: v.verdict for t, v in report.target_verdicts.items()},
                    "effortWeeks": report.effort_weeks,
                },
            }
        ],
    }
