"""Shared fixtures for the fleet tests: a small fleet file, the public traces (when present)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "traces"  # ../shared/traces from the repository root


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ray: starts a real local Ray cluster (slow; about 10 s)")


@pytest.fixture
def traces() -> Path:
    """The public traces; tests that check Silica against them skip when the folder is absent."""
    if not TRACES.is_dir():
        pytest.skip(
            f"public traces not found at {TRACES} (they sit beside the repository in ../shared/traces)"
        )
    return TRACES


SMALL = """\
name: small
hours: {hours}
step_minutes: {step}
inference:
  model: llama-3.1-8b
  ttft_slo_ms: 1000
  tpot_slo_ms: 40
  demand:
    shape: diurnal
    peak_to_trough: 3.0
    input_len: 1000
    output_len: 200
    peak_output_tokens_per_s: {peak}
pools:
  - {{instance: trn1.32xlarge, count: {count}, purchase: reserved}}
training:
  restart_minutes: 10
  checkpoint_minutes: 30
  jobs:
    - {{name: big, chips: 384, hours: 12, deadline_hours: 46}}
    - {{name: ft, chips: 64, hours: 3, repeat: 8, every_hours: 5, deadline_hours: 12}}
    - {{name: eval, chips: 16, hours: 1, repeat: 10, every_hours: 4, deadline_hours: 3, checkpointable: false}}
policy: [static, day_night]
"""


@pytest.fixture
def small_fleet(tmp_path: Path) -> Callable[..., Path]:
    """Write a small one-pool fleet file (two days, 5-minute steps) and return its path."""

    def write(
        hours: float = 48, step: float = 5, peak: float = 1.0e5, count: int = 40, extra: str = ""
    ) -> Path:
        path = tmp_path / "fleet.yaml"
        path.write_text(SMALL.format(hours=hours, step=step, peak=peak, count=count) + extra)
        return path

    return write
