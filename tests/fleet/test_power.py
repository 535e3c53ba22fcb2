"""Fleets inside a power envelope: `fleet simulate/plan --site-mw` (silica.fleet.power)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.catalog import load_catalog
from silica.cli.app import app
from silica.fleet.power import peak_of, pool_power, site_cap
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


RAINIER = Path(__file__).resolve().parents[2] / "examples" / "rainier.yaml"


@pytest.mark.slow
def test_rainier_plan_inside_100_mw_is_refused_in_one_line() -> None:
    # 37.6M output tok/s at the daytime peak plus the training backlog needs about 200 MW on any
    # candidate: at 100 MW no pool may be sized past what the site holds, so nothing meets the goal.
    result = runner.invoke(app, ["fleet", "plan", str(RAINIER), "--site-mw", "100"])
    assert result.exit_code == 2, result.output
    out = result.output.strip()
    assert len(out.splitlines()) == 1 and "inside the 100 MW site" in out and "raise --site-mw" in out


@pytest.mark.slow
def test_rainier_plan_inside_400_mw_fits_and_reports_mw_by_hour() -> None:
    result = runner.invoke(app, ["fleet", "plan", str(RAINIER), "--site-mw", "400", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    power = body["power"]
    assert power["fits"] is True and power["peak_mw"] <= 400 and len(power["mw_by_hour"]) == 168
    hours = power["mw_by_hour"]
    assert all(h["serving_mw"] + h["training_mw"] <= h["mw"] + 1e-9 for h in hours)
    # day inference, night training: serving draws more in the day's busiest hour than in its quietest
    day = hours[:24]
    assert max(h["serving_mw"] for h in day) > 1.2 * min(h["serving_mw"] for h in day)
    lost = [c for c in body["runners_up"] if "over the 400 MW site" in (c["why_lost"] or "")]
    assert all(not c["meets"] for c in lost)
    # no runner-up was sized past what the site holds: a pool's peak never exceeds it
    for c in body["runners_up"]:
        if c["pools"] and "no published chip power" not in (c["why_lost"] or ""):
            pools = [(p["instance"], p["count"]) for p in c["pools"]]
            if "over the" not in (c["why_lost"] or ""):
                assert peak_of(load_catalog(), pools, power["pue"])[0] <= 400 + 1e-6


def test_plan_chooses_within_the_budget_or_refuses(small_fleet: Callable[..., Path]) -> None:
    """A budget below the unbudgeted best's peak makes the planner choose another mix that fits; a
    budget nothing fits is refused in one line. It never returns a mix over the site."""
    path = small_fleet()
    path.write_text(
        path.read_text().replace("trn1.32xlarge", "trn2.48xlarge").replace("training:\n", TRAINING_MODEL)
    )
    args = ["fleet", "plan", str(path), "--instances", "trn2.48xlarge,p5.48xlarge,p4d.24xlarge"]
    args += ["--price", "trn2.48xlarge=30", "--json"]
    free = runner.invoke(app, [*args, "--pue", "1.135"])
    assert free.exit_code == 0, free.output
    first = json.loads(free.output)
    peak = first["power"]["peak_mw"]
    tight = runner.invoke(app, [*args, "--site-mw", str(peak * 0.9)])
    # the unbudgeted best (a reserved base with on-demand burst) peaks over 90% of its own peak;
    # all-reserved of the same type fits and costs more
    assert tight.exit_code == 0, tight.output
    body = json.loads(tight.output)
    assert body["power"]["fits"] is True and body["power"]["peak_mw"] <= peak * 0.9
    assert body["best"]["label"] != first["best"]["label"]
    assert body["best"]["metrics"]["total_usd"] >= first["best"]["metrics"]["total_usd"]
    lost = next(c for c in body["runners_up"] if c["label"] == first["best"]["label"])
    assert not lost["meets"] and "MW site" in lost["why_lost"]
    refused = runner.invoke(app, [*args, "--site-mw", str(peak / 100)])
    assert refused.exit_code == 2 and "inside the" in refused.output
    assert len(refused.output.strip().splitlines()) == 1


TRAINING_MODEL = "training:\n  model: llama-3.1-8b\n  seq_len: 4096\n  reference_instance: trn2.48xlarge\n"


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
    assert over.exit_code == 2 and "inside the" in over.output and len(over.output.strip().splitlines()) == 1
    assert "the most the" in over.output  # the pool was sized only up to what the site holds
    table = runner.invoke(app, [*args, "--site-mw", "5", "--output", "table"])
    assert table.exit_code == 0 and "serving MW" in table.output and "training MW" in table.output


def test_plan_without_a_training_model_over_several_chips_says_how(small_fleet: Callable[..., Path]) -> None:
    path = _trn2(small_fleet)
    result = runner.invoke(app, ["fleet", "plan", str(path), "--instances", "trn2.48xlarge,p5.48xlarge"])
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1
    assert "hours are on trainium2 (trn2.48xlarge)" in out and "--instance trn2.48xlarge" in out
