"""The decision ladder: today -> best right-size on today's vendor -> chip changes judged on their increment.

Every verdict must agree with its own figures: no "stay" while an eligible option saves money, every
payback is the credited effort over the credited saving, and a chip change is credited only with what
it adds over the right-size. Checked on the bundled example and on random inventories (hand-made
estimates, so each figure can be traced by hand and thousands of cases run in seconds).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.advise.conftest import EXAMPLE

from silica.advise import Advice, advise
from silica.advise.costing import Candidate, current_cost
from silica.advise.decide import Decision, decide
from silica.advise.inventory import Constraints, Current, WorkloadSpec
from silica.advise.results import CurrentCost, Group, Option
from silica.advise.rules import Rules, load_rules
from silica.cost import SECONDS_PER_MONTH
from silica.models import load_model
from silica.results import InferenceEstimate
from silica.text import money
from silica.workload import InferenceWorkload

RATE = 5000.0


@functools.cache
def example() -> Advice:
    return advise(EXAMPLE)


def check_ladder(
    verdict: str,
    proposed: Option | None,
    right: Option | None,
    options: tuple[Option, ...],
    today_usd: float,
    reasons: tuple[str, ...],
    rules: Rules,
) -> None:
    """The invariants every decision must hold, whatever its inputs."""
    for o in options:
        if o.monthly_usd is None:
            assert o.payback_months is None and o.credited_savings_usd is None
            continue
        assert o.monthly_savings_usd == pytest.approx(today_usd - o.monthly_usd)
        assert o.baseline_monthly_usd is not None
        assert o.credited_savings_usd == pytest.approx(o.baseline_monthly_usd - o.monthly_usd)
        if o.step == "change chip" and right is not None:
            # A chip change is credited only with what it adds over the right-size.
            assert o.baseline_monthly_usd == pytest.approx(right.monthly_usd)
            assert o.credited_migration_weeks == pytest.approx(
                max(o.migration_weeks - right.migration_weeks, 0)
            )
        else:
            assert o.baseline == "today" and o.baseline_monthly_usd == pytest.approx(today_usd)
            assert o.credited_migration_weeks == o.migration_weeks
        if o.payback_months is not None:
            assert o.payback_months == pytest.approx(
                o.credited_migration_usd / (o.credited_savings_usd or 0.0)
            )
        if o.status == "eligible":
            assert (o.credited_fraction or 0.0) >= rules["min_savings_fraction"]
            assert o.payback_months is not None and o.payback_months <= rules["max_payback_months"]
            assert (o.monthly_savings_usd or 0.0) > 0
    eligible = [o for o in options if o.status == "eligible"]
    if verdict == "stay":
        assert proposed is None
        assert not eligible, "stay while an eligible option saves money"
        return
    assert proposed is not None and proposed.status == "eligible" and proposed.group == verdict
    assert money(proposed.monthly_savings_usd) in reasons[0]
    chips = [o for o in eligible if o.step == "change chip"]
    if chips:  # a chip change that pays for itself on its increment wins; the biggest saving of those
        assert proposed.step == "change chip"
        assert proposed.monthly_savings_usd == max(o.monthly_savings_usd or 0.0 for o in chips)
    else:
        assert proposed == right


def test_every_verdict_of_the_example_agrees_with_its_own_figures() -> None:
    rules = load_rules()
    for w in example().workloads:
        check_ladder(w.verdict, w.proposed, w.right_size, w.options, w.current.monthly_usd, w.reasons, rules)
        assert w.monthly_savings_usd == pytest.approx(w.current.monthly_usd - w.proposed_monthly_usd)


def test_code_assist_takes_the_right_size_that_saves() -> None:
    [w] = [w for w in example().workloads if w.name == "code-assist"]
    # Resizing the p5 fleet needs no porting and saves a third of the bill: the verdict takes it.
    assert w.verdict == "nvidia" and w.proposed is not None and w.proposed.instance == "p5.48xlarge"
    assert w.monthly_savings_usd > 100_000 and w.payback_months == 0.0


def test_todays_replicas_of_one_gpu_instances_are_feasible() -> None:
    [w] = [w for w in example().workloads if w.name == "support-bot"]
    e = w.current.estimate
    # 2 x g6e.xlarge is two one-GPU replicas, not one model split tensor-parallel over two instances.
    assert e is not None and e.feasible and e.count == 1 and e.tp == 1


# --- random inventories -------------------------------------------------------------------------------

_CHIPS: dict[Group, tuple[str, str]] = {
    "nvidia": ("h100", "nvidia"),
    "inferentia": ("inferentia2", "aws"),
    "trainium": ("trainium1", "aws"),
}


def _candidate(i: int, group: Group, tok_s: float, price: float | None, need: float) -> Candidate:
    chip, vendor = _CHIPS[group]
    e = InferenceEstimate(
        model="llama-3.1-8b",
        instance=f"{group}-{i}.xlarge" if i else "today.xlarge",
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
        output_tokens_per_s=tok_s,
    )
    return Candidate(e, group, price, need, None)


option_st = st.tuples(
    st.sampled_from(("nvidia", "inferentia", "trainium")),
    st.floats(100.0, 50_000.0),  # output tokens/s of one instance
    st.one_of(st.none(), st.floats(0.5, 120.0)),  # price per hour; None: no public price
)


@settings(max_examples=300, deadline=None)
@given(
    need=st.floats(1_000.0, 200_000.0),
    today_count=st.integers(1, 40),
    today_price=st.floats(1.0, 100.0),
    today_tok_s=st.floats(500.0, 50_000.0),
    others=st.lists(option_st, min_size=0, max_size=6),
    cuda_only=st.booleans(),
    rules_knobs=st.tuples(st.floats(0.0, 0.5), st.floats(0.5, 36.0), st.floats(0.0, 50_000.0)),
    price_factor=st.floats(0.5, 1.5),
)
def test_random_inventories_keep_the_ladder(
    need: float,
    today_count: int,
    today_price: float,
    today_tok_s: float,
    others: list[tuple[Group, float, float | None]],
    cuda_only: bool,
    rules_knobs: tuple[float, float, float],
    price_factor: float,
) -> None:
    rules = load_rules().with_overrides(
        {
            "min_savings_fraction": rules_knobs[0],
            "max_payback_months": rules_knobs[1],
            "small_spend_usd_per_month": rules_knobs[2],
        },
        "test",
    )
    wl = InferenceWorkload(input_len=512, output_len=256, tokens_per_month=need * SECONDS_PER_MONTH)
    spec = WorkloadSpec(
        name="w",
        model=load_model("llama-3.1-8b"),
        task="inference",
        workload=wl,
        current=Current("today.xlarge", today_count, None, today_price),
        constraints=Constraints(False, cuda_only, None),
        runs_per_month=None,
        line=1,
    )
    cands = [_candidate(0, "nvidia", today_tok_s, today_price, need)]
    cands += [_candidate(i + 1, g, tok, price, need) for i, (g, tok, price) in enumerate(others)]
    base = current_cost(spec, None, rules)
    current = CurrentCost(
        "today.xlarge", today_count, base.monthly_usd, base.basis, None, None, cands[0].estimate
    )
    d: Decision = decide(spec, cands, current, rules, RATE, price_factor=price_factor)
    check_ladder(d.verdict, d.proposed, d.right_size, d.options, current.monthly_usd, d.reasons, rules)
    if cuda_only:
        assert d.verdict in ("stay", "nvidia")


def test_a_port_is_judged_on_its_increment_over_the_right_size() -> None:
    """Today 10 x $50/h; resizing today's type to 2 saves 80% at no effort; a port to $9/h instances
    would save 82% against today but only 10% over the right-size: declined, the right-size is taken."""
    rules = load_rules()
    wl = InferenceWorkload(input_len=512, output_len=256, tokens_per_month=10_000 * SECONDS_PER_MONTH)
    spec = WorkloadSpec(
        "w",
        load_model("llama-3.1-8b"),
        "inference",
        wl,
        Current("today.xlarge", 10, None, 50.0),
        Constraints(False, False, None),
        None,
        1,
    )
    today = _candidate(0, "nvidia", 5_000.0, 50.0, 10_000)
    port = _candidate(1, "inferentia", 1_000.0, 9.0, 10_000)
    current = replace(current_cost(spec, None, rules), estimate=today.estimate)
    d = decide(spec, [today, port], current, rules, RATE, utilisation=1.0)
    assert d.verdict == "nvidia" and d.proposed is not None and d.proposed.instances == 2
    [o] = [o for o in d.options if o.group == "inferentia"]
    assert o.credited_savings_usd == pytest.approx(2 * 50.0 * 730 - 10 * 9.0 * 730)  # $7,300
    assert o.credited_fraction == pytest.approx(0.1) and o.status == "excluded"
    assert o.payback_months == pytest.approx(4 * RATE / 7_300)
