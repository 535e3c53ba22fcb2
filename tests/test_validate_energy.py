"""`silica validate` on measured energy and power rows (issue 28): predicted with the power model the
planner uses, reported beside the performance metrics and out of the headline error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from silica.cli.app import app
from silica.perf.power import load_power
from silica.validate import validate
from silica.validate.energy import _path, evaluate_cases, prepare_cases, read_energy_rows

HEADER = (
    "id,source,chip,chips,task,model,weight_dtype,compute_dtype,batch,input_len,output_len,tp,metric,value\n"
)


def _csv(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "m.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in rows))
    return path


def test_energy_rows_in_the_validation_schema_are_predicted_beside_performance(tmp_path: Path) -> None:
    # ML.ENERGY v3 row mlev3-0xx style: Llama-3.1-8B on one H100 at an average batch of 32
    conf = "h100,1,inference,llama-3.1-8b,bf16,bf16,32,512,400,1"
    path = _csv(
        tmp_path,
        [
            f"e1,test,{conf},energy_per_output_token_j,0.30",
            f"e2,test,{conf},avg_gpu_power_w,500",
            f"p1,test,{conf},output_tok_s,1500",
            f"x1,test,{conf.replace('h100', 'inferentia2')},avg_gpu_power_w,100",  # no power figure
        ],
    )
    report = validate(path)
    by_id = {p.row.id: p for p in report.predictions}
    tdp = load_power().chips["h100"].tdp_w
    assert 0.1 * tdp < (by_id["e2"].predicted or 0) <= tdp  # one chip's board power, below its TDP
    assert by_id["e2"].low is not None and by_id["e2"].low < by_id["e2"].predicted < (by_id["e2"].high or 0)
    # J per token is the predicted power over the predicted throughput (the same estimate)
    assert by_id["e1"].predicted == pytest.approx((by_id["e2"].predicted or 0) / (by_id["p1"].predicted or 1))
    assert "no published power figure" in (by_id["x1"].skipped or "")
    assert set(report.by_metric) == {"energy_per_output_token_j", "avg_gpu_power_w", "output_tok_s"}
    assert report.median_ape == pytest.approx(by_id["p1"].ape)  # the headline is performance only
    assert report.energy["rows"] == 3 and report.energy["n"] == 2
    cli = CliRunner().invoke(app, ["validate", str(path)])
    assert cli.exit_code == 0 and "energy and power: 2 of 3 rows predicted" in cli.output
    body = json.loads(CliRunner().invoke(app, ["validate", str(path), "--json"]).output)
    assert body["energy"]["n"] == 2 and "avg_gpu_power_w" in body["by_metric"]


@pytest.mark.slow
def test_the_ml_energy_file_validates_as_the_power_fit_scores_it() -> None:
    """The ML.ENERGY layout is read as the fit reads it; validate's errors are the fit's in-sample ones."""
    report = validate(_path())
    cases, _ = prepare_cases(read_energy_rows()[0])
    scored = evaluate_cases(cases, {"default": load_power().params_for("")[0]})
    power = float(np.median([s.errors()["power"] for s in scored]))
    jpt = float(np.median([s.errors()["j_per_token"] for s in scored]))
    assert report.by_metric["avg_gpu_power_w"]["n"] == len(cases)
    assert report.by_metric["avg_gpu_power_w"]["median_ape"] == pytest.approx(power, rel=1e-6)
    assert report.by_metric["energy_per_output_token_j"]["median_ape"] == pytest.approx(jpt, rel=1e-6)
    assert report.energy["median_ape"] is not None and report.energy["median_ape"] < 0.3


def test_a_broken_ml_energy_layout_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("id,scenario,batch_or_concurrency,metric,value\nx,s,max_num_seqs=8,avg_gpu_power_w,1\n")
    result = CliRunner().invoke(app, ["validate", str(path)])
    out = result.output.strip()
    assert result.exit_code == 2 and out.startswith("error:") and len(out.splitlines()) == 1
    assert "ML.ENERGY's layout" in out
