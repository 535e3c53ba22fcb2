"""Production telemetry against the plan (`silica monitor`).

    from silica.monitor import load_plan, read_file, query_prometheus, build_report
    plans = load_plan(Path("plan.json"), "chat")
    tel = query_prometheus("http://127.0.0.1:9090", since, until)      # or read_file(Path("scrapes.om"))
    report = build_report(tel, plans, since=since, until=until, window_s=3600)

Readers turn DCGM exporter, neuron-monitor and serving-engine metrics (vLLM, SGLang, TGI, NxD Inference
through vLLM) into plain series; `build_report` compares them with what the plan predicted; the
exporter serves the plan itself as Prometheus metrics so dashboards can overlay plan and actual.
"""

from __future__ import annotations

from silica.monitor.plan import Planned, load_plan, parse_plan_arg
from silica.monitor.prometheus import query_prometheus
from silica.monitor.report import build_report
from silica.monitor.results import Advice, DeploymentReport, Drift, Latency, MonitorReport, Span
from silica.monitor.series import Series, Telemetry, merge, read_exposition, read_file, read_neuron_monitor

__all__ = [
    "Advice",
    "DeploymentReport",
    "Drift",
    "Latency",
    "MonitorReport",
    "Planned",
    "Series",
    "Span",
    "Telemetry",
    "build_report",
    "load_plan",
    "merge",
    "parse_plan_arg",
    "query_prometheus",
    "read_exposition",
    "read_file",
    "read_neuron_monitor",
]
