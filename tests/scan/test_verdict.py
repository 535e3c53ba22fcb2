"""Verdict rules, the CPU-fallback plan and effort arithmetic on hand-made inputs (no torch)."""

from __future__ import annotations

import pytest

from silica.scan.knowledge import knowledge
from silica.scan.report import TARGETS, Finding, OpUse
from silica.scan.verdict import fallback_plan, software_path, verdicts


def _op(name: str, status: str) -> OpUse:
    return OpUse(name, 1, status, "note", "source")  # type: ignore[arg-type]


def test_fallback_plan_counts_runs_of_cpu_nodes() -> None:
    plan = fallback_plan([True, False, False, True, False], ["a", "h", "h", "b", "u"], graph_breaks=0)
    assert plan.cpu_partitions == 2
    assert plan.cpu_nodes == 3
    assert plan.cpu_ops == ("h", "u")
    assert plan.supported_share == pytest.approx(0.4)
    assert not plan.viable  # below torch_neuronx.PartitionerConfig's default 0.5


def test_unsupported_ops_need_work_when_the_partitioner_takes_them() -> None:
    plan = fallback_plan([True, True, True, False], ["a", "b", "c", "aten::histc"], 0)
    result, effort = verdicts(
        knowledge(), kind="model", model_type=None, ops=[_op("aten::histc", "unsupported")], plan=plan
    )
    assert result["trainium2"].verdict == "needs-work"
    assert "aten::histc" in result["trainium2"].work[0]
    # trace path 1.0 + one unsupported op 1.0 + one CPU partition 0.25 = 2.25 -> rounded up to 2.5
    assert result["trainium2"].effort_weeks == 2.5
    assert effort == 2.5


def test_unsupported_ops_block_below_the_threshold() -> None:
    plan = fallback_plan([True, False, False], ["a", "x", "y"], 0)
    ops = [_op("x", "unsupported"), _op("y", "unsupported")]
    result, _ = verdicts(knowledge(), kind="model", ops=ops, plan=plan)
    assert all(v.verdict == "blocked" for v in result.values())
    assert "below the partitioner's 50% threshold" in result["inferentia2"].blockers[0]


def test_blocker_findings_block_only_their_targets() -> None:
    finding = Finding(
        "dtype:complex64",
        "complex64 tensors",
        "2 tensors",
        {
            "inferentia2": "blocker",
            "trainium1": "blocker",
            "trainium2": "needs-work",
            "trainium3": "needs-work",
        },
    )
    result, effort = verdicts(knowledge(), kind="code", findings=[finding])
    assert [result[t].verdict for t in TARGETS] == ["blocked", "blocked", "needs-work", "needs-work"]
    assert effort == 0.0  # the cheapest target that is not blocked


def test_clean_code_scan_is_ready_with_no_effort() -> None:
    result, effort = verdicts(knowledge(), kind="code")
    assert {v.verdict for v in result.values()} == {"ready"}
    assert effort == 0.0


@pytest.mark.parametrize(
    ("model_type", "is_llm", "target", "path"),
    [
        ("llama", True, "trainium2", "supported"),  # vLLM Neuron plugin (beta) and NxDI
        ("llama", True, "inferentia2", "supported"),  # optimum-neuron
        ("gemma2", True, "trainium1", "community"),  # NxDI contrib only
        ("gemma2", True, "trainium2", "none"),
        ("nemotron", True, "trainium2", "none"),  # no Neuron library names it
        ("bert", False, "trainium2", "supported"),
        ("bert", False, "trainium3", "preview"),  # only TorchNeuron (closed beta) documents Trn3
        (None, False, "trainium1", "trace"),  # a user's own module: torch_neuronx.trace
        ("deepseek_v3", True, "trainium2", "maintenance"),  # NxDI, in maintenance mode from 2.30
        ("deepseek_v3", True, "inferentia2", "none"),  # no source shows DeepSeek on Inf2/Trn1
        ("deepseek_v3", True, "trainium1", "none"),
        ("whisper", False, "trainium1", "supported"),  # optimum-neuron, not NxDI
    ],
)
def test_software_path(model_type: str | None, is_llm: bool, target: str, path: str) -> None:
    assert software_path(knowledge(), model_type, is_llm, target)[0] == path


def test_pinned_sdk_is_named() -> None:
    _, libs, notes = software_path(knowledge(), "mistral", True, "trainium1")
    assert "NxD Inference (SDK <=2.28)" in libs
    assert any("pin Neuron 2.28" in n for n in notes)


def test_whisper_on_trainium1_is_optimum_neuron_only() -> None:
    _, libs, _ = software_path(knowledge(), "whisper", False, "trainium1")
    assert libs == ("optimum-neuron",)


def test_training_task_on_a_model_blocks_inferentia2_and_adds_loss_parity() -> None:
    kb = knowledge()
    inference, _ = verdicts(kb, kind="model", model_type="llama", is_llm=True)
    training, effort = verdicts(kb, kind="model", model_type="llama", is_llm=True, task="training")
    assert training["inferentia2"].verdict == "blocked"
    assert "inference accelerator" in training["inferentia2"].blockers[0]
    parity = kb.effort.training.validate_numerics_weeks
    for t in ("trainium1", "trainium2", "trainium3"):
        assert training[t].verdict == inference[t].verdict
        assert ("training: loss parity", parity) in training[t].effort_breakdown
    assert effort >= min(v.effort_weeks for v in inference.values()) + parity - 0.5


def test_work_items_sum_base_findings_and_knees() -> None:
    """One work item: its base once, each rule and the item with a knee at their caps, beyond which weeks
    count at the item's tail_share (issue 30: caps flattened big ports; data/neuron/effort.yaml)."""
    kb = knowledge()
    fairscale = kb.rule("fairscale-model-parallel")
    item = kb.effort.work_items["replace-parallel-layers"]
    findings = [
        Finding(
            fairscale.id, "t", "m", dict.fromkeys(TARGETS, "needs-work"), effort_weeks=fairscale.effort_weeks
        )
        for _ in range(40)
    ]
    result, _ = verdicts(kb, kind="code", findings=findings)
    (only,) = result["trainium2"].work_items
    assert only.item == "replace-parallel-layers" and only.rules == (fairscale.id,)
    tail = item.tail_share
    assert 0 < tail < 1
    rule = fairscale.effort_cap_weeks + tail * (40 * fairscale.effort_weeks - fairscale.effort_cap_weeks)
    whole = item.base_weeks + rule
    assert only.weeks == round(item.cap_weeks + tail * (whole - item.cap_weeks), 3)
    hard_capped = min(item.cap_weeks, item.base_weeks + fairscale.effort_cap_weeks)
    assert only.weeks > hard_capped  # forty occurrences cost more than the old ceiling
    fewer, _ = verdicts(kb, kind="code", findings=findings[:10])
    assert fewer["trainium2"].work_items[0].weeks < only.weeks  # and scale with the count
