"""The sweep on a real local Ray cluster (marked `ray`: run alone with `pytest -m ray`).

Kept small (4 scenarios of a two-day fleet) because starting Ray dominates: about 5-10 s.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from silica.fleet import run_sweep

from .test_cli import SWEEP, fake_store

pytest.importorskip("ray", reason="the Ray sweep test needs `pip install ray` (the `ray` extra)")


@pytest.mark.ray
def test_sweep_on_a_real_local_ray_matches_the_local_executor(
    small_fleet: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # no cluster: Ray starts a local one
    calls = fake_store(monkeypatch)
    path = small_fleet(extra=SWEEP)
    on_ray = run_sweep(path, policies=["day_night"], executor="ray", workers=2)
    local = run_sweep(path, policies=["day_night"], executor="local", workers=1, store=False)
    assert on_ray.executor == "ray" and len(on_ray.scenarios) == 4
    assert [s["name"] for s in on_ray.scenarios] == [s["name"] for s in local.scenarios]
    for a, b in zip(on_ray.scenarios, local.scenarios, strict=True):
        assert a["metrics"] == b["metrics"]  # same code, same numbers, wherever it runs
    assert [c[1] for c in calls] == [s["name"] for s in on_ray.scenarios]
