"""Issue 30 item 6: a repository and the model it loads get one verdict and one effort (no torch needed: the
model side is built from hand-made verdict inputs, the code side is a real scan of a two-file loader)."""

from __future__ import annotations

from pathlib import Path

import pytest

from silica.errors import InputError
from silica.scan import ScanReport, knowledge, scan_code
from silica.scan.report import Finding
from silica.scan.verdict import combine, verdicts

LOADER = (
    "import torch\n"
    "from transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
    "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-3.1-8B', device_map='auto',\n"
    "    quantization_config=BitsAndBytesConfig(load_in_4bit=True))\n"
)


def _model_report(task: str) -> ScanReport:
    """What a model scan says of an architecture whose complex64 rotary blocks Inferentia2 and Trainium1."""
    finding = Finding(
        "dtype:complex64",
        "complex64 tensors",
        "rotary embedding in complex64",
        {
            "inferentia2": "blocker",
            "trainium1": "blocker",
            "trainium2": "needs-work",
            "trainium3": "needs-work",
        },
        effort_weeks=1.0,
    )
    kb = knowledge()
    result, effort = verdicts(kb, kind="model", model_type="llama", findings=[finding], task=task)
    return ScanReport("llama-3.1-8b", "model", result, findings=(finding,), effort_weeks=effort, task=task)


def _code_report(tmp_path: Path, task: str) -> ScanReport:
    (tmp_path / "load.py").write_text(LOADER)
    (tmp_path / "requirements.txt").write_text("torch\ntransformers\nbitsandbytes\n")
    return scan_code(tmp_path, task=task)  # type: ignore[arg-type]


def test_one_verdict_takes_the_model_blockers_and_the_code_work(tmp_path: Path) -> None:
    code, model = _code_report(tmp_path, "inference"), _model_report("inference")
    assert code.verdict("inferentia2") == "needs-work"  # the loader alone is light
    both = combine(knowledge(), code, model)
    assert both.kind == "combined" and both.task == "inference"
    assert both.verdict("inferentia2") == "blocked" and both.verdict("trainium1") == "blocked"
    assert both.verdict("trainium2") == "needs-work"
    trn2 = both.target_verdicts["trainium2"]
    assert any("bitsandbytes" in w for w in trn2.work) and any("complex64" in w for w in trn2.work)
    # the effort adds the model's path and finding weeks to the code's work items (rounded once)
    assert trn2.effort_weeks >= max(
        code.target_verdicts["trainium2"].effort_weeks, model.target_verdicts["trainium2"].effort_weeks
    )
    assert {w.item for w in trn2.work_items} == {w.item for w in code.target_verdicts["trainium2"].work_items}
    assert both.effort_weeks == min(
        v.effort_weeks for v in both.target_verdicts.values() if v.verdict != "blocked"
    )
    assert {f.rule for f in both.findings} >= {"dtype:complex64", "bitsandbytes"}


def test_training_counts_the_loss_parity_run_once(tmp_path: Path) -> None:
    code, model = _code_report(tmp_path, "training"), _model_report("training")
    both = combine(knowledge(), code, model)
    trn2 = both.target_verdicts["trainium2"]
    labels = [k for k, _ in trn2.effort_breakdown]
    assert "training: loss parity" not in labels  # the code's validate-numerics item carries it
    numerics = next(w for w in trn2.work_items if w.item == "validate-numerics")
    assert "task:training" in numerics.rules
    separate = sum(w for _, w in model.target_verdicts["trainium2"].effort_breakdown) + sum(
        w for _, w in code.target_verdicts["trainium2"].effort_breakdown
    )
    parity = knowledge().effort.training.validate_numerics_weeks
    assert sum(w for _, w in trn2.effort_breakdown) == pytest.approx(separate - parity)


def test_combining_needs_a_code_and_a_model_scan_for_one_task(tmp_path: Path) -> None:
    code = _code_report(tmp_path, "inference")
    with pytest.raises(InputError, match="same --task"):
        combine(knowledge(), code, _model_report("training"))
    with pytest.raises(InputError, match="code scan and a model scan"):
        combine(knowledge(), _model_report("inference"), code)
