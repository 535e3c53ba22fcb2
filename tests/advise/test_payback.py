"""Money arithmetic of the advisor on hand-made estimates, where every figure can be worked out by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from silica.advise.costing import Candidate, current_cost
from silica.advise.decide import decide
from silica.advise.inventory import Constraints, Current, WorkloadSpec
from silica.advise.rules import load_rules
from silica.advise.scanfile import ScanSummary
from silica.cost import HOURS_PER_MONTH, SECONDS_PER_MONTH
from silica.models import load_model
from silica.results import Estimate, InferenceEstimate, TrainingEstimate
from silica.workload import InferenceWorkload, TrainingWorkload

RATE = 5000.0  # USD per engineer-week


def _estimate(instance: str, chip: str, vendor: str, task: str = "inference", **kw: object) -> Estimate:
    kind = InferenceEstimate if task == "inference" else TrainingEstimate
    base = kind(
        model="llama-3.1-8b",
        instance=instance,
        count=1,
        chip=chip,
        vendor=vendor,
        family="x",
        feasible=True,
        reasons=(),
        tp=1,
        pp=1,
        dp=1,
        batch=8,
        chips=1,
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def _inference_spec(tok_s: float, current_price: float, count: int) -> WorkloadSpec:
    wl = InferenceWorkload(input_len=512, output_len=256, tokens_per_month=tok_s * SECONDS_PER_MONTH)
    return WorkloadSpec(
        name="w",
        model=load_model("llama-3.1-8b"),
        task="inference",
        workload=wl,
        current=Current("p5.48xlarge", count, None, current_price),
        constraints=Constraints(False, False, None),
        runs_per_month=None,
        line=1,
    )


def test_inference_fleet_size_cost_savings_payback_and_break_even() -> None:
    rules = load_rules()
    spec = _inference_spec(tok_s=10_000, current_price=50.0, count=2)
    current = current_cost(spec, None, rules)
    assert current.monthly_usd == pytest.approx(2 * 50.0 * HOURS_PER_MONTH)  # 73,000
    inf2 = Candidate(
        _estimate("inf2.xlarge", "inferentia2", "aws", output_tokens_per_s=1000.0),
        "inferentia",
        1.0,
        10_000,
        None,
    )
    assert inf2.instances(0.5) == 20  # ceil(10,000 / (1,000 x 0.5))
    decision = decide(spec, [inf2], current, rules, RATE, utilisation=0.5)
    o = decision.options[0]
    assert o.monthly_usd == pytest.approx(20 * HOURS_PER_MONTH * 1.0)  # 14,600
    assert o.monthly_savings_usd == pytest.approx(73_000 - 14_600)
    assert o.savings_fraction == pytest.approx(0.8)
    assert o.migration_weeks == rules["migration_weeks_inference_inferentia"] == 4
    assert o.payback_months == pytest.approx(4 * RATE / 58_400)
    assert o.breakeven_usd_per_hour == pytest.approx(73_000 / (20 * HOURS_PER_MONTH))  # $5.00/h
    assert o.payback_price_usd_per_hour == pytest.approx((73_000 - 4 * RATE / 12) / (20 * HOURS_PER_MONTH))
    assert decision.verdict == "inferentia" and decision.proposed == o


def test_price_and_payback_limit_turn_the_verdict() -> None:
    rules = load_rules()
    spec = _inference_spec(tok_s=10_000, current_price=50.0, count=2)
    current = current_cost(spec, None, rules)
    inf2 = Candidate(
        _estimate("inf2.xlarge", "inferentia2", "aws", output_tokens_per_s=1000.0),
        "inferentia",
        1.0,
        10_000,
        None,
    )
    # Six times the price costs more than today: nothing to gain.
    assert decide(spec, [inf2], current, rules, RATE, utilisation=0.5, price_factor=6.0).verdict == "stay"
    # Just under the break-even price the saving exists but is below min_savings_fraction.
    near = decide(spec, [inf2], current, rules, RATE, utilisation=0.5, price_factor=4.9)
    assert near.verdict == "stay" and near.options[0].status == "excluded"
    strict = rules.with_overrides({"max_payback_months": 0.1}, "test")
    excluded = decide(spec, [inf2], current, strict, RATE, utilisation=0.5)
    assert excluded.verdict == "stay"
    assert any("[payback-too-long]" in r for r in excluded.options[0].reasons)


def test_unpriced_option_is_never_chosen_but_gets_a_break_even_price() -> None:
    rules = load_rules()
    spec = _inference_spec(tok_s=10_000, current_price=50.0, count=2)
    current = current_cost(spec, None, rules)
    trn2 = Candidate(
        _estimate("trn2.48xlarge", "trainium2", "aws", output_tokens_per_s=20_000.0),
        "trainium",
        None,
        10_000,
        None,
    )
    d = decide(spec, [trn2], current, rules, RATE, utilisation=1.0)
    o = d.options[0]
    assert d.verdict == "stay" and o.status == "unpriced" and o.monthly_usd is None
    assert o.breakeven_usd_per_hour == pytest.approx(
        73_000 / HOURS_PER_MONTH
    )  # one instance carries the load


def test_same_instance_type_resized_is_a_right_size_that_saves() -> None:
    rules = load_rules()
    spec = _inference_spec(tok_s=10_000, current_price=50.0, count=8)
    current = current_cost(spec, None, rules)
    p5 = Candidate(
        _estimate("p5.48xlarge", "h100", "nvidia", output_tokens_per_s=20_000.0), "nvidia", 50.0, 10_000, None
    )
    d = decide(spec, [p5], current, rules, RATE, utilisation=1.0)
    # 8 -> 1 instance saves 7/8 of the bill with no porting: the verdict takes it, never "stay".
    assert d.verdict == "nvidia" and d.proposed is not None and d.proposed.instances == 1
    assert d.reasons[0].startswith("resize today's 8 x p5.48xlarge to 1 x p5.48xlarge saves $255,500/month")
    # Resizing today's instance type is no migration: zero weeks, so it pays back at once.
    o = d.options[0]
    assert o.migration_weeks == 0.0 and o.migration_usd == 0.0 and o.payback_months == 0.0


def test_savings_below_half_a_percent_are_no_savings() -> None:
    rules = load_rules()
    spec = _inference_spec(tok_s=10_000, current_price=50.0, count=2)
    current = current_cost(spec, None, rules)  # $73,000 a month
    # One g6e instance at a price that saves 0.3% of today's bill.
    price = 73_000 * 0.997 / HOURS_PER_MONTH
    g6e = Candidate(
        _estimate("g6e.48xlarge", "l40s", "nvidia", output_tokens_per_s=20_000.0),
        "nvidia",
        price,
        10_000,
        None,
    )
    for r in (rules, rules.with_overrides({"min_savings_fraction": 0.0}, "test")):
        d = decide(spec, [g6e], current, r, RATE, utilisation=1.0)
        o = d.options[0]
        assert o.monthly_savings_usd == pytest.approx(73_000 * 0.003)
        assert o.payback_months is None  # no saving, so no payback figure
        assert o.status == "excluded" and any("[savings-too-small]" in x for x in o.reasons)
        assert d.verdict == "stay" and d.proposed is None
        assert not any("paying back" in x for x in d.reasons)
    # Just above the threshold, a saving has a payback period again.
    g6e_cheaper = replace(g6e, usd_per_hour=73_000 * 0.99 / HOURS_PER_MONTH)
    o = decide(spec, [g6e_cheaper], current, rules, RATE, utilisation=1.0).options[0]
    assert o.payback_months == pytest.approx(0.5 * RATE / (73_000 * 0.01))


def test_today_short_of_the_load_is_said_first_and_stay_is_not_presented_as_safe() -> None:
    rules = load_rules()
    spec = _inference_spec(tok_s=10_000, current_price=50.0, count=1)
    current = current_cost(spec, None, rules)
    # One p5 replica peaks at 4,000 output tokens/s: today's single instance carries 40% of the load.
    p5 = Candidate(
        _estimate("p5.48xlarge", "h100", "nvidia", output_tokens_per_s=4_000.0), "nvidia", 50.0, 10_000, None
    )
    d = decide(spec, [p5], current, rules, RATE, utilisation=1.0)
    assert d.verdict == "stay"
    assert d.reasons[0].startswith("warning:") and "[current-short]" in d.reasons[0]
    assert "carries 40% of the stated load (3 instances needed)" in d.reasons[0]
    # A deployment the model finds infeasible is said to be so, whatever the verdict.
    broken = replace(p5, estimate=replace(p5.estimate, feasible=False, reasons=("weights do not fit.",)))
    inf2 = Candidate(
        _estimate("inf2.xlarge", "inferentia2", "aws", output_tokens_per_s=1000.0),
        "inferentia",
        1.0,
        10_000,
        None,
    )
    moved = decide(spec, [broken, inf2], current, rules, RATE, utilisation=0.5)
    assert moved.verdict == "inferentia"
    assert any("cannot run this workload (weights do not fit)" in r for r in moved.reasons)
    # Enough instances today: no warning.
    three = replace(spec, current=replace(spec.current, count=3))
    fine = decide(three, [p5], current_cost(three, None, rules), rules, RATE)
    assert not any("[current-short]" in r for r in fine.reasons)


def test_inferentia_fit_note_only_for_standard_architectures() -> None:
    rules = load_rules()
    spec = _inference_spec(tok_s=10_000, current_price=50.0, count=2)
    current = current_cost(spec, None, rules)
    inf2 = Candidate(
        _estimate("inf2.xlarge", "inferentia2", "aws", output_tokens_per_s=1000.0),
        "inferentia",
        1.0,
        10_000,
        None,
    )
    standard = decide(spec, [inf2], current, rules, RATE, utilisation=0.5)
    assert standard.verdict == "inferentia" and any("[inferentia-fit]" in r for r in standard.reasons)
    narrow = rules.with_overrides({"standard_architectures": ["bert"]}, "test")
    scan = ScanSummary(Path("s.json"), {"inferentia2": "ready"}, 1.0, {}, (), {})
    spec_scanned = replace(spec, constraints=Constraints(False, False, scan))
    other = decide(spec_scanned, [inf2], current, narrow, RATE, utilisation=0.5)
    assert other.verdict == "inferentia" and not any("[inferentia-fit]" in r for r in other.reasons)


def test_training_costs_compare_equal_work() -> None:
    rules = load_rules()
    goodput = rules["training_goodput"]
    wl = TrainingWorkload(seq_len=4096, tokens=1e10, deadline_days=10)
    model = load_model("llama-3.1-8b")
    spec = WorkloadSpec(
        "t",
        model,
        "training",
        wl,
        Current("p4d.24xlarge", 4, None, 10.0),
        Constraints(False, False, None),
        2.0,
        1,
    )
    now = _estimate("p4d.24xlarge", "a100-40gb", "nvidia", task="training", count=4, train_days=1.5)
    current = current_cost(spec, now, rules)
    # Two runs of 36 h on 4 instances at $10/h, stretched by goodput.
    assert current.monthly_usd == pytest.approx(10.0 * 4 * 36 / goodput * 2)
    held = current_cost(replace(spec, runs_per_month=None), now, rules)
    assert held.monthly_usd == pytest.approx(10.0 * 4 * HOURS_PER_MONTH)
    assert held.runs_per_month == pytest.approx(HOURS_PER_MONTH * goodput / 36)
    cand = Candidate(
        _estimate("trn1.32xlarge", "trainium1", "aws", task="training", count=8, train_days=0.5),
        "trainium",
        20.0,
        None,
        2.0,
    )
    assert cand.instance_hours(goodput) == pytest.approx(8 * 12 / goodput * 2)
