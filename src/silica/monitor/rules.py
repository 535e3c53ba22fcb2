"""Prometheus recording and alerting rules for the planned deployments: the report's signals, live.

`silica monitor report` judges a time range after the fact; these rules let Prometheus compute the
same figures continuously and page when a deployment leaves its plan. Recording rules per deployment
(the `deployment` label, as the report uses): output tokens/s, mean TPOT and TTFT, TTFT and TPOT
p99, requests running and waiting. Alerts:

- TPOT mean above the plan's band high edge for 15 minutes. The plan is for the full batch, the
  slowest per-token load the deployment is sized for; a lighter load runs faster, so a window slower
  than the full-batch band is slow at any load (the report judges each window at its own load).
- TTFT / TPOT p99 above the SLO for 10 minutes, where the plan or the command gives one.
- Requests waiting for 10 minutes: the deployment is past the batch it can hold.

Metric names are vLLM's (the `vllm:` names, also served by vLLM on Neuron); the names come from the
same table the report reads (`silica.monitor.signals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from silica.monitor.plan import Planned
from silica.monitor.signals import SIGNALS

__all__ = ["prometheus_rules"]


def _vllm(key: str) -> str:
    sig = next(s for s in SIGNALS if s.key == key)
    return next(name for exporter, name, _ in sig.names if exporter == "vllm")


def prometheus_rules(
    plans: Sequence[Planned],
    *,
    ttft_slo_ms: float | None = None,
    tpot_slo_ms: float | None = None,
    rate_window: str = "5m",
) -> str:
    """A Prometheus rule file (YAML) for these deployments."""
    gen, running, waiting = _vllm("generation_tokens"), _vllm("requests_running"), _vllm("requests_waiting")
    tpot, ttft = _vllm("tpot"), _vllm("ttft")
    groups: list[dict[str, Any]] = []
    for p in plans:
        d = p.name
        lab = f'deployment="{_escape(d)}"'

        def sel(name: str, lab: str = lab) -> str:
            return f'{{__name__="{name}", {lab}}}'

        def rate(name: str) -> str:
            return f"sum(rate({sel(name)}[{rate_window}]))"

        def mean(hist: str) -> str:
            return f"{rate(hist + '_sum')} / {rate(hist + '_count')}"

        def p99(hist: str) -> str:
            return f"histogram_quantile(0.99, sum by (le) (rate({sel(hist + '_bucket')}[{rate_window}])))"

        labels = {"deployment": d}
        records = [
            ("silica:output_tokens_per_second", rate(gen)),
            ("silica:tpot_seconds:mean", mean(tpot)),
            ("silica:ttft_seconds:mean", mean(ttft)),
            ("silica:tpot_seconds:p99", p99(tpot)),
            ("silica:ttft_seconds:p99", p99(ttft)),
            ("silica:requests_running", f"sum({sel(running)})"),
            ("silica:requests_waiting", f"sum({sel(waiting)})"),
        ]
        rules: list[dict[str, Any]] = [{"record": r, "expr": e, "labels": labels} for r, e in records]
        mine = f"{{{lab}}}"
        if p.tpot_ms_high is not None:
            rules.append(
                _alert(
                    "SilicaTPOTAbovePlan",
                    f"silica:tpot_seconds:mean{mine} > {p.tpot_ms_high / 1000:.6g}",
                    "15m",
                    d,
                    f"{d}: mean TPOT above the plan's band ({p.tpot_ms_high:.1f} ms, full batch; "
                    f"plan {p.source})",
                )
            )
        for fig, slo in (("ttft", ttft_slo_ms or p.ttft_slo_ms), ("tpot", tpot_slo_ms or p.tpot_slo_ms)):
            if slo is not None:
                rules.append(
                    _alert(
                        f"Silica{fig.upper()}P99AboveSLO",
                        f"silica:{fig}_seconds:p99{mine} > {slo / 1000:.6g}",
                        "10m",
                        d,
                        f"{d}: {fig.upper()} p99 above the SLO of {slo:g} ms",
                    )
                )
        rules.append(
            _alert(
                "SilicaRequestsWaiting",
                f"silica:requests_waiting{mine} > 0",
                "10m",
                d,
                f"{d}: requests have waited for 10 minutes: the load is past the batch the deployment holds",
            )
        )
        groups.append({"name": f"silica-{d}", "rules": rules})
    return str(yaml.safe_dump({"groups": groups}, sort_keys=False, allow_unicode=True))


def _alert(name: str, expr: str, wait: str, deployment: str, summary: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": wait,
        "labels": {"severity": "warning", "deployment": deployment},
        "annotations": {"summary": summary},
    }


def _escape(value: str) -> str:
    """A label value inside a PromQL double-quoted string."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
