"""The verdicts the issue's Done-when asks for, on the bundled example and on small focused inventories."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.advise.conftest import EXAMPLE

from silica.advise import Advice, WorkloadAdvice, advise
from silica.advise.scanfile import read_scan

NEURON = ("trainium", "inferentia")


@functools.cache
def example() -> Advice:
    return advise(EXAMPLE)


def workload(name: str) -> WorkloadAdvice:
    return next(w for w in example().workloads if w.name == name)


def test_example_has_at_least_six_workloads_covering_every_case() -> None:
    names = {w.name for w in example().workloads}
    assert len(names) >= 6
    assert {w.task for w in example().workloads} == {"inference", "training"}


def test_small_workload_stays_because_spend_is_small() -> None:
    w = workload("support-bot")
    assert w.current.monthly_usd < 10_000
    assert w.verdict == "stay"
    assert any("[small-spend]" in r for r in w.reasons)
    assert w.monthly_savings_usd == 0.0 and w.proposed is None
    # Even though a cheaper option exists, the small-spend rule keeps it where it is.
    assert w.best_alternative is not None and (w.best_alternative.monthly_savings_usd or 0) > 0


def test_large_standard_inference_moves_and_pays_back() -> None:
    w = workload("doc-summaries")
    assert w.current.monthly_usd > 50_000
    assert w.verdict != "stay"
    assert w.proposed is not None and w.proposed.group == w.verdict
    assert w.proposed_monthly_usd < w.current.monthly_usd * 0.8
    assert w.payback_months is not None and w.payback_months <= 12
    assert w.monthly_savings_usd == pytest.approx(w.current.monthly_usd - w.proposed_monthly_usd)


def test_multi_cloud_workload_stays_on_nvidia() -> None:
    w = workload("doc-summaries-multicloud")
    twin = workload("doc-summaries")
    assert w.verdict in ("stay", "nvidia")
    for option in w.options:
        if option.group in NEURON:
            assert option.status in ("disqualified", "infeasible"), option
            if option.status == "disqualified":
                assert any("[multi-cloud]" in r for r in option.reasons)
    assert any("[multi-cloud]" in r for r in w.reasons)
    # Same load and bill as its twin: only the constraint differs.
    assert w.current.monthly_usd == twin.current.monthly_usd


def test_cuda_only_dependency_keeps_neuron_out() -> None:
    w = workload("code-assist")
    assert w.verdict in ("stay", "nvidia")
    assert all(o.status != "eligible" for o in w.options if o.group in NEURON)
    assert any("[cuda-only-deps]" in r for r in w.best["trainium"].reasons)


def test_training_never_goes_to_inferentia_and_unpriced_trainium_shows_break_even() -> None:
    w = workload("pretrain-70b")
    assert w.verdict != "inferentia"
    unpriced = [
        o for o in w.options if o.instance in ("trn2.48xlarge", "u-trn2x64") and o.status != "infeasible"
    ]
    assert unpriced, "Trainium2 should be modelled for 70B training"
    for o in unpriced:
        assert o.monthly_usd is None and o.usd_per_hour is None  # no invented price
        assert o.breakeven_usd_per_hour is not None and o.breakeven_usd_per_hour > 0
        assert o.status in ("unpriced", "disqualified")


def test_the_example_scan_is_real_scan_output() -> None:
    scan = json.loads((EXAMPLE.parent / "scans" / "ranker.scan.json").read_text())
    assert scan["subject"] == "gemma-2-9b" and scan["model_type"] == "gemma2"
    assert scan["method"] == "torch.export" and scan["seconds"] > 0 and scan["versions"]
    assert "illustrative" not in json.dumps(scan).lower()


def test_scan_sets_effort_for_the_reranker() -> None:
    w = workload("reranker")
    scan = json.loads((EXAMPLE.parent / "scans" / "ranker.scan.json").read_text())
    efforts = {t: d["effort_weeks"] for t, d in scan["targets"].items()}
    # The real scan of gemma-2-9b: every target needs work (no maintained Neuron library path for
    # Gemma 2, community code on Trainium1), nothing blocked, no unsupported operator.
    assert set(scan["target_verdicts"].values()) == {"needs-work"}
    for chip in ("inferentia2", "trainium1"):
        options = [o for o in w.options if o.chip == chip and o.status != "infeasible"]
        assert options and all(o.migration_weeks == efforts[chip] for o in options), chip
        assert all(not any("[gpu-fallback]" in r for r in o.reasons) for o in options)
    # Inferentia beats today by half, but right-sizing on NVIDIA (no porting) gets almost all of that:
    # judged on what it adds over the right-size, the port is declined and the right-size is taken.
    assert w.verdict == "nvidia" and w.proposed is not None and w.proposed == w.right_size
    [inf] = [o for o in w.options if o.instance == "inf2.xlarge"]
    assert inf.step == "change chip" and inf.baseline.startswith("right-size ")
    assert inf.migration_weeks == efforts["inferentia2"] == 4.0
    assert inf.credited_migration_weeks == 4.0 - w.proposed.migration_weeks
    assert inf.credited_savings_usd == pytest.approx((w.proposed.monthly_usd or 0) - (inf.monthly_usd or 0))
    assert inf.payback_months == pytest.approx(inf.credited_migration_usd / (inf.credited_savings_usd or 1))
    assert inf.status == "excluded" and inf.payback_months > 12
    assert any("inf2.xlarge adds" in r for r in w.reasons)
    # Gemma 2 is not a standard architecture: the inferentia-fit note does not apply to it.
    assert not any("[inferentia-fit]" in r for r in w.reasons)  # (the positive case: test_payback.py)


def test_scan_with_unsupported_ops_adds_a_gpu_fallback(
    write_inventory: Callable[[str], Path], tmp_path: Path
) -> None:
    (tmp_path / "scan.json").write_text(
        json.dumps(
            {
                "target_verdicts": dict.fromkeys(("inferentia2", "trainium1", "trainium2"), "needs-work")
                | {"trainium3": "blocked"},
                "ops": [{"op": "aten::bucketize", "count": 1, "status": "unsupported"}],
                "findings": [],
                "effort_weeks": 3.0,
                "targets": {"inferentia2": {"effort_weeks": 6.0}},
                "kind": "model",
                "method": "torch.export",
            }
        )
    )
    path = write_inventory(
        """
        workloads:
          - name: ranker
            model: gemma-2-9b
            task: inference
            load: {tokens_per_month: 3.0e10, input_len: 512, output_len: 128}
            slo: {ttft_ms: 5000, tpot_ms: 120}
            current: {monthly_usd: 48000, instance: g6e.48xlarge, count: 2}
            constraints: {scan: scan.json}
        """
    )
    w = advise(path).workloads[0]
    inf2 = [o for o in w.options if o.chip == "inferentia2" and o.monthly_usd is not None]
    assert inf2 and all(o.migration_weeks == 6.0 for o in inf2)
    assert all(any("[gpu-fallback]" in r for r in o.reasons) for o in inf2)
    trn3 = [o for o in w.options if o.chip == "trainium3" and o.status != "infeasible"]
    assert trn3 and all(any("[scan-blocked]" in r for r in o.reasons) for o in trn3)


def test_failed_scan_is_not_a_migration_estimate(write_inventory: Callable[[str], Path]) -> None:
    fixture = Path(__file__).parent / "factory_error.scan.json"  # real `silica scan f.py:NAME --json`
    scan = read_scan(fixture)
    assert scan.failed is not None and scan.failed.startswith("factory-error: reranker() raised")
    path = write_inventory(
        f"""
        workloads:
          - name: summaries
            model: llama-3.1-8b
            task: inference
            load: {{tokens_per_month: 1.0e11, input_len: 512, output_len: 256}}
            slo: {{ttft_ms: 5000, tpot_ms: 100}}
            current: {{instance: p5.48xlarge, count: 2}}
            constraints: {{scan: {fixture}}}
        """
    )
    w = advise(path).workloads[0]
    assert w.verdict in ("stay", "nvidia")
    neuron = [o for o in w.options if o.group in NEURON and o.status != "infeasible"]
    assert neuron and all(o.status == "disqualified" for o in neuron)
    assert all(any("[scan-failed]" in r for r in o.reasons) for o in neuron)
    # Its "needs-work, 2 weeks" is not read as the port's effort: the defaults apply.
    assert all(o.migration_weeks == 4.0 for o in neuron if o.chip == "inferentia2")
    assert any("inferentia ruled out" in r and "[scan-failed]" in r for r in w.reasons)


def test_config_error_and_untraced_scans_are_flagged(tmp_path: Path) -> None:
    base = {"target_verdicts": {"inferentia2": "needs-work"}, "effort_weeks": 2.0, "kind": "model"}
    config_error = base | {
        "method": "none",
        "findings": [
            {
                "rule": "config-error",
                "title": "model could not be scanned",
                "message": "transformers 5.24.0 rejects this config: Unrecognized model identifier: acme"
                + "x" * 500,
            }
        ],
    }
    untraced = base | {"method": "none", "findings": []}
    traced = base | {"method": "dynamo", "findings": []}
    code = {
        "target_verdicts": {"inferentia2": "ready"},
        "effort_weeks": 0,
        "kind": "code",
        "method": "static analysis",
    }
    found = {}
    for name, data in {"config": config_error, "untraced": untraced, "traced": traced, "code": code}.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
        found[name] = read_scan(tmp_path / f"{name}.json").failed
    assert found["config"] is not None and found["config"].startswith("config-error: transformers")
    assert len(found["config"]) < 200
    assert found["untraced"] == "nothing was traced (method none)"
    assert found["traced"] is None and found["code"] is None


def test_verdicts_are_stable_in_the_sensitivity_grid_at_the_base_case() -> None:
    for w in example().workloads:
        s = w.sensitivity
        base = s.verdicts[s.price_factors.index(1.0)]
        knob = example().rules["thresholds"][s.utilisation_name]["value"]
        assert base[s.utilisations.index(knob)] == w.verdict


def test_nonstandard_architecture_without_scan_is_not_a_neuron_candidate(
    write_inventory: Callable[[str], Path],
) -> None:
    path = write_inventory(
        """
        workloads:
          - name: gemma
            model: gemma-2-9b
            task: inference
            load: {tokens_per_month: 3.0e10, input_len: 512, output_len: 128}
            slo: {ttft_ms: 5000, tpot_ms: 120}
            current: {monthly_usd: 48000}
        """
    )
    w = advise(path).workloads[0]
    assert w.verdict in ("stay", "nvidia")
    assert all(o.status != "eligible" for o in w.options if o.group in NEURON)
    assert any("[nonstandard-architecture]" in r for r in w.best["inferentia"].reasons)


def test_scan_blocked_target_is_disqualified(write_inventory: Callable[[str], Path], tmp_path: Path) -> None:
    (tmp_path / "scan.json").write_text(
        '{"target_verdicts": {"inferentia2": "blocked", "trainium1": "blocked", "trainium2": "blocked",'
        ' "trainium3": "blocked"}, "ops": [], "findings": [], "effort_weeks": 2}'
    )
    path = write_inventory(
        """
        workloads:
          - name: summaries
            model: llama-3.1-8b
            task: inference
            load: {tokens_per_month: 1.0e11, input_len: 512, output_len: 256}
            slo: {ttft_ms: 5000, tpot_ms: 100}
            current: {instance: p5.48xlarge, count: 2}
            constraints: {scan: scan.json}
        """
    )
    w = advise(path).workloads[0]
    assert w.verdict in ("stay", "nvidia")
    neuron = [o for o in w.options if o.group in NEURON and o.status != "infeasible"]
    assert neuron and all(o.status == "disqualified" for o in neuron)
    for o in neuron:
        rule = "[scan-uncovered]" if o.chip == "inferentia1" else "[scan-blocked]"
        assert any(rule in r for r in o.reasons), o
