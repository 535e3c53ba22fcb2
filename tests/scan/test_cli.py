"""`silica scan` from the command line: JSON shape, rich output, one-line errors, a light --help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.cli.app import app

runner = CliRunner()


def test_help_says_when_user_code_runs() -> None:
    result = runner.invoke(app, ["scan", "--help"])
    assert result.exit_code == 0
    assert "ONLY" in result.output and "never imports or executes" in result.output


def test_silica_help_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom silica.cli.app import app\n"
        "assert 'torch' not in sys.modules\nassert 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_code_scan_json_and_rich(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("flash-attn\n")
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    result = runner.invoke(app, ["scan", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data["target_verdicts"].values()) == {"needs-work"}
    assert {f["location"] for f in data["findings"]} == {"requirements.txt:1", "k.cu:1"}
    assert data["status"] == "ok"
    result = runner.invoke(app, ["scan", str(tmp_path)])
    assert result.exit_code == 0 and "needs-work" in result.output and "requirements.txt:1" in result.output


def test_unknown_model_is_one_line_exit_2() -> None:
    result = runner.invoke(app, ["scan", "no-such-model"])
    assert result.exit_code == 2
    assert result.output.count("\n") <= 1 and "Unknown model" in result.output


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("torch", "transformers") else real(name, *a),
    )
    result = runner.invoke(app, ["scan", "llama-3.1-8b"])
    assert result.exit_code == 2
    assert "silica[scan]" in result.output


def test_model_scan_json() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    result = runner.invoke(app, ["scan", "llama-3.1-8b", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["target_verdicts"]["trainium2"] == "ready"
    assert all(o["status"] == "supported" for o in data["ops"])
    result = runner.invoke(app, ["scan", "gpt2"])
    assert result.exit_code == 0 and "Verdict per target" in result.output
    # issue 13: a compact operator summary by default; the full list only with --ops
    assert "Operators: " in result.output and "distinct" in result.output


def test_failed_model_scan_is_a_result_marked_failed() -> None:
    pytest.importorskip("torch")
    subject = f"{Path(__file__).parent / 'fixtures' / 'factories.py'}:raises"
    result = runner.invoke(app, ["scan", subject, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "failed"
    assert [f["rule"] for f in data["findings"]] == ["factory-error"]
    result = runner.invoke(app, ["scan", subject])
    assert result.exit_code == 0
    assert "scan failed" in result.output and "not an estimate" in result.output


def test_missing_path_is_one_line_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["scan", str(tmp_path / "nope.py") + ":f"])
    assert result.exit_code == 2
    assert result.output.count("\n") <= 1


def _ops_report(n: int) -> object:
    from silica.scan import OpUse, ScanReport
    from silica.scan.knowledge import knowledge
    from silica.scan.verdict import verdicts

    ops = tuple(
        OpUse(f"aten::op{i}", 3, "supported", "lowered by torch-xla; " + "word " * 40, "pytorch/xla")
        for i in range(n)
    )
    per_target, effort = verdicts(knowledge(), kind="model", model_type="llama", is_llm=True, ops=ops)
    return ScanReport("m", "model", per_target, ops=ops, effort_weeks=effort, method="torch.export")


def test_model_output_is_a_summary_unless_ops_is_asked(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 13: 38 supported operators were 109 lines with notes cut mid-word."""
    from silica.cli.scan_cmd import _render

    report = _ops_report(38)
    _render(report, all_findings=False)  # type: ignore[arg-type]
    short = capsys.readouterr().out
    assert "Operators: 38 distinct (38 supported)" in short and "aten::op7" not in short
    _render(report, all_findings=False, all_ops=True)  # type: ignore[arg-type]
    full = capsys.readouterr().out
    assert "aten::op37" in full and len(full.splitlines()) > len(short.splitlines()) + 38
    assert "wor…" not in full  # cut at a word boundary, never mid-word


def test_code_scan_task_training_and_bad_options(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "backend = 'nccl'\ntorch.distributed.init_process_group(backend=backend)\nm = DDP(torch.nn.Linear(2, 2))\n"
    )
    data = json.loads(runner.invoke(app, ["scan", str(tmp_path), "--task", "training", "--json"]).output)
    assert data["task"] == "training" and data["target_verdicts"]["inferentia2"] == "blocked"
    assert {f["rule"] for f in data["findings"]} == {"ddp", "nccl"}
    items = {w["item"] for w in data["targets"]["trainium2"]["work_items"]}
    assert items == {"change-launcher", "validate-numerics"}
    inference = json.loads(runner.invoke(app, ["scan", str(tmp_path), "--json"]).output)
    assert inference["task"] == "inference"
    assert {f["rule"] for f in inference["findings"] if set(f["impact"].values()) != {"info"}} == {"nccl"}
    for args in (["--task", "train"], ["--output", "xml"]):
        result = runner.invoke(app, ["scan", str(tmp_path), *args])
        assert result.exit_code == 2 and result.output.count("\n") <= 1 and "To fix" in result.output


def test_bad_subjects_are_one_line_with_a_hint(tmp_path: Path) -> None:
    """Issue 15: wrong.py hints FILE.py:NAME; an empty folder and a config without layers are errors."""
    (tmp_path / "wrong.py").write_text("x = 1\n")
    (tmp_path / "c.json").write_text('{"model_type": "llama", "num_hidden_layers": 0}')
    (tmp_path / "empty").mkdir()
    cases = {
        str(tmp_path / "wrong.py"): "wrong.py:NAME",
        str(tmp_path / "c.json"): "num_hidden_layers: 0",
        str(tmp_path / "empty"): "holds no files to scan",
    }
    for subject, text in cases.items():
        result = runner.invoke(app, ["scan", subject])
        assert result.exit_code == 2, result.output
        assert result.output.count("\n") <= 1 and text in result.output and "To fix" in result.output


def test_model_option_needs_a_directory_and_a_known_model(tmp_path: Path) -> None:
    """Issue 30: `--model` joins a repository and the model it loads; bad input is one line and exit 2."""
    result = runner.invoke(app, ["scan", "llama-3.1-8b", "--model", "llama-3.1-8b"])
    assert result.exit_code == 2 and result.output.count("\n") <= 1 and "not a directory" in result.output
    (tmp_path / "load.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    result = runner.invoke(app, ["scan", str(tmp_path), "--model", "no-such-model"])
    assert result.exit_code == 2 and "Unknown model" in result.output
