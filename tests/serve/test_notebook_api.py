"""`silica.api`, the notebook API: each function returns the library's result, its JSON is the CLI's
`--json` document, and its rows become a DataFrame in one call and an HTML table in Jupyter."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.serve.conftest import EXAMPLES
from typer.testing import CliRunner

from silica import api
from silica.errors import InputError, UnknownNameError
from silica.plan import Comparison


def test_compare_frame_keeps_the_ranking() -> None:
    pd = pytest.importorskip("pandas")
    result = api.compare("llama-3.1-8b", input_len=1024, output_len=256, tpot_slo_ms=50)
    assert isinstance(result.data, Comparison)
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["instance"]) == [r.instance for r in result.data.results]
    assert {"usd_per_1m_output_tokens", "ttft_ms", "feasible", "memory_gib.weights", "price.source"} <= set(
        frame.columns
    )
    best = result.data.best
    assert best is not None and frame.iloc[0]["usd_per_1m_output_tokens"] == pytest.approx(
        best.usd_per_1m_output_tokens
    )


def test_json_is_the_cli_json() -> None:
    from silica.cli.app import app

    cli = CliRunner().invoke(
        app, ["compare", "llama-3.1-8b", "--input-len", "512", "--output-len", "64", "--json"]
    )
    assert cli.exit_code == 0, cli.output
    mine = api.compare("llama-3.1-8b", input_len=512, output_len=64).to_dict()
    assert json.loads(json.dumps(mine)) == json.loads(cli.output)


def test_repr_html_is_a_table() -> None:
    html = api.compare("llama-3.1-70b", input_len=2048, output_len=512)._repr_html_()
    assert html.startswith("<table>") and "<th>instance</th>" in html and "trn1.32xlarge" in html
    assert "<script" not in html
    chips = api.chips("hopper")
    assert len(chips) >= 1 and "h100" in chips._repr_html_()


def test_every_function_tabulates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SILICA_DB_URL", f"sqlite:///{tmp_path / 'nb.db'}")
    advice = api.advise(EXAMPLES / "inventory.yaml")
    assert [r["name"] for r in advice.records()][:2] == ["support-bot", "doc-summaries"]
    claims = api.claims()
    assert len(claims) == len(claims.data.claims) and "verdict" in claims.records()[0]
    est = api.estimate("llama-3.1-8b", "trn1.32xlarge", input_len=512, output_len=128)
    assert len(est) == 1 and est.records()[0]["instance"] == "trn1.32xlarge"
    sim = api.fleet_simulate(EXAMPLES / "fleet.yaml")
    assert {r["policy.name"] for r in sim.records()} == {r.policy.name for r in sim.data.runs}
    assert len(api.models()) > 10 and len(api.instances()) > 10
    assert len(api.history()) == 0


def test_errors_are_library_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UnknownNameError):
        api.compare("not-a-model")
    with pytest.raises(UnknownNameError, match="paths are not read here"):
        api.compare("../secrets/config.json")
    with pytest.raises(InputError, match="not a field of the inference workload"):
        api.compare("llama-3.1-8b", tokens=1e9)
    with pytest.raises(InputError, match="sequence length"):
        api.compare("llama-3.1-8b", task="training")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(InputError, match="needs pandas"):
        api.chips().to_frame()


def test_an_inference_workload_without_shapes_is_an_input_error() -> None:
    """It was a TypeError from the dataclass (a traceback in a notebook, a 500 behind an endpoint)."""
    with pytest.raises(InputError, match="needs input_len and output_len"):
        api.estimate("llama-3.1-8b", "inf2.xlarge")
    with pytest.raises(InputError, match="needs output_len"):
        api.compare("llama-3.1-8b", input_len=128)
