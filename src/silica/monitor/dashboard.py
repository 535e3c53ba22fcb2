"""A Grafana dashboard of the engine and accelerator signals, generated from the signal table.

The bundled dashboard (`data/grafana/silica-monitor.json`) overlays Silica's plan on production: planned
capacity, the TTFT/TPOT band, cost per token. Operators also keep vLLM's own dashboard (latency
percentiles, scheduler state, KV cache, preemptions, token throughput) and NVIDIA's DCGM dashboard
(utilisation, power, memory) open beside it. `engine_dashboard` is that dashboard plus a row per
group of those signals, one panel per signal, so a team imports one file instead of three.

Every metric name comes from `silica.monitor.signals.SIGNALS`, the table the report reads, so the
dashboard and the report cannot disagree on what a name means, and a name no exporter documents never
enters a panel (tests/monitor/test_exporter.py checks both files against Grafana's schema and the
table). Unit scales (DCGM's percent and MiB) are applied in the query, as the report applies them.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

from silica.monitor.signals import SIGNALS, Signal, family_of

__all__ = ["ENGINE_ROWS", "engine_dashboard"]

_DS = {"type": "prometheus", "uid": "${datasource}"}
_RATE = "5m"
_LABEL = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "tgi": "TGI",
    "dcgm": "DCGM",
    "neuron-monitor": "Neuron",
    "trtllm": "TensorRT-LLM",
    "triton": "Triton",
}

# (row title, [(signal key, panel title, Grafana unit)]): the signals of vLLM's and DCGM's dashboards.
ENGINE_ROWS: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    (
        "Request latency (engine histograms)",
        (
            ("ttft", "Time to first token p50 / p90 / p99", "s"),
            ("tpot", "Time per output token p50 / p90 / p99", "s"),
            ("e2e", "End-to-end request latency p50 / p90 / p99", "s"),
            ("queue_time", "Queue time p50 / p90 / p99", "s"),
        ),
    ),
    (
        "Scheduler and KV cache",
        (
            ("requests_running", "Requests running", "short"),
            ("requests_waiting", "Requests waiting", "short"),
            ("kv_cache_usage", "KV-cache use", "percentunit"),
            ("preemptions", "Preemptions / s", "short"),
        ),
    ),
    (
        "Token throughput",
        (
            ("generation_tokens", "Generated tokens / s", "short"),
            ("prompt_tokens", "Prompt tokens / s", "short"),
        ),
    ),
    (
        "Accelerators (DCGM / neuron-monitor)",
        (
            ("chip_utilisation", "GPU / NeuronCore utilisation", "percentunit"),
            ("sm_active", "SM active", "percentunit"),
            ("tensor_active", "Tensor pipe active", "percentunit"),
            ("power", "Board power", "watt"),
            ("memory_used", "Accelerator memory used", "bytes"),
        ),
    ),
)


def _signal(key: str) -> Signal:
    return next(s for s in SIGNALS if s.key == key)


# Label matchers a name needs to mean the signal: neuron-monitor reports host and device memory in one
# family, told apart by `memory_location` (the bundled dashboard's memory panel reads the device's).
_MATCH = {"neuron_runtime_memory_used_bytes": 'memory_location="neuron_device",'}


def _scaled(expr: str, scale: float) -> str:
    return expr if scale == 1.0 else f"{expr} * {scale:.12g}"


def _sel(name: str) -> str:
    family, match = family_of(name)
    extra = f'{match[0]}="{match[1]}",' if match else _MATCH.get(family, "")
    return f'{family}{{{extra}deployment=~"$deployment"}}'


def _targets(sig: Signal) -> list[tuple[str, str]]:
    """(PromQL, legend) per exporter name of the signal, per deployment."""
    out = []
    for exporter, name, scale in sig.names:
        who = f"{_LABEL.get(exporter, exporter)} {name.split(':', 1)[-1]}"
        if sig.kind == "histogram":
            for q in (0.5, 0.9, 0.99):
                expr = f"histogram_quantile({q:g}, sum by (le, deployment) (rate({_sel(name + '_bucket')}[{_RATE}])))"
                out.append((_scaled(expr, scale), f"{{{{deployment}}}} {who} p{round(q * 100)}"))
        elif sig.kind == "counter":
            out.append(
                (
                    _scaled(f"sum by (deployment) (rate({_sel(name)}[{_RATE}]))", scale),
                    f"{{{{deployment}}}} {who}",
                )
            )
        elif sig.unit == "fraction":  # a per-chip or per-engine share: the deployment's mean
            out.append((_scaled(f"avg by (deployment) ({_sel(name)})", scale), f"{{{{deployment}}}} {who}"))
        else:
            out.append((_scaled(f"sum by (deployment) ({_sel(name)})", scale), f"{{{{deployment}}}} {who}"))
    return out


def _panel(pid: int, sig: Signal, title: str, unit: str, x: int, y: int) -> dict[str, Any]:
    refs = [chr(ord("A") + i) for i in range(26)]
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "description": f"{sig.help} ({sig.key}): "
        + ", ".join(f"{_LABEL.get(e, e)} {n}" for e, n, _ in sig.names),
        "datasource": _DS,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "targets": [
            {"refId": refs[i], "datasource": _DS, "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(_targets(sig))
        ],
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True}},
    }


def engine_dashboard() -> dict[str, Any]:
    """The bundled plan dashboard with a row per group of engine and accelerator signals appended."""
    base: dict[str, Any] = json.loads(
        resources.files("silica").joinpath("data/grafana/silica-monitor.json").read_text(encoding="utf-8")
    )
    out = copy.deepcopy(base)
    out["uid"] = "silica-monitor-engines"
    out["title"] = "Silica: plan, engines and accelerators"
    out["description"] = (
        base["description"] + " Below the plan: the signals of vLLM's and DCGM's own dashboards "
        "(latency percentiles, scheduler, KV cache, preemptions, token throughput, utilisation, power, memory)."
    )
    panels: list[dict[str, Any]] = out["panels"]
    pid = max(int(p["id"]) for p in panels) + 1
    y = max(int(p["gridPos"]["y"]) + int(p["gridPos"]["h"]) for p in panels)
    for row, members in ENGINE_ROWS:
        panels.append(
            {
                "id": pid,
                "type": "row",
                "title": row,
                "collapsed": False,
                "panels": [],  # an open row: its panels follow it at the top level
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
            }
        )
        pid, y = pid + 1, y + 1
        for i, (key, title, unit) in enumerate(members):
            panels.append(_panel(pid, _signal(key), title, unit, 12 * (i % 2), y + 8 * (i // 2)))
            pid += 1
        y += 8 * ((len(members) + 1) // 2)
    return out
