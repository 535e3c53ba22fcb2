"""Every vendor claim gets a verdict from Silica's own figures; unknown prices become break-even prices."""

from __future__ import annotations

import functools

import pytest

from silica.advise.claim_checks import check_claims
from silica.advise.claims import (
    VERDICTS,
    ClaimResult,
    ClaimsReport,
    combine,
    grade,
    load_claims,
)
from silica.catalog import get_chip, load_catalog, price_for
from silica.errors import UnknownNameError

ISSUE_CLAIMS = {  # the twelve claims of issue 5 and the four of issue 28, by a phrase each contains
    "trn2-half-of-h100": "about half as much as comparable H100",
    "trn2-30-40-better-than-p5": "30-40% better price-performance than P5",
    "trn-54-lower-than-a100": "54% lower cost per token than A100",
    "trn-h100-at-25-percent": "at 25% of the cost",
    "inf1-2.3x-70-percent": "2.3x the throughput at 70% lower cost",
    "inf2-40-percent-price-performance": "40% better price-performance than comparable EC2",
    "inf2-4x-throughput-10x-latency": "4x the throughput and 10x lower latency",
    "trn2-4x-trn1": "4x the performance of Trainium1",
    "trn3-4.4x-trn2": "4.4x the performance of Trainium2",
    "trn3-40-60-less-than-blackwell": "40-60% less than Blackwell",
    "trn3-customers-50-percent": "50% lower training and inference costs on Trainium3",
    "h100-3-to-4-per-gpu-hour": "$3-4 per GPU-hour",
    # the energy claims of issue 28
    "trn3-5x-tokens-per-mw": "5x more output tokens per megawatt",
    "trn3-4x-energy-efficiency": "4x greater energy efficiency",
    "trn3-40-percent-energy-efficiency": "40% better energy efficiency than Trainium2",
    "inf2-50-percent-perf-per-watt": "50% better performance/watt",
}


@functools.cache
def report() -> ClaimsReport:
    return check_claims()


def claim(claim_id: str) -> ClaimResult:
    return next(c for c in report().claims if c.id == claim_id)


def test_every_claim_of_the_issue_is_covered_and_gets_a_verdict() -> None:
    assert {c.id for c in report().claims} == set(ISSUE_CLAIMS)
    for c in report().claims:
        assert ISSUE_CLAIMS[c.id] in c.claim
        assert c.verdict in VERDICTS
        assert c.where.strip() and c.made_by.strip()
        assert c.computed.strip() and c.computed != "-", c.id
        if c.verdict == "cannot check":
            assert c.reason.strip()


def test_claims_needing_unpublished_prices_give_the_price_at_which_they_hold() -> None:
    catalog = load_catalog()
    for claim_id in (
        "trn2-half-of-h100",
        "trn2-30-40-better-than-p5",
        "trn3-40-60-less-than-blackwell",
        "trn3-customers-50-percent",
    ):
        c = claim(claim_id)
        assert c.verdict in ("cannot check", "not supported"), claim_id
        assert c.holds_at, claim_id
        for h in c.holds_at:
            assert h.usd_per_hour > 0
            assert price_for(catalog, h.instance, option="on_demand") is None  # really unpriced
    half = claim("trn2-half-of-h100").holds_at[0]
    assert half.usd_per_hour == pytest.approx(0.5 * 55.04)  # half of p5.48xlarge on demand


def test_h100_price_claim_is_checked_against_the_catalog() -> None:
    c = claim("h100-3-to-4-per-gpu-hour")
    p5 = price_for(load_catalog(), "p5.48xlarge", option="on_demand")
    assert p5 is not None
    on_demand = next(f for f in c.figures if "on_demand" in f.name)
    per_gpu = p5.usd_per_hour / 8
    assert on_demand.value == pytest.approx(per_gpu)
    expected = "supported" if 3.0 <= per_gpu <= 4.0 else "partly" if per_gpu <= 5.0 else "not supported"
    assert c.verdict == expected


def test_trainium3_spec_figures_come_from_the_chip_table() -> None:
    c = claim("trn3-4.4x-trn2")
    chip = get_chip(load_catalog(), "trainium3")
    per_chip = next(f for f in c.figures if "per chip (chip table)" in f.name)
    assert per_chip.value == pytest.approx((chip.tflops_fp8 or 0) / 1000)
    assert per_chip.grade == "supported"
    system = next(f for f in c.figures if "144 chips" in f.name)
    assert system.value == pytest.approx(144 * (chip.tflops_fp8 or 0) / 1000)
    # The 4.4x holds for the UltraServer (2.25x the chips), not per chip: so only partly.
    assert c.verdict == "partly"


def test_grading_rules() -> None:
    assert grade(4.0, 4.0, 0.15, 1.0) == "supported"
    assert grade(3.6, 4.0, 0.15, 1.0) == "supported"  # 2.6 of 3.0 = 87% of the claimed effect
    assert grade(2.6, 4.0, 0.15, 1.0) == "partly"
    assert grade(1.5, 4.0, 0.15, 1.0) == "not supported"
    assert grade(0.27, 0.54, 0.15, 0.0) == "partly"
    assert grade(None, 0.54, 0.15, 0.0) is None
    assert combine(["supported", "supported"]) == "supported"
    assert combine(["supported", "not supported"]) == "partly"
    assert combine(["not supported", None]) == "not supported"
    assert combine([None]) == "cannot check"


def test_selecting_claims_and_unknown_ids() -> None:
    one = check_claims(["trn2-4x-trn1"])
    assert [c.id for c in one.claims] == ["trn2-4x-trn1"]
    with pytest.raises(UnknownNameError, match="Did you mean 'trn2-4x-trn1'"):
        check_claims(["trn2-4x-trn"])


def test_claims_file_loads_with_sources() -> None:
    data = load_claims()
    assert len(data.claims) == len(ISSUE_CLAIMS)
    assert all(c.where.strip() for c in data.claims)


def test_claim_types_do_not_import_the_checks() -> None:
    """claims.py (types, loader, grading) sits below the checks: no import of them, not even in a function."""
    import ast
    import inspect

    import silica.advise.claims as claims_module

    tree = ast.parse(inspect.getsource(claims_module))
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    assert not {m for m in imported if m.startswith("silica.advise.")}
