"""What the plan's model expects at the load a window actually ran at.

A plan is made for a batch (the best the deployment can hold); production at night runs a few
requests at a time, and its tokens come faster than the full-batch plan. Judging that window against
the plan calls it "faster than plan" when the engine runs exactly as the model predicts for that load.
So each window gets the estimate again, with the same model, layout, engine and calibration as the
plan, at the window's own concurrency and request lengths, and drift is judged against that. The
calibration is the plan's own: the `--calibration` file and the user overlay its estimate recorded in
`settings` (a plan made with a pilot's overlay is judged with it, not with the shipped parameters); a
file that is gone since gives no expectation rather than one from other parameters.
"""

from __future__ import annotations

from functools import lru_cache

from silica.errors import SilicaError
from silica.monitor.plan import Planned

__all__ = ["expected_at"]


def expected_at(
    plan: Planned, concurrency: float, input_len: float, output_len: float
) -> tuple[float | None, float | None]:
    """(TTFT ms, TPOT ms) the plan's model expects at this load; (None, None) when it cannot say."""
    if not plan.model or plan.tp is None or concurrency <= 0 or input_len < 1 or output_len < 1:
        return None, None
    return _estimate(plan.model, plan.instance, plan.tp, plan.engine, max(1, round(concurrency)),
                     round(input_len), round(output_len), plan.calibration,
                     plan.calibration_overlay)  # fmt: skip


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
) -> tuple[float | None, float | None]:
    from pathlib import Path

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
