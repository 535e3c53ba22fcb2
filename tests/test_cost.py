"""The cost layer against hand arithmetic, and the comparison ranking on the cost each estimate carries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from silica import cost
from silica.cost import Ranking
from silica.plan import compare
from silica.workload import InferenceWorkload, TrainingWorkload

SRC = Path(__file__).resolve().parents[1] / "src" / "silica"


def test_a_month_is_a_twelfth_of_a_365_day_year() -> None:
    assert cost.HOURS_PER_MONTH == 730.0  # 365 x 24 / 12
    assert cost.SECONDS_PER_MONTH == 2_628_000.0


def test_money_by_hand() -> None:
    # 4 instances at $12.50/h: $50/h; a month of 730 h is $36,500.
    assert cost.usd_per_hour(12.5, 4) == 50.0
    assert cost.usd_per_month(50.0) == 36_500.0
    assert cost.usd_per_month(50.0, instances=3) == 109_500.0
    assert cost.usd(50.0, 10.0) == 500.0
    # $36/h moving 10,000 tokens/s: 36 M tokens an hour, so $1 per 1M tokens.
    assert cost.usd_per_million_tokens(36.0, 10_000.0) == pytest.approx(1.0)
    assert cost.hours_per_million(2, 10_000.0) == pytest.approx(2 / 36)  # 2 instance-hours buy 72 M
    assert cost.usd_per_million(5.0, 2_500_000.0) == 2.0
    # A 2.5-day run at $40/h: 60 h, $2,400.
    assert cost.usd_per_run(40.0, 2.5) == 2_400.0
    # $73,000 a month buys 14,600 instance-hours at $5/h.
    assert cost.breakeven_price(73_000.0, 14_600.0) == 5.0
    assert cost.payback_months(30_000.0, 10_000.0) == 3.0


def test_unknown_stays_unknown() -> None:
    assert cost.usd(None, 10.0) is None
    assert cost.usd_per_hour(None, 4) is None
    assert cost.usd_per_month(None) is None
    assert cost.usd_per_million_tokens(None, 100.0) is None
    assert cost.usd_per_million_tokens(10.0, 0.0) is None
    assert cost.usd_per_run(10.0, None) is None
    assert cost.breakeven_price(-5.0, 100.0) is None  # no positive price saves money
    assert cost.payback_months(1000.0, 0.0) is None


@pytest.mark.parametrize(
    ("training", "loaded", "encoder", "by"),
    [
        (True, False, False, "usd_per_run"),
        (False, True, False, "usd_per_month"),
        (False, True, True, "usd_per_month"),
        (False, False, True, "usd_per_1m_input_tokens"),
        (False, False, False, "usd_per_1m_output_tokens"),
    ],
)
def test_ranking_mode(training: bool, loaded: bool, encoder: bool, by: str) -> None:
    assert Ranking(training, loaded, encoder).by == by


@pytest.mark.parametrize(
    "wl",
    [
        InferenceWorkload(input_len=1024, output_len=256),
        InferenceWorkload(input_len=1024, output_len=256, rate_req_per_s=20.0),
        TrainingWorkload(seq_len=4096, tokens=1e11),
    ],
)
def test_compare_ranks_on_the_cost_each_estimate_carries(wl: InferenceWorkload | TrainingWorkload) -> None:
    c = compare("llama-3.1-8b", wl)
    rank = c.ranking
    priced = [r for r in c.results if r.feasible and rank.usd(r) is not None]
    costs = [getattr(r, rank.by) for r in priced]
    assert costs == sorted(costs) and len(costs) > 3
    # The carried figure is price x instance-hours per ranking unit.
    for r in priced:
        assert r.price is not None
        hours = rank.instance_hours(r)
        assert hours is not None
        assert getattr(r, rank.by) == pytest.approx(r.price.usd_per_hour * hours, rel=1e-12)
    # An unpriced option's break-even price makes it cost exactly what the cheapest does.
    for r in c.results:
        if r.feasible and r.breakeven_usd_per_hour is not None:
            hours = rank.instance_hours(r)
            assert hours is not None
            assert r.breakeven_usd_per_hour * hours == pytest.approx(costs[0], rel=1e-12)


def test_only_the_cost_layer_defines_a_month_or_multiplies_a_price_by_hours() -> None:
    month = re.compile(r"\b730\b|(HOURS|SECONDS)_PER_MONTH\s*=")
    price_hours = re.compile(r"usd_per_(instance_)?hour\s*\*\s*[a-z_.]*(hour|month|days)")
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.parent.name == "cost":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if month.search(line) or price_hours.search(line):
                offenders.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert offenders == []
