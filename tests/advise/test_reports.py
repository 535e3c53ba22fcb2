"""Reports are self-contained (no URL, no script), carry the charts, and show what the library returned."""

from __future__ import annotations

import functools
import re
from html.parser import HTMLParser

from tests.advise.conftest import EXAMPLE

from silica.advise import Advice, advise
from silica.advise.claim_checks import check_claims
from silica.advise.claims import ClaimsReport
from silica.report import advice_html, advice_markdown, claims_html, claims_markdown


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
    assert not any(name in ("src", "href") for name, _ in parser.attrs)
    assert "@import" not in html and "url(" not in html
    return parser


def test_advice_html_is_self_contained_with_all_four_charts() -> None:
    html = advice_html(example())
    tags = _offline(html)
    assert html.startswith("<!DOCTYPE html>")
    assert tags.tags.count("svg") >= 2 + 2 * len(example().workloads)
    for title in (
        "Current vs proposed monthly cost",
        "Payback of the migration",
        "by instance",
        "Sensitivity of the verdict",
    ):
        assert f'aria-label="{title}' in html or title in html, title
    for w in example().workloads:
        assert f"{w.name} " in html and f'class="verdict {w.verdict}"' in html


def test_advice_html_shows_the_library_numbers_and_rule_sources() -> None:
    html = advice_html(example())
    for w in example().workloads:
        assert f"${w.current.monthly_usd:,.0f}" in html
    assert "guide: below about $10,000 a month" in html  # a rule's source travels into the report
    assert "[small-spend]" in html


def test_advice_markdown_tables() -> None:
    md = advice_markdown(example())
    assert md.startswith("# Silica advice")
    assert "| workload | verdict |" in md
    for w in example().workloads:
        assert re.search(rf"\| {re.escape(w.name)} \| \*\*{w.verdict}\*\* \|", md), w.name
    assert "## Decision rules" in md and "source" in md


def test_claims_reports() -> None:
    html = claims_html(claims())
    _offline(html)
    assert "<svg" in html
    for c in claims().claims:
        assert f'class="verdict {c.verdict.replace(" ", "-")}"' in html
    md = claims_markdown(claims())
    assert md.count("\n| ") >= len(claims().claims) + 1
    assert "## Sources" in md
