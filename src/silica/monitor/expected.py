"""What the plan's model expects at the load a window actually ran at.

A plan is made for a batch (the best the deployment can hold); production at night runs a few
requests at a time, and its tokens come faster than the full-batch plan. Judging that window against
the plan calls it "faster than plan" when the engine runs exactly as the model predicts for that load.
So each window gets the estimate again, with the same model, layout, engine and calibration as the
plan, at the window's own concurrency and request lengths, and drift is judged against that. The
calibration is the plan's own: the `--calibration` file and the user overlay its estimate recorded in
`settings` (a plan made with a pilot's overlay is judged with it, not with the shipped parameters); a
file that is gone since gives no expectation rather than one from other parameters.

The TTFT the monitor reads is the engine's own histogram (vLLM, SGLang, TGI, TensorRT-LLM export it
from the engine side: its clock starts when the front end has the request), while a pilot's overlay
is fitted to the client's TTFT, which also holds the HTTP front end, tokenising and streaming. Where
the overlay carries the pilot's measured front end (client minus engine TTFT p50 per step,
`silica.pilot.calibrate.front_end`), the expectation is the model's TTFT minus that time at the
nearest measured load, and the window is judged on its p50 (the model is fitted to the client's
p50s; the engine's p50 is interpolated in the same buckets on both sides); where it does not, the expectation stays the client-side one and the window
says so.
"""

from __future__ import annotations

import math
import statistics
from functools import lru_cache
from pathlib import Path
from typing import Any

from silica.errors import SilicaError
from silica.monitor.plan import Planned

__all__ = ["engine_side_front_end", "expected_at"]


def expected_at(
    plan: Planned, concurrency: float, input_len: float, output_len: float
) -> tuple[float | None, float | None]:
    """(TTFT ms, TPOT ms) the plan's model expects at this load; (None, None) when it cannot say."""
    if not plan.model or plan.tp is None or concurrency <= 0 or input_len < 1 or output_len < 1:
        return None, None
    return _estimate(plan.model, plan.instance, plan.tp, plan.engine, max(1, round(concurrency)),
                     round(input_len), round(output_len), plan.calibration,
                     plan.calibration_overlay, _mtime(plan.calibration_overlay))  # fmt: skip


def _mtime(path: str | None) -> float | None:
    """The overlay file's modification time, part of the cache key: an overlay rewritten in place
    (a new `calibrate --from-pilot`) must not be answered from the old one's estimates."""
    try:
        return Path(path).stat().st_mtime_ns / 1e9 if path else None
    except OSError:
        return None


@lru_cache(maxsize=1024)
def _estimate(
    model: str,
    instance: str,
    tp: int,
    engine: str | None,
    batch: int,
    input_len: int,
    output_len: int,
    calibration: str | None = None,
    overlay: str | None = None,
    overlay_mtime: float | None = None,  # the cache key only
) -> tuple[float | None, float | None]:
    from silica.perf.calibration import load_calibration
    from silica.perf.overlay import with_user_overlay
    from silica.plan import estimate
    from silica.results import InferenceEstimate
    from silica.workload import Deployment, InferenceWorkload

    try:
        cal = load_calibration(Path(calibration) if calibration else None)
        if overlay:
            if not Path(overlay).is_file():
                return None, None
            cal = with_user_overlay(cal, Path(overlay))
        e = estimate(
            model,
            InferenceWorkload(input_len=input_len, output_len=output_len, batch=batch),
            Deployment(instance=instance, tp=tp),
            engine=engine,
            calibration=cal,
        )
    except SilicaError:  # a model or instance this install does not know: no expectation, not a crash
        return None, None
    if not isinstance(e, InferenceEstimate) or not e.feasible:
        return None, None
    return e.ttft_ms, e.tpot_ms


def engine_side_front_end(plan: Planned, concurrency: float | None) -> tuple[float | None, str | None]:
    """(ms to take off the model's TTFT, what the window says about it) for an engine-side TTFT.

    The front end is the median of the pilot's steps at the measured concurrency nearest the window's
    (on a log scale: it grows with the load on a busy host), with the spread over all steps named.
    (None, note) when the plan's overlay has no engine-side measurement; (None, None) without an
    overlay (the shipped calibration predicts the forward passes only, no per-request time).
    """
    entry = _overlay_entry(plan)
    if entry is None:
        return None, None
    if entry.get("ttft_side") == "engine":  # `calibrate --from-monitor`: fitted on engine-side p50s
        return 0.0, (
            "engine-side TTFT: the overlay was fitted on the engine's own TTFT histograms (production "
            "windows), so no front end is taken off; judged on the window's p50 as the fit's p50s"
        )
    fe = entry.get("front_end")
    steps = [s for s in (fe or {}).get("steps", []) if _positive(s.get("concurrency"))]
    values = [s.get("front_end_p50_ms") for s in steps]
    if not steps or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None, (
            "client-side TTFT expectation: the overlay has no engine-side measurement of the front end "
            "(a pilot without the engine's TTFT histogram), so the engine's histogram runs below it by "
            "the time outside the engine"
        )
    p50s = [float(v) for v in values if v is not None]
    load = max(concurrency or 1.0, 1.0)
    distance = [abs(math.log(float(s["concurrency"]) / load)) for s in steps]
    nearest = [i for i, d in enumerate(distance) if d <= min(distance) + 1e-9]
    at = sorted({int(steps[i]["concurrency"]) for i in nearest})
    ms = statistics.median(p50s[i] for i in nearest)
    return ms, (
        f"engine-side TTFT: model minus the pilot's measured front end {ms:.2f} ms (client minus engine "
        f"TTFT p50 at concurrency {', '.join(map(str, at))}, median of {len(nearest)} step(s); "
        f"{min(p50s):.2f}-{max(p50s):.2f} ms over all {len(p50s)}), judged on the window's p50 as the "
        "model is fitted to p50s"
    )


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _overlay_entry(plan: Planned) -> dict[str, Any] | None:
    """The overlay entry the plan's estimate applied (its family and engine), or None."""
    if not plan.calibration_overlay or not plan.engine:
        return None
    from silica.perf.overlay import read_overlay

    try:
        entries = read_overlay(Path(plan.calibration_overlay))
    except SilicaError:
        return None
    for e in entries:
        if e.get("family") == plan.family and e.get("engine") == plan.engine:
            return e
    return None
