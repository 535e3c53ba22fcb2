"""`silica simulate` and `silica compare --ttft-p90-ms/--tbt-p99-ms` from the command line."""

from __future__ import annotations

import csv
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from silica.cli.app import app

runner = CliRunner()
BASE = ["simulate", "llama-3.1-8b", "--on", "g6e.xlarge", "--input-len", "1024", "--output-len", "256"]


def _run(*args: str) -> dict[str, object]:
    result = runner.invoke(app, [*BASE, *args, "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


def test_p99_ttft_grows_from_rate_2_to_8() -> None:
    low = _run("--rate", "2", "--requests", "2000")
    high = _run("--rate", "8", "--requests", "2000")
    for r in (low, high):
        for key in ("ttft_ms", "tbt_ms"):
            p = r[key]
            assert isinstance(p, dict)
            assert p["p50"] <= p["p90"] <= p["p99"]
    assert high["ttft_ms"]["p99"] > low["ttft_ms"]["p99"]  # type: ignore[index]


def test_json_carries_the_latency_vs_rate_curve() -> None:
    r = _run("--rate", "4", "--requests", "500", "--prefix-hit", "0.25")
    curve: Any = r["latency_vs_rate"]
    assert [p["rate_factor"] for p in curve] == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5]
    offered = [p["offered_req_s"] for p in curve]
    assert offered == sorted(offered) and offered[3] == pytest.approx(r["offered_req_s"])
    assert curve[3]["ttft_ms"] == r["ttft_ms"]  # the curve's 1x point is the run itself
    p90 = [p["ttft_ms"]["p90"] for p in curve]
    assert p90[-1] > p90[0]
    assert r["engine"]["prefix_hit"] == 0.25  # type: ignore[index]


def test_per_request_csv(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "rows.csv"
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,input_tokens,output_tokens\n0,100,10\n0.1,200,20\n0.2,300,30\n")
    r = _run("--trace", str(trace), "--replicas", "2", "--balancer", "least-outstanding", "--out", str(out))
    assert r["completed"] == 3
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["input_tokens"]) for row in rows] == [100, 200, 300]
    assert all(float(row["ttft_ms"]) > 0 for row in rows)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--rate", "0"], "rate"),
        (["--arrival", "weibull"], "arrival"),
        (["--replicas", "0"], "Replicas"),
        (["--max-num-seqs", "0"], "running sequences"),
        (["--balancer", "random"], "balancer"),
        (["--preemption", "swap"], "host link"),
        (["--prefix-hit", "1.5"], "prefix-cache"),
        (["--trace", "/no/such/trace.csv"], "Cannot read"),
        (["--on", "no-such-instance"], "Unknown instance"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], words: str) -> None:
    base = BASE if "--on" not in args else [a for a in BASE if a not in ("--on", "g6e.xlarge")]
    result = runner.invoke(app, [*base, *args])  # a flag given twice is an error of its own
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], result.stderr


@pytest.mark.slow
def test_compare_sizes_to_tail_targets() -> None:
    args = ["compare", "llama-3.1-8b", "--rate", "6", "--ttft-p90-ms", "500", "--tbt-p99-ms", "60"]
    args += ["--instance", "g6e.xlarge", "--instance", "g6e.48xlarge", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    options = out["slo_sizing"]["options"]
    assert {o["mode"] for o in options} == {"aggregated", "disaggregated"}
    for o in options:
        if o["meets"]:
            assert o["ttft_p90_ms"] <= 500 and o["tbt_p99_ms"] <= 60
            assert o["instances"] >= 1
    assert any(o["meets"] for o in options)


def test_compare_slo_needs_a_rate() -> None:
    result = runner.invoke(app, ["compare", "llama-3.1-8b", "--ttft-p90-ms", "500", "--tbt-p99-ms", "60"])
    assert result.exit_code == 2
    assert "--rate" in result.stderr


def _estimate_slo(rate: str) -> dict[str, dict[str, Any]]:
    args = ["estimate", "llama-3.1-8b", "--on", "g6e.xlarge", "--input-len", "1024", "--output-len", "256"]
    args += ["--rate", rate, "--ttft-p90-ms", "800", "--tbt-p99-ms", "80", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["estimate"]["instance"] == "g6e.xlarge"
    return {o["mode"]: o for o in out["slo_sizing"]["options"]}


@pytest.mark.slow
def test_estimate_sizes_its_deployment_to_tail_targets() -> None:
    low, high = _estimate_slo("2"), _estimate_slo("12")
    for options in (low, high):
        agg = options["aggregated"]
        assert agg["meets"] and agg["ttft_p90_ms"] <= 800 and agg["tbt_p99_ms"] <= 80
    n_low, n_high = low["aggregated"]["instances"], high["aggregated"]["instances"]
    assert isinstance(n_low, int) and isinstance(n_high, int)
    assert n_high > n_low >= 1


def test_estimate_slo_needs_a_rate() -> None:
    args = ["estimate", "llama-3.1-8b", "--on", "g6e.xlarge", "--ttft-p90-ms", "500", "--tbt-p99-ms", "60"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--rate" in lines[0]
