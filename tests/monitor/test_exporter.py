"""The plan exporter (scraped over HTTP) and the Grafana dashboard that overlays it on real metrics."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

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


def _generated(tmp: Path) -> dict[str, Any]:
    """`silica monitor dashboard --out`: the bundled plan dashboard with vLLM's and DCGM's signals."""
    out = tmp / "dashboard.json"
    code, _, err = run("monitor", "dashboard", "--out", str(out))
    assert code == 0, err
    loaded: dict[str, Any] = json.loads(out.read_text())
    return loaded


def _dashboard(which: str, tmp: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text()) if which == "bundled" else _generated(tmp)
    return loaded


BOTH = pytest.mark.parametrize("which", ["bundled", "generated"])


@BOTH
def test_dashboard_validates_against_grafanas_schema(which: str, tmp_path: Path) -> None:
    schema = json.loads((DATA / "grafana-dashboard.jsonschema.json").read_text())
    dashboard = _dashboard(which, tmp_path)
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


@BOTH
def test_dashboard_names_only_metrics_that_exist(which: str, tmp_path: Path) -> None:
    dashboard = _dashboard(which, tmp_path)
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
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


def test_generated_dashboard_covers_vllms_and_dcgms_signals(tmp_path: Path) -> None:
    dashboard = _generated(tmp_path)
    bundled = json.loads(DASHBOARD.read_text())
    assert dashboard["panels"][: len(bundled["panels"])] == bundled["panels"]  # the plan overlays, unchanged
    exprs = "\n".join(t["expr"] for p in dashboard["panels"] for t in p.get("targets", []))
    for q in ("0.5", "0.9", "0.99"):  # percentiles of TTFT, TPOT, e2e and queue time, as vLLM's dashboard
        for hist in (
            "time_to_first_token",
            "inter_token_latency",
            "e2e_request_latency",
            "request_queue_time",
        ):
            assert (
                f"histogram_quantile({q}, sum by (le, deployment) (rate(vllm:{hist}_seconds_bucket{{" in exprs
            )
    for name in (
        "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "rate(vllm:num_preemptions_total", "rate(vllm:generation_tokens_total", "rate(vllm:prompt_tokens_total",
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED",
    ):  # fmt: skip
        assert name in exprs, name
    assert 'DCGM_FI_DEV_FB_USED{deployment=~"$deployment"}) * 1048576' in exprs  # MiB to bytes
    assert 'DCGM_FI_DEV_GPU_UTIL{deployment=~"$deployment"}) * 0.01' in exprs  # percent to a fraction
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    cells = [
        (p["gridPos"]["y"] + dy, p["gridPos"]["x"] + dx)
        for p in dashboard["panels"]
        for dy in range(p["gridPos"]["h"])
        for dx in range(p["gridPos"]["w"])
    ]
    assert len(cells) == len(set(cells))  # no two panels overlap
