"""Every neuron data file loads through its schema, carries provenance and matches the shared reference."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from silica.scan.knowledge import knowledge
from silica.scan.report import TARGETS
from silica.scan.verdict import _PATH_ORDER

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "neuron_ops.csv"
COVERED = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gemma2",
    "phi3",
    "gpt2",
    "gptj",
    "bert",
    "roberta",
    "t5",
    "vit",
    "whisper",
    "deepseek_v3",
)


def test_all_files_load_with_provenance() -> None:
    kb = knowledge()
    rows = [r for rs in kb.ops.values() for r in rs]
    assert len(rows) > 450
    for row in [
        *rows,
        *kb.dtypes.values(),
        *(a for rs in kb.archs.values() for a in rs),
        *kb.lifecycle,
        *kb.code_rules,
        *kb.patterns.values(),
    ]:
        assert row.source.strip(), row
        assert len(row.as_of) >= 10 and row.as_of[:2] == "20", row


def test_op_rows_are_unique_per_condition() -> None:
    seen = set()
    for key, rows in knowledge().ops.items():
        for r in rows:
            assert (key, r.condition) not in seen
            seen.add((key, r.condition))


def test_every_covered_architecture_has_a_library_row() -> None:
    archs = knowledge().archs
    for model_type in COVERED:
        assert archs.get(model_type), model_type


def test_effort_rules_price_every_path() -> None:
    assert set(_PATH_ORDER) <= set(knowledge().effort.path_weeks)


def test_dtypes_name_every_target() -> None:
    kb = knowledge()
    assert {"float64", "int64", "complex64", "complex128", "bfloat16", "float8_e4m3fn"} <= set(kb.dtypes)
    for row in kb.dtypes.values():
        assert {row.status(t) for t in TARGETS} <= {"supported", "downcast", "limited", "unsupported"}


def test_code_rules_have_unique_ids_and_alternatives() -> None:
    rules = knowledge().code_rules
    assert len({r.id for r in rules}) == len(rules)
    for rule in rules:
        assert rule.alternative.strip()
        assert rule.effort_weeks <= rule.effort_cap_weeks or rule.effort_cap_weeks == 0


@pytest.mark.skipif(not REFERENCE.exists(), reason="shared reference not present")
def test_ops_table_keeps_the_reference_statuses() -> None:
    """Every aten/custom row of ../shared/reference/neuron_ops.csv is in the package with the same status."""
    kb = knowledge()
    with REFERENCE.open(encoding="utf-8") as f:
        reference = list(csv.DictReader(f))
    for ref in reference:
        op = ref["op"]
        if op.startswith(("dtype:", "pattern:")):
            continue
        base = op.split(" [", 1)[0]
        rows = kb.ops[base]
        wanted = [r for r in rows if bool(r.condition) == (" [" in op)]
        assert any(r.status == ref["status"] and r.note == ref["note"] for r in wanted), op


def test_nxdi_rows_without_a_model_reference_entry_list_no_unsourced_targets() -> None:
    """The sources show NxDI's DeepSeek-V3 and Whisper code on no Inf2/Trn1 instance (issue review)."""
    for model_type in ("deepseek_v3", "whisper"):
        row = next(r for r in knowledge().archs[model_type] if r.library == "NxD Inference")
        assert set(row.pins()) == {"trainium2", "trainium3"}, row.targets
        assert "[inferred]" in row.note


def test_code_rules_name_a_work_item_a_neuron_counterpart_and_valid_patterns() -> None:
    import re

    kb = knowledge()
    for rule in kb.code_rules:
        assert rule.work_item in kb.effort.work_items, rule.id
        assert rule.source.strip() and len(rule.as_of) == 10, rule.id
        for pattern in rule.text:
            re.compile(pattern, re.MULTILINE)
        assert bool(rule.text) == bool(rule.files), rule.id  # a line pattern needs the files it reads
    for name, item in kb.effort.work_items.items():
        assert item.reasoning.strip() and item.base_weeks <= item.cap_weeks, name
    distributed = {
        "nccl",
        "ddp",
        "fsdp",
        "dtensor-tp",
        "fairscale-model-parallel",
        "megatron-core",
        "deepspeed",
        "deepspeed-pipeline",
        "deepspeed-config",
        "accelerate",
        "hf-trainer",
        "torch-compile",
        "amp-gradscaler",
        "amp-autocast-cuda",
        "cuda-streams-graphs",
        "cuda-backend-flags",
        "gpu-launcher",
        "nccl-env",
        "cuda-visible-devices",
        "cuda-base-image",
    }  # issue 16's list: each names its Neuron counterpart and a source
    for rid in distributed:
        rule = kb.rule(rid)
        assert any(k in rule.alternative for k in ("Neuron", "NxD", "neuronx", "xla", "NKI", "bf16")), rid
        assert "aws-neuron" in rule.source or "optimum-neuron" in rule.source or "neuron_notes" in rule.source
