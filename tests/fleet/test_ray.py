"""The sweep on a real local Ray cluster (marked `ray`: run alone with `pytest -m ray`).

Kept small (4 scenarios of a two-day fleet) because starting Ray dominates: about 5-10 s. Without Ray
installed these tests skip, except where the environment variable CI is set: there a missing Ray
is a failure, so a CI image that lost the `ray` extra cannot pass by skipping them.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from silica.cli.app import app
from silica.fleet import run_sweep

from .test_cli import SWEEP, fake_store, one_line_error


def require_ray() -> Any:
    """The ray module; a skip without it, or a failure when CI is set."""
    try:
        import ray
    except ImportError:
        message = "the Ray sweep tests need `pip install ray` (the `ray` extra)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but Ray is not installed: {message}")
        pytest.skip(message)
    return ray


def test_a_missing_ray_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set but Ray is not installed"):
        require_ray()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        require_ray()


@pytest.mark.ray
def test_sweep_on_a_real_local_ray_matches_the_local_executor(
    small_fleet: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    require_ray()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # no cluster: Ray starts a local one
    batches = fake_store(monkeypatch)
    path = small_fleet(extra=SWEEP)
    local = run_sweep(path, policies=["day_night"], executor="local", workers=1, store=False)
    # Ray workers get the resolved fleets, never the file: remove it once the sweep is planned.
    on_ray = run_sweep(
        path, policies=["day_night"], executor="ray", workers=2, on_start=lambda _: path.unlink()
    )
    assert on_ray.executor == "ray" and len(on_ray.scenarios) == 4
    assert [s["name"] for s in on_ray.scenarios] == [s["name"] for s in local.scenarios]
    for a, b in zip(on_ray.scenarios, local.scenarios, strict=True):
        assert a["metrics"] == b["metrics"]  # same code, same numbers, wherever it runs
    assert len(batches) == 1 and [c[1] for c in batches[0]] == [s["name"] for s in on_ray.scenarios]


@pytest.mark.ray
def test_an_unreachable_ray_address_fails_fast_in_one_line(
    small_fleet: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    require_ray()
    monkeypatch.setenv(
        "RAY_ADDRESS", "127.0.0.1:1"
    )  # nothing listens there; ray.init would retry for minutes
    start = time.monotonic()
    result = CliRunner().invoke(
        app, ["fleet", "sweep", str(small_fleet(extra=SWEEP)), "--executor", "ray", "--no-store"]
    )
    one_line_error(result, "Cannot reach the Ray cluster at RAY_ADDRESS=127.0.0.1:1")
    assert time.monotonic() - start < 30
