"""The engine-side TTFT expectation's front end, read from the plan's overlay: the pilot's measured
client-minus-engine TTFT p50 at the concurrency nearest the window's; a client-side expectation (and
the window says so) where the overlay has none; nothing taken off an overlay fitted on the engine's
own histograms (`calibrate --from-monitor`), nor without an overlay."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from silica.monitor.expected import engine_side_front_end
from silica.monitor.plan import Planned


def _plan(overlay: Path | None, engine: str | None = "vllm") -> Planned:
    names = [f.name for f in dataclasses.fields(Planned)]
    values: dict[str, Any] = dict.fromkeys(names)
    values.update(name="tiny", model="m", instance="g6e.xlarge", count=1, family="ada", source="test")
    values.update(engine=engine, calibration_overlay=str(overlay) if overlay else None)
    return Planned(**{k: v for k, v in values.items() if k in names})


def _overlay(tmp: Path, **entry: Any) -> Path:
    path = tmp / "overlay.json"
    body = {"family": "ada", "engine": "vllm", "params": {}, "label": "test", **entry}
    path.write_text(json.dumps({"schema": "silica.calibration_overlay/1", "entries": [body]}))
    return path


def _steps(*rows: tuple[int, float]) -> dict[str, Any]:
    return {"steps": [{"concurrency": c, "front_end_ms": 2 * v, "front_end_p50_ms": v} for c, v in rows]}


def test_the_front_end_is_the_median_at_the_nearest_measured_concurrency(tmp_path: Path) -> None:
    path = _overlay(tmp_path, front_end=_steps((1, 3.0), (1, 4.0), (1, 8.0), (4, 10.0), (8, 20.0)))
    ms, note = engine_side_front_end(_plan(path), 0.8)
    assert ms == pytest.approx(4.0) and note is not None
    assert note.startswith("engine-side TTFT: model minus the pilot's measured front end 4.00 ms")
    assert "at concurrency 1, median of 3 step(s); 3.00-20.00 ms over all 5" in note
    assert engine_side_front_end(_plan(path), 6.0)[0] == pytest.approx(20.0)  # log scale: 6 is nearer 8
    assert engine_side_front_end(_plan(path), 4.5)[0] == pytest.approx(10.0)


def test_an_overlay_without_an_engine_side_measurement_says_its_expectation_is_the_clients(
    tmp_path: Path,
) -> None:
    ms, note = engine_side_front_end(_plan(_overlay(tmp_path)), 1.0)
    assert ms is None and note is not None and note.startswith("client-side TTFT expectation")


def test_an_overlay_fitted_on_engine_histograms_takes_nothing_off(tmp_path: Path) -> None:
    ms, note = engine_side_front_end(_plan(_overlay(tmp_path, ttft_side="engine")), 1.0)
    assert ms == 0.0 and note is not None and "fitted on the engine's own TTFT histograms" in note


def test_no_overlay_or_another_engine_leaves_the_expectation_as_it_was(tmp_path: Path) -> None:
    path = _overlay(tmp_path, front_end=_steps((1, 3.0)))
    assert engine_side_front_end(_plan(None), 1.0) == (None, None)
    assert engine_side_front_end(_plan(path, engine="sglang"), 1.0) == (None, None)
