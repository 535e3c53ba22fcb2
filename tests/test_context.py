"""One plan context for every front door: the user's settings reach every plan, and nothing else does.

The settings (SILICA_PRICES, SILICA_PRICE_OPTION, SILICA_REGION, the config file, the calibration
overlay) are read once at the edge (`silica.context.plan_context`); each front door (CLI, notebook API,
HTTP API, web page, advise, fleet) must show a team's price, and each result must say which settings
made it. A plan computed with a given context must not change when files appear in the user's folders.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica import api
from silica.cli.app import app
from silica.context import plan_context
from silica.perf.overlay import OVERLAY_SCHEMA
from silica.plan import estimate
from silica.workload import Deployment, InferenceWorkload

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
WL = InferenceWorkload(input_len=512, output_len=128)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("SILICA_REGION", "SILICA_PRICE_OPTION", "SILICA_PRICES", "SILICA_CALIBRATION_OVERLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SILICA_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("SILICA_DB_URL", f"sqlite:///{tmp_path / 'store.db'}")


@pytest.fixture
def team_prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A team's negotiated price for p5.48xlarge ($5/h, far below any public one), set by environment."""
    path = tmp_path / "mine.yaml"
    path.write_text("p5.48xlarge: 5\n", encoding="utf-8")
    monkeypatch.setenv("SILICA_PRICES", str(path))
    return path


