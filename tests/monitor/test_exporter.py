"""The plan exporter (scraped over HTTP) and the Grafana dashboard that overlays it on real metrics."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import httpx
import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.monitor.conftest import DATA, Replay, run

from silica.monitor import load_plan
from silica.monitor.exporter import EXPORTED, serve
from silica.monitor.signals import known_names

DASHBOARD = (
    Path(__file__).resolve().parents[2] / "src" / "silica" / "data" / "grafana" / "silica-monitor.json"
)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[
                (s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k in ("deployment", "bound"))))
            ] = s.value
    return out


def test_exporter_serves_the_plan_on_loopback(replay: Replay) -> None:
    plans = load_plan(replay.gpu_plan, "chat-gpu") + load_plan(replay.neuron_plan, "chat-neuron")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server, thread = serve(plans, "127.0.0.1", port)
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    got = _samples(text)
    gpu = replay.gpu
    dep = (("bound", "expected"), ("deployment", "chat-gpu"))
    assert got[("silica_plan_output_tokens_per_second", dep)] == pytest.approx(gpu["output_tokens_per_s"])
    assert got[
        ("silica_plan_tpot_seconds", (("bound", "high"), ("deployment", "chat-gpu")))
    ] == pytest.approx(gpu["tpot_ms_high"] / 1000)
    assert got[
        ("silica_plan_ttft_seconds", (("bound", "low"), ("deployment", "chat-neuron")))
    ] == pytest.approx(replay.neuron["ttft_ms_low"] / 1000)
    assert got[("silica_plan_cost_usd_per_hour", (("deployment", "chat-gpu"),))] == pytest.approx(
        gpu["price"]["usd_per_hour"]
    )
    assert {name for name, _ in got} <= set(EXPORTED)


def test_exporter_once_prints_the_same_text(replay: Replay) -> None:
    code, out, err = run("monitor", "exporter", "--plan", f"chat-gpu={replay.gpu_plan}", "--once")
    assert code == 0, err
    assert _samples(out)[("silica_plan_instances", (("deployment", "chat-gpu"),))] == 1.0


def test_dashboard_validates_against_grafanas_schema() -> None:
    schema = json.loads((DATA / "grafana-dashboard.jsonschema.json").read_text())
    dashboard = json.loads(DASHBOARD.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(dashboard, schema)
    broken = {k: v for k, v in dashboard.items() if k != "schemaVersion"}
    with pytest.raises(jsonschema.ValidationError):  # the check can fail
        jsonschema.validate(broken, schema)


PROMQL_WORDS = {
    "sum",
    "avg",
    "count",
    "by",
    "on",
    "group_left",
    "rate",
    "histogram_quantile",
    "le",
    "deployment",
    "Hostname",
    "instance_id",
    "error_type",
    "label_values",
}


def test_dashboard_names_only_metrics_that_exist() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs.append(dashboard["templating"]["list"][1]["query"])
    allowed = set(EXPORTED) | known_names()
    named = set()
    for expr in exprs:
        names = re.findall(r"([A-Za-z_:][A-Za-z0-9_:]*)\{", expr)
        named.update(names)
        # Whatever is not a selector, a label matcher or a number must be a PromQL word: no bare metric.
        rest = re.sub(r"[A-Za-z_:][A-Za-z0-9_:]*\{[^}]*\}", " ", expr)
        rest = re.sub(r"\[[0-9]+[smhd]\]|\b\d+(\.\d+)?(e\d+)?\b", " ", rest)
        words = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", rest)) - {"silica_plan_info"}
        assert words <= PROMQL_WORDS, (expr, words - PROMQL_WORDS)
    assert named <= allowed, named - allowed
    assert {"silica_plan_tpot_seconds", "DCGM_FI_DEV_GPU_UTIL", "neuroncore_utilization_ratio"} <= named
