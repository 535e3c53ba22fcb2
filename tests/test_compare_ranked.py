"""Compare reads true: the ranked costs are the ranking's own metric in rank order, ties are the options
whose p10-p90 band overlaps the leader's, money is written for its size, and the chart draws exactly that."""

from __future__ import annotations

import functools
import re

import pytest

from silica.plan import Comparison, compare
from silica.serve._html import bar_band_chart
from silica.text import money_short
from silica.workload import InferenceWorkload, TrainingWorkload


@functools.cache
def loaded() -> Comparison:
    wl = InferenceWorkload(input_len=2048, output_len=512, tpot_slo_ms=60, rate_req_per_s=20)
    return compare("llama-3.1-70b", wl)


@functools.cache
def training() -> Comparison:
    return compare("llama-3.1-70b", TrainingWorkload(seq_len=8192, tokens=2e12, deadline_days=60))


@pytest.mark.parametrize("which", [loaded, training])
def test_ranked_costs_follow_the_ranking_metric_and_mark_ties(which: object) -> None:
    c: Comparison = which()  # type: ignore[operator]
    ranked = c.ranked()
    assert ranked and not ranked[0].tie
    values = [r.value for r in ranked]
    assert values == sorted(values)  # the metric that ranks the rows, so bars are in rank order
    for r in ranked:
        e = c.results[r.rank - 1]
        assert e.instance == r.instance and c.ranking.usd(e) == r.value
        assert r.low is not None and r.high is not None and r.low <= r.value <= r.high
        lead_high = ranked[0].high
        assert lead_high is not None
        assert r.tie == (r is not ranked[0] and r.low <= lead_high)
    assert any(r.tie for r in ranked) and not all(r.tie for r in ranked[1:])
    assert c.to_dict()["ranked"] == [r.to_dict() for r in ranked]


def test_a_monthly_cost_band_carries_the_per_token_band() -> None:
    c = loaded()
    assert c.ranking.by == "usd_per_month"
    for r in c.ranked():
        e = c.results[r.rank - 1]
        band = e.bands["usd_per_1m_output_tokens"]
        per_token = e.usd_per_1m_output_tokens  # type: ignore[attr-defined]
        assert r.low == pytest.approx(r.value * band.low / per_token)
        assert r.high == pytest.approx(r.value * band.high / per_token)


def test_money_is_written_for_its_size() -> None:
    assert money_short(3_454_688) == "$3.45M" and money_short(120_538) == "$121k"
    assert money_short(999_700) == "$1M" and money_short(1_234) == "$1.23k"
    assert money_short(0.1234) == "$0.123" and money_short(250) == "$250" and money_short(0) == "$0"
    assert money_short(-2_500) == "-$2.5k" and money_short(None) == "-"
    assert "e+" not in money_short(3.45e6)


def test_chart_draws_the_ranked_rows_in_order_with_ticks_and_ties() -> None:
    rows = [r.to_dict() for r in training().ranked()]
    for compact in (False, True):
        svg = bar_band_chart(rows, title="t", unit="USD per training run", compact=compact)
        labels = re.findall(r">#(\d+) [^<]*<", svg)
        assert [int(n) for n in labels] == [r["rank"] for r in rows]
        assert svg.count('class="bar tie"') == sum(r["tie"] for r in rows)
        # The leader's cost in the chart's own short money form (millions here), never 1e+06 notation.
        leader = money_short(float(rows[0]["value"]))
        assert "e+" not in svg and leader.endswith("M") and leader in svg, leader
        ticks = re.findall(r'class="tick">([^<]*)<', svg)
        assert ticks[0] == "$0" and len(ticks) >= 3
        # Nothing is drawn past the right edge: the whiskers end inside the plotting area.
        width = float(re.search(r'viewBox="0 0 (\d+)', svg).group(1))  # type: ignore[union-attr]
        xs = [float(x) for x in re.findall(r'<text x="([\d.]+)"', svg)]
        assert max(xs) < width - 40


def test_cli_table_marks_the_same_ties() -> None:
    from silica.cli._output import comparison_listing

    c = loaded()
    listing = comparison_listing(c)
    ties = {r.rank for r in c.ranked() if r.tie}
    marked = {row[0] for row in listing.rows if row[-1].startswith("tie with #1")}
    assert marked == ties and any("tie with #1" in n for n in listing.notes)
