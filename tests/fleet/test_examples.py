"""The shipped examples run, and every figure the docs and examples quote from them is recomputed here.

The figures checked (each recomputed with the code in the tree, by the same functions that
`scripts/regenerate_docs.py` writes them with, and compared with what is committed):
- docs/fleet.md `fleet-plan`: the planner's best mix for examples/fleet.yaml (194 instances at $437,786
  when written) and every runner-up with its cost and why it lost; `melange`: its saving over the
  cheapest single type and over A100 alone.
- docs/fleet.md `rainier` and `rainier-story`: the Rainier-like table (attainment, utilisation,
  training and lent chip-hours, jobs, deadlines missed, JCT, preemptions) and the big jobs' story.
- examples/rainier_report.html: the whole report, but for its run-date line.
- docs/fleet.md `traces-week`, first row (ServeGen m-large, light training), when ../shared/traces is
  beside the checkout.
A model change that moves any of them fails here until `python scripts/regenerate_docs.py` is run.
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from silica.cli.app import app
from silica.fleet import load_fleet_file, simulate_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
REGEN = "python scripts/regenerate_docs.py"


@cache
def regen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regenerate_docs", ROOT / "scripts" / "regenerate_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed(name: str) -> str:
    found = regen().parts((ROOT / "docs" / "fleet.md").read_text())
    assert name in found, f"docs/fleet.md lost its generated:{name} marker"
    return str(found[name])


def test_planner_table_in_docs_is_what_the_planner_finds_now() -> None:
    assert committed("fleet-plan") == regen().plan_table(), f"planner table drifted: run {REGEN}"
    assert committed("melange") == regen().melange(), f"Mélange comparison drifted: run {REGEN}"
    best = regen().fleet_plan().best
    assert best.metrics["slo_attainment"] >= 0.99 and best.metrics["jobs_deadline_missed"] == 0


def test_rainier_figures_in_docs_are_what_the_simulator_finds_now() -> None:
    assert committed("rainier") == regen().rainier_table(), f"Rainier-like table drifted: run {REGEN}"
    assert committed("rainier-story") == regen().rainier_story(), f"Rainier-like jobs drifted: run {REGEN}"


def _without_run_line(html: str) -> str:
    return re.sub(r'<p class="meta">.*?</p>', "", html, count=1, flags=re.S)


def test_rainier_report_html_is_what_the_simulator_finds_now() -> None:
    shipped = (EXAMPLES / "rainier_report.html").read_text()
    assert _without_run_line(shipped) == _without_run_line(regen().rainier_html()), (
        f"examples/rainier_report.html drifted: run {REGEN}"
    )
    assert "<script" not in shipped and shipped.count("<figcaption>") >= 6


def test_first_bundled_trace_row_in_docs_is_what_the_simulator_finds_now() -> None:
    if not regen().TRACES.is_dir():
        pytest.skip(f"{regen().TRACES} is not beside the checkout")
    [(label, load, sim)] = regen().traces_week_runs(only=("servegen-m-large/light",))
    row = regen().week_row(label, load, sim, with_peak=True)
    table = committed("traces-week").splitlines()
    assert table[2] == row, f"bundled-trace table drifted: run {REGEN}"


def test_rainier_like_example_lends_its_night_to_training() -> None:
    sim = simulate_file(EXAMPLES / "rainier.yaml")
    assert sim.fleet["chips"] == 500_000
    static, dn = sim.run("static").metrics, sim.run("day_night").metrics
    assert dn["lent_chip_hours"] > 1e6 and static["lent_chip_hours"] == 0
    # day/night trains more than the static split (1.20x here on 2026-12-02; 1.73x before the model
    # served Trainium2 slower, with the peak resized to keep its share of the fleet)
    assert dn["training_chip_hours"] > 1.15 * static["training_chip_hours"]
    assert dn["jobs_deadline_missed"] < static["jobs_deadline_missed"]
    assert dn["slo_attainment"] > 0.99 and static["slo_attainment"] == 1.0
    assert static["total_usd"] is None  # trn2.48xlarge has no public price: unknown, never invented
    assert sim.fleet["pools"][0]["price_basis"].startswith("no public")


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
