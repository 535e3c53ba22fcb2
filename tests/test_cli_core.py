"""The core commands through the public entry point: output shape, and one-line errors with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import silica
from silica.cli.app import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_compare_json_has_the_promised_fields() -> None:
    r = run(
        "compare",
        "llama-3.1-8b",
        "--task",
        "inference",
        "--input-len",
        "1024",
        "--output-len",
        "256",
        "--json",
    )
    assert r.exit_code == 0, r.output
    results = json.loads(r.stdout)["results"]
    needed = {
        "instance",
        "count",
        "chip",
        "vendor",
        "feasible",
        "reasons",
        "tp",
        "batch",
        "ttft_ms",
        "tpot_ms",
        "output_tokens_per_s",
        "usd_per_hour",
        "breakeven_usd_per_hour",
        "usd_per_1m_output_tokens",
    }
    for row in results:
        assert needed <= set(row)
        assert row["vendor"] in ("aws", "nvidia")
    assert {"aws", "nvidia"} <= {
        row["vendor"] for row in results if row["feasible"] and row["usd_per_1m_output_tokens"]
    }


def test_estimate_infeasible_json_gives_the_memory_reason() -> None:
    r = run("estimate", "llama-3.1-70b", "--on", "inf2.xlarge", "--task", "inference", "--json")
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["feasible"] is False and "memory" in out["reasons"][0]


def test_estimate_with_count_and_training() -> None:
    r = run(
        "estimate",
        "llama-3.1-8b",
        "--on",
        "p5.48xlargex2",
        "--task",
        "training",
        "--seq-len",
        "4096",
        "--tokens",
        "1e11",
        "--json",
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["count"] == 2 and out["feasible"] and out["train_days"] > 0 and out["usd_per_run"] > 0


def test_training_compare_table_renders() -> None:
    r = run(
        "compare",
        "llama-3.1-8b",
        "--task",
        "training",
        "--seq-len",
        "4096",
        "--tokens",
        "1e11",
        "-o",
        "table",
    )
    assert r.exit_code == 0, r.output
    assert "ranked by USD per training run" in " ".join(r.stdout.split())


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["compare", "llama-3.1-8"], "Did you mean 'llama-3.1-8b'"),
        (["estimate", "llama-3.1-8b", "--on", "p5.48xlarg"], "Did you mean 'p5.48xlarge'"),
        (["compare", "llama-3.1-8b", "--input-len", "0"], "must be a finite positive number"),
        (["compare", "llama-3.1-8b", "--rate", "inf"], "finite"),
        (["compare", "llama-3.1-8b", "--output-len", "-5"], "0 or more"),
        (["compare", "llama-3.1-8b", "--ttft-slo-ms", "0.001"], "SLO"),
        (["compare", "qwen2.5-7b", "--instance", "p5.48xlarge", "--dtype", "bf16"], None),
        (["estimate", "qwen2.5-7b", "--on", "p5.48xlarge", "--tp", "8"], "heads"),
        (["compare", "llama-3.1-8b", "--dtype", "fp7"], "Unknown"),
        (["compare", "llama-3.1-8b", "--price", "p5.48xlarge=-3"], "price"),
        (["compare", "llama-3.1-8b", "--task", "training"], "--seq-len"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str | None) -> None:
    r = run(*args)
    if needle is None:
        assert r.exit_code == 0, r.output
        return
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert err.count("\n") == 0 and err.startswith("error:"), err
    assert needle in err
    assert "Traceback" not in r.output


def test_malformed_config_json_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    r = run("compare", str(bad))
    assert r.exit_code == 2 and "Traceback" not in r.output
    good = tmp_path / "tiny" / "config.json"
    good.parent.mkdir()
    good.write_text(Path(silica.__file__).parent.joinpath("data/models/llama-3.2-1b.json").read_text())
    assert run("estimate", str(good), "--on", "g6.xlarge", "--json").exit_code == 0


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys; from silica.cli.app import app; "
        "heavy = [m for m in ('numpy', 'torch', 'transformers', 'sqlalchemy', 'scipy', 'ray') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_public_surface_is_pinned() -> None:
    assert set(silica.__all__) == {
        "Deployment",
        "InferenceWorkload",
        "InputError",
        "SilicaError",
        "TrainingWorkload",
        "__version__",
        "compare",
        "estimate",
        "list_models",
        "load_catalog",
        "load_model",
    }
    for name in silica.__all__:
        assert getattr(silica, name) is not None


def test_calibrate_writes_a_loadable_file_and_refuses_an_unwritable_path(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "chip,chips,task,model,weight_dtype,compute_dtype,batch,input_len,output_len,tp,metric,value,source\n"
        "h100,1,inference,llama-3.1-8b,bf16,bf16,1,128,128,1,tpot_ms,7.0,a\n"
    )
    out = tmp_path / "cal.json"
    r = run("calibrate", str(rows), "--out", str(out))
    assert r.exit_code == 0, r.output
    from silica.perf.calibration import load_calibration

    cal = load_calibration(out)
    assert cal.generated_by.startswith("silica calibrate")
    assert cal.params == {}  # one row is too few to fit a family: nothing is invented
    bad = run("calibrate", str(rows), "--out", str(tmp_path / "missing" / "cal.json"))
    assert bad.exit_code == 2 and "Cannot write" in bad.stderr


def test_fp32_weights_served_in_bf16_say_they_are_cast_not_2_bytes_of_fp32() -> None:
    """Neuron compiles fp32 checkpoints with bf16 auto-cast (the published encoder rows do): accepted,
    and the estimate says the weights are cast at load instead of printing "fp32 (2 B/param)"."""
    r = run("estimate", "llama-3.1-8b", "--on", "p5.48xlarge", "--weight-dtype", "fp32", "--json")
    assert r.exit_code == 0, r.output
    notes = json.loads(r.stdout)["assumptions"]
    assert any("weights fp32, cast to bf16 at load (2 B/param in HBM)" in n for n in notes), notes
    assert not any("fp32 (2 B/param" in n for n in notes)
