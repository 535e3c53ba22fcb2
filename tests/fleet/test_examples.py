"""The shipped examples run, and the Rainier-like report shows day/night against the static split."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from silica.cli.app import app
from silica.fleet import load_fleet_file, simulate_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_rainier_like_example_lends_its_night_to_training() -> None:
    sim = simulate_file(EXAMPLES / "rainier.yaml")
    assert sim.fleet["chips"] == 500_000
    static, dn = sim.run("static").metrics, sim.run("day_night").metrics
    assert dn["lent_chip_hours"] > 1e6 and static["lent_chip_hours"] == 0
    assert dn["training_chip_hours"] > 1.2 * static["training_chip_hours"]
    assert dn["jobs_deadline_missed"] < static["jobs_deadline_missed"]
    assert dn["slo_attainment"] > 0.99 and static["slo_attainment"] == 1.0
    assert static["total_usd"] is None  # trn2.48xlarge has no public price: unknown, never invented
    assert sim.fleet["pools"][0]["price_basis"].startswith("no public")


def test_rainier_report_is_shipped_and_shows_both_policies() -> None:
    html = (EXAMPLES / "rainier_report.html").read_text()
    assert "rainier-like" in html and "day_night vs static" in html
    assert html.count("<svg") >= 6 and "<script" not in html


def test_mixed_example_simulates_all_three_policies_with_costs() -> None:
    result = CliRunner().invoke(app, ["fleet", "simulate", str(EXAMPLES / "fleet.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    runs = {r["policy"]["name"]: r["metrics"] for r in json.loads(result.stdout)["runs"]}
    assert set(runs) == {"static", "day_night", "autoscale"}
    assert all(m["total_usd"] and m["usd_per_1m_output_tokens"] for m in runs.values())
    # Autoscale bills the on-demand p4d pool only while it runs, so it costs less than keeping it on.
    assert runs["autoscale"]["total_usd"] < runs["static"]["total_usd"]
    assert runs["day_night"]["lent_chip_hours"] > runs["static"]["lent_chip_hours"]


def test_example_files_validate() -> None:
    for name in ("fleet.yaml", "rainier.yaml"):
        spec = load_fleet_file(EXAMPLES / name).spec
        assert spec.pools and spec.inference.model
