"""Power and energy figures (`perf.power`, `plan.energy`): physics invariants, unknowns, ranking, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.cli.app import app
from silica.perf.power import PowerParams, activity, chip_watts, load_power
from silica.plan import compare, estimate
from silica.results import InferenceEstimate
from silica.workload import Deployment, InferenceWorkload

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent


def _serve(
    instance: str, batch: int | None = None, model: str = "llama-3.1-8b", **kw: float
) -> InferenceEstimate:
    wl = InferenceWorkload(input_len=512, output_len=256, batch=batch)
    r = estimate(model, wl, Deployment(instance=instance, tp=1 if batch else None), **kw)  # type: ignore[arg-type]
    assert isinstance(r, InferenceEstimate) and r.feasible
    return r


def test_chip_power_stays_between_idle_and_tdp() -> None:
    p = load_power().params["default"]
    for busy in (-1.0, 0.0, 0.3, 1.0, 2.0):
        w = chip_watts(700.0, p, busy)
        assert 700.0 * p.idle_share - 1e-9 <= w <= 700.0 + 1e-9
    # Compute-bound time drives the chip harder than memory-bound time (fitted, and physical).
    assert activity({"compute": 1.0}, p) > activity({"weights": 1.0}, p)
    assert 0.0 < p.idle_share < p.memory_activity <= 1.0


def test_estimate_power_physics_and_tokens_per_mw() -> None:
    r = _serve("p5.48xlarge")
    u = r.energy
    assert u is not None and u.known
    assert u.chip_power_w is not None and u.tdp_w is not None
    idle = load_power().params["default"].idle_share
    assert idle * u.tdp_w[0] < u.chip_power_w <= u.tdp_w[1]
    # Instance power: eight GPUs plus the host, within the band.
    assert u.instance_power_w_low < u.instance_power_w < u.instance_power_w_high  # type: ignore[operator]
    assert u.instance_power_w > 8 * u.chip_power_w  # type: ignore[operator]
    # Tokens per MW is throughput over power: both ways of computing it agree.
    assert r.output_tokens_per_s is not None and u.j_per_output_token is not None
    assert u.j_per_output_token > 0
    per_mw = r.output_tokens_per_s / (u.instance_power_w * r.count) * 1e6  # type: ignore[operator]
    assert u.output_tokens_per_s_per_mw == pytest.approx(per_mw, rel=1e-9)
    assert u.output_tokens_per_s_per_facility_mw == pytest.approx(per_mw / u.pue, rel=1e-9)  # type: ignore[operator]
    assert u.kg_co2e_per_1m_output_tokens is not None and u.kg_co2e_per_1m_output_tokens > 0
    assert any("TDP" in s for s in u.sources)


def test_joules_per_token_fall_with_batch_while_memory_bound() -> None:
    jpt = []
    for b in (1, 4, 16):
        r = _serve("p5.48xlarge", batch=b)
        assert r.time[-1].parts_ms.get("compute", 0.0) == 0.0  # decode is memory-bound here
        assert r.energy is not None and r.energy.j_per_output_token is not None
        jpt.append(r.energy.j_per_output_token)
    assert jpt[0] > jpt[1] > jpt[2] > 0


def test_unknown_chip_power_is_not_a_number() -> None:
    r = _serve("inf2.48xlarge")
    assert r.energy is not None and not r.energy.known
    assert r.energy.j_per_output_token is None and "not published" in r.energy.reason


def test_third_party_tdp_range_widens_the_band() -> None:
    r = _serve("trn2.48xlarge")
    u = r.energy
    assert u is not None and u.known and u.tdp_w == (450.0, 550.0)
    assert any("third-party" in a for a in u.assumptions)
    assert u.j_per_output_token_low < u.j_per_output_token < u.j_per_output_token_high  # type: ignore[operator]


def test_energy_price_and_pue() -> None:
    base = _serve("p5.48xlarge", usd_per_mwh=100.0)
    dearer = _serve("p5.48xlarge", usd_per_mwh=100.0, pue=1.5)
    assert base.energy and dearer.energy
    assert base.energy.energy_usd_per_1m_output_tokens is not None
    assert dearer.energy.energy_usd_per_1m_output_tokens == pytest.approx(
        base.energy.energy_usd_per_1m_output_tokens * 1.5 / base.energy.pue,
        rel=1e-9,  # type: ignore[operator]
    )


def test_compare_ranks_by_energy() -> None:
    wl = InferenceWorkload(input_len=512, output_len=256)
    names = ["p5.48xlarge", "p4d.24xlarge", "inf2.48xlarge", "g6e.xlarge"]
    c = compare("llama-3.1-8b", wl, instances=names, objective="energy")
    known = [r.energy.j_per_output_token for r in c.results if r.energy and r.energy.known]
    assert known == sorted(known) and len(known) == 3  # type: ignore[type-var]
    assert c.results[-1].instance == "inf2.48xlarge"  # unknown power ranks after known figures
    assert c.to_dict()["objective"] == "energy"


def test_cli_rank_energy_json() -> None:
    args = ["compare", "llama-3.1-8b", "--task", "inference", "--rank", "energy", "--json"]
    args += ["--instance", "p5.48xlarge", "--instance", "p4d.24xlarge"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["results"]
    jpt = [r["energy"]["j_per_output_token"] for r in rows]
    assert jpt == sorted(jpt)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_bad_pue_is_one_line(value: str) -> None:
    result = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--pue", value])
    assert result.exit_code == 2
    assert result.output.strip().startswith("error:") and len(result.output.strip().splitlines()) == 1


def test_bad_rank_is_one_line() -> None:
    result = runner.invoke(app, ["compare", "llama-3.1-8b", "--rank", "speed", "--instance", "p5.48xlarge"])
    assert result.exit_code == 2 and "--rank" in result.output


def test_fitted_fractions_are_physical() -> None:
    data = load_power()
    for p in data.params.values():
        assert isinstance(p, PowerParams)
        assert (
            0.0 < p.idle_share < 0.5 and 0.0 <= p.memory_activity <= 1.0 and 0.0 <= p.compute_activity <= 1.0
        )
    low, high = data.error
    assert low < 1.0 < high


def test_energy_doc_is_current() -> None:
    """docs/energy.md and the fitted fractions match a fresh run of scripts/energy_report.py."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/energy_report.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


def test_training_energy_per_token_and_run() -> None:
    from silica.results import TrainingEstimate
    from silica.workload import TrainingWorkload

    wl = TrainingWorkload(seq_len=4096, tokens=1e11)
    r = estimate("llama-3.1-8b", wl, Deployment(instance="p5.48xlarge"), usd_per_mwh=50.0)
    assert isinstance(r, TrainingEstimate) and r.energy is not None and r.energy.known
    u = r.energy
    assert u.j_per_training_token is not None and u.mwh_per_run is not None and u.pue is not None
    # The run's facility energy is J/token x tokens x PUE.
    assert u.mwh_per_run == pytest.approx(u.j_per_training_token * 1e11 * u.pue / 3.6e9, rel=1e-9)
    assert u.energy_usd_per_run == pytest.approx(u.mwh_per_run * 50.0, rel=1e-9)
    assert u.j_per_training_token_low < u.j_per_training_token < u.j_per_training_token_high  # type: ignore[operator]