def _overlay(path: Path) -> Path:
    """A valid overlay that slows Hopper under TensorRT-LLM a lot (memory efficiency at its floor)."""
    body = {
        "schema": OVERLAY_SCHEMA,
        "entries": [
            {"family": "hopper", "engine": "trtllm", "label": "test pilot", "params": {"memory_eff": 0.2}}
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def _tpot(**kw: object) -> float:
    e = estimate("llama-3.1-8b", WL, Deployment("p5.48xlarge"), **kw)  # type: ignore[arg-type]
    assert e.feasible
    return float(e.tpot_ms)  # type: ignore[union-attr]


def test_env_prices_reach_estimate_and_compare_on_the_cli(team_prices: Path) -> None:
    r = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["usd_per_hour"] == pytest.approx(5.0)
    assert doc["settings"]["prices"] == {"value": str(team_prices), "origin": "environment SILICA_PRICES"}
    r = runner.invoke(app, ["compare", "llama-3.1-8b", "--instance", "p5.48xlarge", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["results"][0]["usd_per_hour"] == pytest.approx(5.0)
    assert doc["settings"]["prices"]["origin"] == "environment SILICA_PRICES"


def test_a_flag_wins_over_the_environment(team_prices: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("p5.48xlarge: 7\n", encoding="utf-8")
    r = runner.invoke(
        app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--prices", str(other), "--json"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["usd_per_hour"] == pytest.approx(7.0)
    assert doc["settings"]["prices"]["origin"] == "flag --prices"


def test_the_notebook_api_records_its_arguments_not_cli_flags() -> None:
    """A value passed to `silica.api` is recorded as the caller's argument, not as a CLI flag."""
    from silica import api

    doc = api.estimate(
        "llama-3.1-8b", "p5.48xlarge", input_len=512, output_len=128, region="us-east-1", option="on_demand"
    ).to_dict()
    assert doc["settings"]["region"]["origin"] == "argument region"
    assert doc["settings"]["price_option"]["origin"] == "argument price_option"


def test_config_file_option_and_region_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text('price_option = "on_demand"\nregion = "us-east-1"\n', encoding="utf-8")
    monkeypatch.setenv("SILICA_CONFIG", str(config))
    ctx = plan_context()
    assert (ctx.option, ctx.region) == ("on_demand", "us-east-1")
    assert ctx.settings["region"].origin == f"config {config}"
    e = estimate("llama-3.1-8b", WL, Deployment("p5.48xlarge"), context=ctx)
    assert e.price is not None and (e.price.option, e.price.region) == ("on_demand", "us-east-1")
    assert e.settings["price_option"]["origin"] == f"config {config}"


def test_env_prices_reach_the_notebook_api_advise_and_fleet(team_prices: Path, tmp_path: Path) -> None:
    assert api.estimate("llama-3.1-8b", "p5.48xlarge", input_len=512, output_len=128).to_dict()[
        "usd_per_hour"
    ] == pytest.approx(5.0)
    ranked = api.compare("llama-3.1-8b", instances=["p5.48xlarge"], input_len=512, output_len=128).to_dict()
    assert ranked["results"][0]["usd_per_hour"] == pytest.approx(5.0)
    rows = {r["instance"]["id"]: r for r in api.instances("p5").to_dict()["instances"]}
    assert any(p["usd_per_hour"] == 5.0 for p in rows["p5.48xlarge"]["prices"])
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(
        "workloads:\n  - name: chat\n    model: llama-3.1-8b\n    task: inference\n"
        "    current: {instance: p5.48xlarge, count: 1}\n"
        "    load: {input_len: 512, output_len: 128, requests_per_s: 1}\n",
        encoding="utf-8",
    )
    from silica.advise import load_inventory

    inv = load_inventory(inventory, plan_context())
    from silica.catalog import price_for

    found = price_for(inv.catalog, "p5.48xlarge", option=inv.option, region=inv.region)
    assert found is not None and found.usd_per_hour == pytest.approx(5.0)


def test_a_plan_does_not_read_the_users_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = plan_context()
    before = _tpot(context=ctx)
    overlay = _overlay(tmp_path / "overlay.json")
    monkeypatch.setenv("SILICA_CALIBRATION_OVERLAY", str(overlay))
    assert _tpot(context=ctx) == before  # same context, same plan, whatever sits on disk
    assert _tpot() == before  # no context: bundled data only
    slowed = plan_context()
    assert slowed.settings["calibration_overlay"].value == str(overlay)
    assert _tpot(context=slowed) > 1.5 * before  # the overlay, named in the context, applies
    explicit = plan_context(calibration=ROOT / "src/silica/data/calibration.json")
    assert "calibration_overlay" not in explicit.settings
    assert _tpot(context=explicit) == pytest.approx(before)  # an explicit calibration is taken as it is


def test_settings_can_be_ignored_for_a_reproducible_context(team_prices: Path) -> None:
    assert plan_context(use_settings=False).settings["prices"].origin == "default"
    assert plan_context().settings["prices"].origin == "environment SILICA_PRICES"


def test_bad_setting_from_any_layer_is_one_error_naming_its_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SILICA_PRICE_OPTION", "cheap")
    r = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge"])
    assert r.exit_code == 2
    assert "environment SILICA_PRICE_OPTION" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--option", "cheaper"])
    assert r.exit_code == 2 and "flag --option" in r.output


@pytest.mark.e2e
def test_env_prices_reach_the_http_api_and_the_web_page(team_prices: Path) -> None:
    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    from tests.serve.conftest import running

    from silica.serve import ServeSettings

    with running(ServeSettings(store_url=None)) as base, httpx.Client(base_url=base, timeout=120) as c:
        body = {"model": "llama-3.1-8b", "on": "p5.48xlarge", "input_len": 512, "output_len": 128}
        r = c.post("/api/v1/estimate", json=body)
        assert r.status_code == 200, r.text
        assert r.json()["usd_per_hour"] == pytest.approx(5.0)
        assert r.json()["settings"]["prices"]["origin"] == "environment SILICA_PRICES"
        r = c.post("/api/v1/estimate", json={**body, "engine": "vllm", "option": "on_demand"})
        assert r.status_code == 200, r.text
        assert "vllm" in r.json()["engine"].lower()
        for bad in ({"option": "reserved_3yr"}, {"engine": "tensorflow"}):
            r = c.post("/api/v1/estimate", json={**body, **bad})
            assert r.status_code in (400, 422), r.text
        page = c.get(
            "/compare",
            params={"model": "llama-3.1-8b", "input_len": 512, "output_len": 128, "engine": "vllm"},
        )
        assert page.status_code == 200
        assert "reserved_3yr" not in page.text and 'name="engine"' in page.text
