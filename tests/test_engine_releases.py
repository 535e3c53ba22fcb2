"""Engine releases (`--engine NAME@VERSION`): a release takes the stack of the release range that holds
it; one with rows in the calibration set gets that stack's fit and band, any other the fit of its
range's measured releases and a band widened as an inherited family's."""

from __future__ import annotations

import pytest

from silica.errors import InputError
from silica.perf.calibration import INHERITED_BAND_WIDENING
from silica.perf.stacks import resolve_stack
from silica.plan.targets import band, resolve_targets


def _stack(name: str):  # type: ignore[no-untyped-def]
    return resolve_stack(name, "nvidia", "inference", "p5.48xlarge")


def test_a_release_takes_the_stack_of_its_range() -> None:
    old = _stack("trtllm@0.6.1")
    assert old.name == "trtllm-legacy" and not old.unmeasured_release  # v0.6.1 rows are in the set
    assert _stack("trtllm@0.8").name == "trtllm-legacy"  # before 0.10's host-overhead rework
    new = _stack("trtllm@0.12")
    assert new.name == "trtllm" and new.unmeasured_release
    assert "0.17" in new.release_note and "no measurements of this release" in new.release_note
    assert not _stack("trtllm@v1.0.0").unmeasured_release
    # vLLM before 0.6 is measured (0.2-0.4 rows, fitted apart); 0.6 on has no rows: said, and widened.
    legacy = _stack("vllm@0.3")
    assert legacy.name == "vllm-legacy" and not legacy.unmeasured_release
    assert _stack("vllm@0.5").name == "vllm-legacy" and _stack("vllm@0.5").unmeasured_release
    modern = _stack("vllm@0.8")
    assert modern.name == "vllm" and modern.unmeasured_release


def test_an_unmeasured_release_has_a_wider_band_around_the_same_estimate() -> None:
    [measured] = resolve_targets(["p5.48xlarge"], engine="trtllm@1.0")
    [unmeasured] = resolve_targets(["p5.48xlarge"], engine="trtllm@0.12")
    assert measured.params == unmeasured.params  # the nearest measured releases' fit
    a, b = band(measured, "tpot_ms", 10.0), band(unmeasured, "tpot_ms", 10.0)
    assert a is not None and b is not None
    assert b.high > a.high and b.low <= a.low
    _, high = measured.calibration.band(measured.chip.family, "tpot_ms")
    assert b.high == pytest.approx(10.0 * high**INHERITED_BAND_WIDENING)
    assert "release 0.12" in unmeasured.note and "band widened" in unmeasured.note


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("trtllm@abc", "is not a release number"),
        ("trtllm@0.1", "older than the first release"),
        ("nemo@24.03", "has no release table"),
    ],
)
def test_bad_releases_are_refused_in_one_line(name: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        resolve_stack(name, "nvidia", "training" if name.startswith("nemo") else "inference", "p5.48xlarge")
