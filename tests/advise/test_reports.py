"""Reports are self-contained (no URL, no script), carry the charts, and show what the library returned."""

from __future__ import annotations

import functools
import re
from html.parser import HTMLParser

from tests.advise.conftest import EXAMPLE

from silica.advise import Advice, advise
from silica.advise.claim_checks import check_claims
from silica.advise.claims import ClaimsReport
from silica.report import Meta, advice_html, advice_markdown, claims_html, claims_markdown
from silica.report._format import money, months, weeks

META = Meta(
    "silica advise examples/inventory.yaml", "on-demand list prices as of 2026-01-21", "2026-12-01 12:00 UTC"
)


@functools.cache
def example() -> Advice:
    return advise(EXAMPLE)


@functools.cache
def claims() -> ClaimsReport:
    return check_claims()


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)


def _offline(html: str) -> _Tags:
    assert "http://" not in html and "https://" not in html and "//cdn" not in html
    parser = _Tags()
    parser.feed(html)
    assert "script" not in parser.tags and "link" not in parser.tags and "iframe" not in parser.tags
    # Only in-page links (a reason's rule links to the rules table); nothing that loads or leaves.
    assert not any(
        name == "src" or (name == "href" and not (v or "").startswith("#")) for name, v in parser.attrs
    )
    assert "@import" not in html and "url(" not in html
    return parser


def test_advice_html_is_self_contained_with_all_four_charts() -> None:
    html = advice_html(example(), META)
    tags = _offline(html)
    assert html.startswith("<!DOCTYPE html>")
    assert tags.tags.count("svg") >= 2 + 2 * len(example().workloads)
    for title in (
        "Monthly cost, today and proposed",
        "Payback of the migration",
        "by instance",
        "Sensitivity of the verdict",
    ):
        assert f'aria-label="{title}' in html or title in html, title
    for w in example().workloads:
        assert f"{w.name} " in html and f'class="badge {w.verdict}"' in html
    # Every chart has a caption, and the page scales on a phone.
    assert html.count("<figcaption>") == html.count("<figure>") >= 2 + 2 * len(example().workloads)
    assert 'name="viewport"' in html


def test_advice_html_shows_the_library_numbers_and_rule_sources() -> None:
    html = advice_html(example(), META)
    for w in example().workloads:
        assert f"${w.current.monthly_usd:,.0f}" in html
    assert "guide: below about $10,000 a month" in html  # a rule's source travels into the report
    # Rule ids only as tooltip and in-page link, never in the prose of a reason.
    assert (
        "[small-spend]" not in html and 'title="rule small-spend"' in html and 'id="rule-small-spend"' in html
    )
    assert "below <abbr" in html and ">small spend threshold</abbr>" in html
    # Run date, version, command and price date at the top.
    assert "2026-12-01 12:00 UTC" in html and "silica advise examples/inventory.yaml" in html
    assert "prices: on-demand list prices as of 2026-01-21" in html


def test_advice_splits_the_saving_into_right_size_and_chip_change() -> None:
    # The reranker: right-sizing stays on NVIDIA (g6e); Inferentia is judged on what it adds over that.
    [doc] = [w for w in example().workloads if w.name == "reranker"]
    r, p = doc.right_size, doc.proposed
    assert r is not None and p is not None and r.group == p.group == "nvidia" and p == r
    inf = max(
        (o for o in doc.options if o.group == "inferentia" and o.credited_savings_usd is not None),
        key=lambda o: o.credited_savings_usd or 0.0,
    )
    html = advice_html(example(), META)
    right = money(doc.current.monthly_usd - (r.monthly_usd or 0.0))
    extra = money(inf.credited_savings_usd)
    # Each amount is labelled as a saving; the chip change shows its own increment and payback.
    assert f"saves {right}/mo<br><span class='small'>{weeks(r.migration_weeks)}</span>" in html
    assert f"inferentia: saves {extra}/mo more<br>" in html
    assert (
        f"declined: {weeks(inf.credited_migration_weeks)}, pays back in {months(inf.payback_months)}" in html
    )
    assert r.migration_weeks < inf.migration_weeks  # right-sizing is the cheaper step


def test_money_and_months_read_as_a_person_writes_them() -> None:
    assert money(-226.4) == "-$226" and money(1234.6) == "$1,235"
    assert months(0.04) == "< 0.1 months" and months(0.36) == "0.4 months" and months(None) == "never"
    assert weeks(1) == "1 engineer-week" and weeks(4) == "4 engineer-weeks"
    html = advice_html(example(), META)
    assert "$-" not in html and "0.0 months</td>" not in html


def test_advice_markdown_tables() -> None:
    md = advice_markdown(example(), META)
    assert md.startswith("# Silica advice")
    assert "| workload | verdict |" in md
    for w in example().workloads:
        assert re.search(rf"\| {re.escape(w.name)} \| \*\*{w.verdict}\*\* \|", md), w.name
    assert "## Decision rules" in md and "source" in md


def test_claims_reports() -> None:
    html = claims_html(claims(), META)
    _offline(html)
    assert "<svg" in html and "share of the claimed gain" in html
    for c in claims().claims:
        assert f'class="badge {c.verdict.replace(" ", "-")}"' in html
        tail = c.made_by.split(", as ")[-1]
        assert f"{tail}: {tail}" not in html and f"{tail}; {tail}" not in html  # no doubled source phrase
    md = claims_markdown(claims(), META)
    assert md.count("\n| ") >= len(claims().claims) + 1
    assert "## Sources" in md


def test_a_saving_that_rounds_to_nothing_has_no_sign() -> None:
    """A proposal a few cents dearer than today reads "$0" and "0%", not "-$0" or "$-0 (-0%)"."""
    from silica.text import money, percent

    assert money(-0.3) == "$0" and money(0.4) == "$0" and money(-1.6) == "-$2"
    assert percent(-0.001) == "0%" and percent(-0.2) == "-20%"


def test_advice_report_leads_with_a_summary_and_folds_each_workload() -> None:
    html = advice_html(example(), META)
    summary, rest = html.split("<h2>Workloads</h2>", 1)
    # The summary screen: totals, every verdict and its saving and payback, before any detail.
    assert "should change" in summary and "saving $" in summary and "payback" in summary
    assert summary.index("<table") < summary.index("<details")
    for w in example().workloads:
        assert f'href="#w-{w.name}"' in summary
        assert f'<details class="workload" id="w-{w.name}">' in rest
    # No bare "-" where a figure or the reason for its absence can be given.
    assert "<td>-</td>" not in html and '<td class="num">-</td>' not in html


def test_advice_html_shows_each_chosen_options_energy() -> None:
    """The per-family table carries the chosen estimate's power, J per token and carbon (plan.energy);
    an option whose chip power is published nowhere says so, never shows a number."""
    advice = example()
    html = advice_html(advice, META)
    assert "W / instance" in html and "kgCO2e / 1M out" in html
    shown = 0
    for a in advice.workloads:
        for best in a.best.values():
            o = best.option
            e = o.estimate.energy if o is not None and o.estimate is not None else None
            if e is not None and e.known and e.instance_power_w is not None:
                assert f">{e.instance_power_w:,.0f}<" in html
                shown += 1
    assert shown > 0
