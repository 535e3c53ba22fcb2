"""`fleet simulate --latency-model request`: SLO attainment from the request-level simulator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.cli.app import app
from silica.errors import InputError
from silica.fleet import load_fleet_file, simulate_file
from silica.fleet.engine_sim import request_level
from silica.fleet.policies import Policy, allocate
from silica.fleet.scenario import build_fleet


def test_request_level_says_so_and_keeps_the_fluid_figure(small_fleet: Callable[..., Path]) -> None:
    path = small_fleet(hours=4, peak=2.0e4, count=40)
    fluid = simulate_file(path, ["static"])
    sim = simulate_file(path, ["static"], latency_model="request")
    assert fluid.latency_model == "fluid" and sim.latency_model == "request"
    assert any("from the request-level simulator" in a for a in sim.assumptions)
    run = sim.runs[0]
    m = run.metrics
    assert m["fluid_slo_attainment"] == fluid.runs[0].metrics["slo_attainment"] == 1.0
    assert 0.0 <= m["slo_attainment"] <= 1.0 and 0.0 <= m["worst_hour_attainment"] <= m["slo_attainment"]
    detail = run.request_level
    assert detail is not None and detail["simulated_requests"] > 1000
    pool = detail["pools"][0]
    assert pool["instance"] == "trn1.32xlarge" and pool["engines_per_replica"] >= 1
    assert pool["ttft_ms"]["p50"] <= pool["ttft_ms"]["p99"]
    assert len(run.series["attainment"]) == len(fluid.runs[0].series["attainment"])


def test_hotter_engines_mean_fewer_requests_within_the_slo(small_fleet: Callable[..., Path]) -> None:
    # Every replica of the same pool serving (static, whole pool), under a light and a heavy curve:
    # the heavy one runs each engine hotter, and its tails (time per output token under chunked
    # prefill) are longer, so fewer requests meet the SLO. The fluid model sees both as meeting it
    # whenever capacity covers demand.
    def attainment(count: int, peak: float) -> tuple[float, float]:
        ff = load_fleet_file(small_fleet(hours=3, peak=peak, count=count))
        fleet = build_fleet(ff)
        alloc = allocate(
            Policy("static", inference_share=1.0), list(fleet.pools), fleet.demand.output_tokens_per_s, 300.0
        )
        assert fleet.model is not None and fleet.workload is not None
        rl = request_level(
            fleet.pools, alloc, fleet.demand.requests_per_s, 300.0, fleet.model, fleet.workload, seed=1
        )
        return rl.slo_attainment, float(rl.pools[0]["tpot_ms"]["p90"])

    light, light_tpot = attainment(count=40, peak=1.0e4)
    heavy, heavy_tpot = attainment(count=40, peak=1.2e5)
    assert heavy_tpot > light_tpot
    assert heavy < light
    assert light > 0.9


def test_request_level_cost_is_bounded(small_fleet: Callable[..., Path]) -> None:
    ff = load_fleet_file(small_fleet(hours=2, peak=2.0e4, count=40))
    fleet = build_fleet(ff)
    alloc = allocate(Policy("static"), list(fleet.pools), fleet.demand.output_tokens_per_s, 300.0)
    assert fleet.model is not None and fleet.workload is not None
    with pytest.raises(InputError, match="shorter horizon"):
        request_level(
            fleet.pools,
            alloc,
            fleet.demand.requests_per_s,
            300.0,
            fleet.model,
            fleet.workload,
            max_requests=10,
        )


def test_cli_latency_model(small_fleet: Callable[..., Path]) -> None:
    path = small_fleet(hours=2, peak=2.0e4, count=40)
    runner = CliRunner()
    out = runner.invoke(
        app, ["fleet", "simulate", str(path), "--policy", "static", "--latency-model", "request", "--json"]
    )
    assert out.exit_code == 0, out.output
    body = json.loads(out.stdout)
    assert body["latency_model"] == "request"
    assert "request_level" in body["runs"][0]
    bad = runner.invoke(app, ["fleet", "simulate", str(path), "--latency-model", "queue"])
    assert bad.exit_code == 2
    assert "error: Unknown latency model 'queue'" in bad.output
