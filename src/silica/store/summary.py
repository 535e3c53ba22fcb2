"""One line that says what a stored record holds, for `silica history` and the web app's history page.

Records are library results serialised by `to_dict()`; each kind has a few fields worth a glance.
A record whose payload carries its own `summary` string (pilot and monitor results do) is shown by it.
Unknown kinds fall back to their top-level keys, so a new kind is never shown as blank.
"""

from __future__ import annotations

from typing import Any

__all__ = ["summarize"]


def _num(value: Any, spec: str) -> str | None:
    return format(value, spec) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _estimate(p: dict[str, Any]) -> str:
    where = f"{p.get('instance', '?')} x{p.get('count', '?')}"
    if p.get("feasible") is False:
        reasons = p.get("reasons") or ["infeasible"]
        return f"{where}: cannot run ({reasons[0]})"
    parts = [where]
    for key, label, spec in (
        ("ttft_ms", "TTFT {} ms", ".0f"),
        ("tpot_ms", "TPOT {} ms", ".1f"),
        ("mfu", "MFU {}", ".0%"),
        ("train_days", "{} days", ",.1f"),
        ("usd_per_1m_output_tokens", "${}/1M out", ",.3f"),
        ("usd_per_run", "${}/run", ",.0f"),
    ):
        text = _num(p.get(key), spec)
        if text is not None:
            parts.append(label.format(text))
    return ", ".join(parts)


def _fleet_sweep(p: dict[str, Any]) -> str:
    raw = p.get("metrics")
    metrics: dict[str, Any] = raw if isinstance(raw, dict) else p
    parts = [str(p.get("policy", "")).strip() or "fleet"]
    for key, label, spec in (
        ("slo_attainment", "SLO {}", ".2%"),
        ("utilisation_busy", "busy {}", ".1%"),
        ("jobs_deadline_missed", "{} deadlines missed", ",d"),
    ):
        text = _num(metrics.get(key), spec)
        if text is not None:
            parts.append(label.format(text))
    return ", ".join(parts)


def summarize(kind: str, payload: Any) -> str:
    """A short, human line for one stored record."""
    if not isinstance(payload, dict):
        return ""
    summary = payload.get("summary")
    if isinstance(summary, str):
        return summary
    if kind == "estimate":
        return _estimate(payload)
    if kind == "fleet_sweep":
        return _fleet_sweep(payload)
    verdict = payload.get("verdict")
    if isinstance(verdict, str):
        return verdict
    if kind == "inventory":
        workloads = payload.get("workloads")
        return f"{len(workloads)} workloads" if isinstance(workloads, list) else ""
    if kind == "scan":
        targets = payload.get("targets") or payload.get("verdicts")
        if isinstance(targets, list):
            return ", ".join(f"{t.get('target')}: {t.get('verdict')}" for t in targets if isinstance(t, dict))
    keys = [k for k in payload if not k.startswith("_")][:4]
    return "fields: " + ", ".join(keys) if keys else ""
