"""The energy claims (issue 28): re-derived from the planner's energy figures, or the chip power at which they hold."""

from __future__ import annotations

import functools

from silica.advise.claim_checks import check_claims
from silica.advise.claims import ClaimResult, ClaimsReport

ENERGY = (
    "trn3-5x-tokens-per-mw",
    "trn3-4x-energy-efficiency",
    "trn3-40-percent-energy-efficiency",
    "inf2-50-percent-perf-per-watt",
)


@functools.cache
def report() -> ClaimsReport:
    return check_claims(list(ENERGY))


def claim(claim_id: str) -> ClaimResult:
    return next(c for c in report().claims if c.id == claim_id)


def test_generation_claims_are_graded_on_work_per_joule_with_their_power_sources() -> None:
    for claim_id in ENERGY[:3]:
        c = claim(claim_id)
        assert c.verdict in ("supported", "partly", "not supported"), claim_id
        graded = [f for f in c.figures if f.grade is not None]
        assert graded and all(f.value is not None and f.value > 0 for f in graded)
        notes = " ".join(c.assumptions)
        assert "THIRD-PARTY ESTIMATE" in notes and "TDP ranges" in notes
    # One comparison, two claimed figures: the same computed ratios graded against 4x and 1.4x.
    four, forty = claim("trn3-4x-energy-efficiency"), claim("trn3-40-percent-energy-efficiency")
    assert [f.value for f in four.figures] == [f.value for f in forty.figures]
    assert any("cannot both" in a for a in four.assumptions)


def test_inferentia2_perf_per_watt_gives_the_chip_power_at_which_it_holds() -> None:
    c = claim("inf2-50-percent-perf-per-watt")
    assert c.verdict == "cannot check"
    assert "published nowhere" in c.reason and "holds if" in c.computed and " W " in c.computed
    watts = float(c.computed.split("at most ")[1].split(" W")[0].replace(",", ""))
    assert 10 < watts < 1000
