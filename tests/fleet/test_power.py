"""Fleets inside a power envelope: `fleet simulate/plan --site-mw` (silica.fleet.power)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.catalog import load_catalog
from silica.cli.app import app
from silica.fleet.power import pool_power, site_cap
from silica.perf.power import load_power

runner = CliRunner()


def _trn2(small_fleet: Callable[..., Path], count: int = 3) -> Path:
    path = small_fleet(count=count)
    path.write_text(path.read_text().replace("trn1.32xlarge", "trn2.48xlarge"))
    return path


def test_power_per_state_is_ordered_and_peak_is_consistent() -> None:
    p = pool_power(load_catalog(), "trn2.48xlarge")
    assert p.idle_w < p.serving_w < p.training_w
    assert p.peak_instance_w == pytest.approx(16 * p.training_w)
    assert p.peak_instance_w < p.peak_instance_w_high
    pue = load_power().pue
    cap = site_cap(load_catalog(), "trn2.48xlarge", 10.0, pue)
    assert cap * p.peak_instance_w * pue <= 10e6 < (cap + 1) * p.peak_instance_w * pue


def test_simulate_reports_mw_by_hour_within_budget(small_fleet: Callable[..., Path]) -> None:
    path = _trn2(small_fleet)
    result = runner.invoke(app, ["fleet", "simulate", str(path), "--site-mw", "1", "--json"])
    assert result.exit_code == 0, result.output
    power = json.loads(result.output)["power"]
    for run in power.values():
        assert run["fits"] is True and run["peak_mw"] <= 1.0
        hours = run["mw_by_hour"]
        assert len(hours) == 48
        assert all(0 < h["mw"] <= run["peak_mw"] + 1e-9 for h in hours)
        assert run["energy_mwh"] == pytest.approx(run["mean_mw"] * 48, rel=0.02)


def test_simulate_refuses_a_fleet_over_budget(small_fleet: Callable[..., Path]) -> None:
    path = _trn2(small_fleet, count=40)
    result = runner.invoke(app, ["fleet", "simulate", str(path), "--site-mw", "0.1"])
    assert result.exit_code == 2
    out = result.output.strip()
    assert out.startswith("error:") and "over the 0.1 MW site" in out and len(out.splitlines()) == 1


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_bad_site_mw_is_one_line(small_fleet: Callable[..., Path], value: str) -> None:
    result = runner.invoke(app, ["fleet", "plan", str(_trn2(small_fleet)), f"--site-mw={value}"])
    assert result.exit_code == 2
    assert (
        result.output.strip().startswith("error: --site-mw") and len(result.output.strip().splitlines()) == 1
    )


def test_unknown_chip_power_cannot_be_budgeted(small_fleet: Callable[..., Path]) -> None:
    result = runner.invoke(app, ["fleet", "simulate", str(small_fleet()), "--site-mw", "100"])
    assert result.exit_code == 2 and "no published power" in result.output


def test_rainier_over_100_mw_is_refused() -> None:
    rainier = Path(__file__).resolve().parents[2] / "examples" / "rainier.yaml"
    result = runner.invoke(app, ["fleet", "plan", str(rainier), "--site-mw", "100"])
    assert result.exit_code == 2
    assert "500,000 chips" in result.output and "trn2.48xlarge" in result.output


def test_plan_reports_power_of_the_best_mix_or_refuses(small_fleet: Callable[..., Path]) -> None:
    path = _trn2(small_fleet)
    args = ["fleet", "plan", str(path), "--instance", "trn2.48xlarge", "--price", "trn2.48xlarge=30"]
    ok = runner.invoke(app, [*args, "--site-mw", "5", "--json"])
    assert ok.exit_code == 0, ok.output
    body = json.loads(ok.output)
    planned = sum(p["count"] for p in body["best"]["pools"])
    assert body["power"]["fits"] is True and sum(p["count"] for p in body["power"]["pools"]) == planned
    assert body["power"]["peak_mw"] <= 5 and len(body["power"]["mw_by_hour"]) == 48
    over = runner.invoke(app, [*args, "--site-mw", str(body["power"]["peak_mw"] / 2)])
    assert over.exit_code == 2 and "over the" in over.output and len(over.output.strip().splitlines()) == 1
