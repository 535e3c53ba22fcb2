"""`silica calibrate --from-pilot`: move a family's physical parameters toward a user's pilot.

Decode time per token (TPOT) is set by the weight and KV stream and the per-layer overhead, so one
factor scales memory efficiency down and overhead up together; time to first token is set by
compute efficiency. Each factor is chosen on a log grid to minimise the squared log error of the
library's own `estimate` over the measured steps, with every parameter clipped to `PARAM_BOUNDS`.

A parameter moves only where the data identify it: before fitting, each one is doubled and halved
and the prediction of the metric it is fitted to is compared at the measured steps. If that metric
moves less than `MIN_SENSITIVITY` (5 %) either way, the measurement cannot tell the parameter's
value, and fitting it would only push it to whichever bound absorbs some other error (a short
prompt's TTFT is weight streaming and per-layer time, not compute). The entry says, per parameter,
whether it moved and why.

A served request also pays a fixed time outside the forward passes before its first token (the front
end's HTTP handling and tokenisation, admission, streaming the token: `request_overhead_us`). It is
an intercept, not a scale: doubling or halving it from zero says nothing, so its check runs at the
value the TTFT at the lightest step suggests (what the model's prefill and decode step leave
unexplained there); a residual too small to move TTFT 5 % leaves it unidentified. It is fitted at
the lightest step only: at higher concurrency TTFT also holds the wait for the running step and the
interference of prompts that arrive together, which the model does not predict and an intercept
fitted there would absorb. At the one prompt length a pilot measures, a fixed time and a prefill rate
cannot be told apart, so where `compute_eff_max` is identified the intercept is left alone. Steps where the engine kept requests waiting (its own
`/metrics`, scraped during the step) are left out and named: their batch is not their concurrency and
their TTFT is queue time. The overlay stores those parameters and where they came from, never the
measured figures.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from silica.errors import DataFileError, InputError
from silica.perf.calibration import (
    PARAM_BOUNDS,
    UNMEASURED_BAND,
    Calibration,
    FamilyParams,
    load_calibration,
)
from silica.perf.overlay import OVERLAY_SCHEMA, overlay_path, read_overlay, without_user_overlay
from silica.pilot.kit import estimate_step
from silica.pilot.loadplan import Deployed, LoadPlan

__all__ = ["OverlayEntry", "fit_from_pilot", "front_end", "write_overlay"]

_GRID = [10 ** (i / 10) for i in range(-15, 16)]  # factors 0.03 .. 31.6, ten a decade
MIN_SENSITIVITY = 0.05  # least relative change of the fitted metric when a parameter doubles or halves
_WIDE = [10 ** (i / 10) for i in range(-20, 31)]  # 0.01 .. 1000: a fixed time can be far off
_FINE = [10 ** (i / 40) for i in range(-80, 121)]  # the same span, forty a decade (no estimate per point)

OverlayEntry = dict[str, Any]


def _clip(name: str, value: float) -> float:
    lo, hi = PARAM_BOUNDS[name]
    return min(max(value, lo), hi)


Load = tuple[int, int]  # (concurrency, prompt tokens) of a measured step


def _predict(
    dep: Deployed, plan: LoadPlan, cal: Calibration, load: Load
) -> tuple[float | None, float | None]:
    e = estimate_step(dep.model, dep, plan, load[0], cal, load[1])
    return e.ttft_ms, e.tpot_ms


def _name(load: Load, plan: LoadPlan) -> str:
    c, n = load
    return f"concurrency {c}" + (f" (prompt {n} tokens)" if n != plan.input_len else "")


def _loss(pairs: list[tuple[float, float | None]]) -> float:
    return sum(math.log(m / p) ** 2 if p and p > 0 else 1e9 for m, p in pairs)


# The overlay's own band (p10-p90 of measured / predicted), from the fit's residuals: the published
# family's band describes published rows on other servers, not the user's own server under this fit.
MIN_BAND_HALF = math.log(1.10)  # never narrower than +-10%: a few steps that agree claim no more
MAX_BAND_HALF = math.log(10.0)  # beyond 10x either way the fit does not describe the server; said so
# One-sided 90% quantile of Student's t by degrees of freedom (any statistics table); beyond 30, z.
_T90 = (3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397, 1.383, 1.372, 1.363, 1.356, 1.350, 1.345,
        1.341, 1.337, 1.333, 1.330, 1.328, 1.325, 1.323, 1.321, 1.319, 1.318, 1.316, 1.315, 1.314, 1.313,
        1.311, 1.310)  # fmt: skip


def residual_band(ratios: list[float], fitted: int) -> tuple[tuple[float, float], str]:
    """p10-p90 of measured / predicted for a new load, from a fit's ratios at its steps, and how.

    The log ratios' spread about the fitted model (`fitted` parameters used up degrees of freedom)
    gives a prediction interval for one new step: +- t(0.9, n - k) x s x sqrt(1 + 1/n), so few steps
    widen it, and it is never narrower than `MIN_BAND_HALF` nor wider than `MAX_BAND_HALF`. With no degree of freedom left (as many
    parameters as steps) the steps say nothing of the spread, and the band is the deliberately wide
    `UNMEASURED_BAND`. The caller clips the band at physics (`perf.calibration.clip_band`) as every
    band is.
    """
    n = len(ratios)
    df = n - fitted
    if df < 1:
        lo, hi = UNMEASURED_BAND
        return (lo, hi), (
            f"{n} step(s) for {fitted} fitted parameter(s): no spread measured, so {lo:g}-{hi:g}x (unmeasured)"
        )
    logs = [math.log(r) for r in ratios]
    s = math.sqrt(sum(x * x for x in logs) / df)
    t = _T90[df - 1] if df <= len(_T90) else 1.2816
    half = max(MIN_BAND_HALF, t * s * math.sqrt(1 + 1 / n))
    capped = (
        "; cut at 10x either way: the fitted model does not describe this server"
        if half > MAX_BAND_HALF
        else ""
    )
    half = min(half, MAX_BAND_HALF)
    return (math.exp(-half), math.exp(half)), (
        f"{n} steps, {fitted} fitted: measured/predicted "
        + ", ".join(f"{r:.3g}" for r in ratios)
        + f"; +-t(0.9, {df}) x {s:.3f} x sqrt(1 + 1/{n}), at least +-{math.exp(MIN_BAND_HALF) - 1:.0%}"
        + capped
    )


QUEUED = 0.5  # mean requests waiting in the engine above which a step measured its queue, not its batch


def _left_out(step: dict[str, Any], max_batch: int) -> str | None:
    """Why a step cannot calibrate the model, or None. A step whose engine kept requests waiting (the
    engine's own gauge, scraped during the step) ran a batch smaller than its concurrency, and its TTFT
    holds queue time the model does not predict: an open-loop rate past capacity, or a closed-loop
    step above the engine's max batch."""
    c = step.get("concurrency")
    label = (
        f"rate {step['rate']:g}/s" if step.get("mode") == "open" and step.get("rate") else f"concurrency {c}"
    )
    waiting = (step.get("engine") or {}).get("waiting_mean")
    if isinstance(waiting, int | float) and waiting > QUEUED:
        return (
            f"{label}: {waiting:.1f} requests waited on average (queueing, not the batch the model predicts)"
        )
    if isinstance(c, int) and c > max_batch:
        return f"{label}: above the engine's max batch {max_batch} (the rest queue)"
    return None


def _measured(
    result: dict[str, Any], metric: str, max_batch: int, input_len: int
) -> list[tuple[Load, float]]:
    out = []
    for s in result.get("steps", []):
        value = (s.get(metric) or {}).get("p50")
        if (
            isinstance(value, int | float)
            and value > 0
            and s.get("completed")
            and not _left_out(s, max_batch)
        ):
            out.append(((int(s["concurrency"]), int(s.get("input_len") or input_len)), float(value)))
    return out


MIN_FIRST_TOKENS = 10  # fewest first tokens in the engine's histogram for a step's mean to count


def front_end(result: dict[str, Any], max_batch: int, input_len: int) -> dict[str, Any] | None:
    """The time outside the engine before the first token, per step: the client's mean TTFT minus the
    engine's own (its TTFT histogram's increase over the step), where the pilot kept both.

    The model is fitted to the client's TTFT, which holds the HTTP front end, tokenising and streaming;
    an engine's TTFT histogram starts when its front end has the request. The monitor reads the
    engine's histogram, so it takes this time off the model's TTFT to compare like with like. Means,
    for the time outside (the difference of the means is the mean time outside); the difference of the
    p50s too (`front_end_p50_ms`), since the model is fitted to p50s and the monitor judges an
    engine-side TTFT on the window's p50, interpolated in the same buckets as the pilot's engine p50
    (so the buckets' coarseness largely cancels). Steps left out of the fit, and steps with fewer than `MIN_FIRST_TOKENS` first
    tokens in the engine's histogram, are not used. None when no step has both.
    """
    from silica.pilot.compare import ttft_split

    steps = []
    for s in result.get("steps", []):
        if not s.get("completed") or _left_out(s, max_batch):
            continue
        for split in ttft_split([s]):
            if split.outside_engine_ms is None or split.client_mean_ms is None:
                continue
            if split.engine_requests < MIN_FIRST_TOKENS:
                continue
            step = {
                "concurrency": split.concurrency,
                "input_len": int(s.get("input_len") or input_len),
                "client_ttft_mean_ms": round(split.client_mean_ms, 3),
                "engine_ttft_mean_ms": round(split.engine_mean_ms, 3),
                "front_end_ms": round(split.outside_engine_ms, 3),
            }
            if split.client_p50_ms is not None and split.engine_p50_ms is not None:
                step["front_end_p50_ms"] = round(split.client_p50_ms - split.engine_p50_ms, 3)
            steps.append(step)
    if not steps:
        return None
    values = [s["front_end_ms"] for s in steps]
    p50s = [s["front_end_p50_ms"] for s in steps if "front_end_p50_ms" in s]
    out: dict[str, Any] = {
        "what": "client TTFT minus the engine's own per step: difference of the means (front_end_ms) and of the p50s",
        "steps": steps,
        "median_ms": round(statistics.median(values), 3),
        "spread_ms": [round(min(values), 3), round(max(values), 3)],
    }
    if p50s:
        out["median_p50_ms"] = round(statistics.median(p50s), 3)
        out["spread_p50_ms"] = [round(min(p50s), 3), round(max(p50s), 3)]
    return out


def fit_from_pilot(result: dict[str, Any], source: str, base: Calibration | None = None) -> OverlayEntry:
    """Fitted parameters for the pilot's (family, engine), within bounds, with their provenance."""
    try:
        plan = LoadPlan.from_dict(result["plan"], source)
    except (KeyError, TypeError) as err:
        raise DataFileError(
            f"{source} is not a `silica pilot run` result.", "pass the JSON it wrote."
        ) from err
    dep = plan.deployed
    if dep is None:
        raise InputError(
            f"{source} was run without a kit, so Silica does not know the chip and layout it measured.",
            "run `silica pilot run --plan KIT_DIR` with the kit from `silica pilot plan`.",
        )
    tpot = _measured(result, "tpot_ms", dep.max_batch, plan.input_len)
    ttft = _measured(result, "ttft_ms", dep.max_batch, plan.input_len)
    left_out = [r for s in result.get("steps", []) if (r := _left_out(s, dep.max_batch))]
    if not tpot and not ttft:
        raise InputError(f"{source} has no completed step to calibrate on.", "run the pilot again.")
    cal = without_user_overlay(base or load_calibration())  # refit from the shipped parameters
    start = cal.resolve(dep.family, dep.engine).params

    def moved(p: FamilyParams, **scale: float) -> FamilyParams:
        return replace(p, **{k: _clip(k, getattr(p, k) * f) for k, f in scale.items()})

    def loss(p: FamilyParams, which: int, rows: list[tuple[Load, float]]) -> float:
        trial = cal.with_params(dep.family, p)
        return _loss([(m, _predict(dep, plan, trial, c)[which]) for c, m in rows])

    def sensitivity(name: str, which: int, rows: list[tuple[Load, float]], at: float | None = None) -> float:
        """Largest relative change of the predicted metric at the measured steps when `name` doubles
        or halves (within its bounds), from its shipped value or from `at`."""
        origin = start if at is None else replace(start, **{name: at})
        base = [_predict(dep, plan, cal.with_params(dep.family, origin), c)[which] for c, _ in rows]
        worst = 0.0
        for f in (2.0, 0.5):
            trial = cal.with_params(dep.family, moved(origin, **{name: f}))
            for (c, _), b0 in zip(rows, base, strict=True):
                b1 = _predict(dep, plan, trial, c)[which]
                if b0 and b1:
                    worst = max(worst, abs(b1 / b0 - 1))
        return worst

    def unexplained_us(p: FamilyParams, rows: list[tuple[Load, float]]) -> float:
        """Median TTFT (µs, at least 0) the model without a per-request time leaves unexplained."""
        trial = cal.with_params(dep.family, replace(p, request_overhead_us=0.0))
        gaps = [m - (_predict(dep, plan, trial, c)[0] or math.inf) for c, m in rows]
        return max(statistics.median(gaps), 0.0) * 1e3

    lightest = [(c, m) for c, m in ttft if c[0] == min(c[0] for c, _ in ttft)]
    lengths = len({c[1] for c, _ in lightest})  # prompt lengths at the lightest load (a sweep: several)
    metric_of = {
        "memory_eff": (1, tpot),
        "layer_overhead_us": (1, tpot),
        "sequence_overhead_us": (1, tpot),
        "compute_eff_max": (0, ttft),
        "request_overhead_us": (0, lightest),
    }

    def fit_slope(p: FamilyParams, rows: list[tuple[Load, float]], names: set[str]) -> FamilyParams:
        """The per-layer time (when free) and the per-sequence time jointly, on TPOT: both add to the
        step time linearly, so three predictions per step give the whole surface and a log grid over
        both needs no further estimate."""
        base = [_predict(dep, plan, cal.with_params(dep.family, p), c)[1] or math.inf for c, _ in rows]
        slopes = {}
        for name in ("layer_overhead_us", "sequence_overhead_us"):
            bumped = cal.with_params(dep.family, replace(p, **{name: 2 * getattr(p, name)}))
            slopes[name] = [
                ((_predict(dep, plan, bumped, c)[1] or math.inf) - b0) / getattr(p, name)
                for (c, _), b0 in zip(rows, base, strict=True)
            ]
        layer0, seq0 = p.layer_overhead_us, p.sequence_overhead_us
        layers = (
            [_clip("layer_overhead_us", layer0 * f) for f in _FINE]
            if "layer_overhead_us" in names
            else [layer0]
        )
        best_pair, best_loss = (layer0, seq0), math.inf
        for seq in (_clip("sequence_overhead_us", seq0 * f) for f in _FINE):
            for layer in layers:
                trial = [
                    (m, b0 + dl * (layer - layer0) + ds * (seq - seq0))
                    for (_, m), b0, dl, ds in zip(
                        rows, base, slopes["layer_overhead_us"], slopes["sequence_overhead_us"], strict=True
                    )
                ]
                if (err := _loss(trial)) < best_loss:
                    best_pair, best_loss = (layer, seq), err
        return replace(p, layer_overhead_us=best_pair[0], sequence_overhead_us=best_pair[1])

    why: dict[str, str] = {}
    free: set[str] = set()
    for name, (which, rows) in metric_of.items():
        label = "TPOT" if which else "TTFT"
        if not rows:
            why[name] = f"not fitted: no {label} measured"
            continue
        at = None
        where = ""
        if (
            name == "sequence_overhead_us"
        ):  # a slope: it needs loads apart, and is checked where the data put it
            if len({c[0] for c, _ in rows}) < 2:
                why[name] = (
                    f"not identified: TPOT measured at one concurrency ({rows[0][0][0]}), and the time per "
                    "sequence is its slope over the batch; left at the shipped value"
                )
                continue
            at = max(start.sequence_overhead_us, fit_slope(start, rows, {name}).sequence_overhead_us)
            where = f" from {at:.3g} µs (the slope of the measured TPOT over concurrency)"
        if name == "request_overhead_us":  # an intercept: checked at the value the lightest step suggests
            at = max(start.request_overhead_us, unexplained_us(start, rows))
            where = (
                f" from {at / 1e3:.3g} ms (the TTFT at concurrency {rows[0][0][0]} that the shipped parameters"
                " leave unexplained)"
            )
        sens = sensitivity(name, which, rows, at)
        if sens < MIN_SENSITIVITY:
            why[name] = (
                f"not identified: the predicted {label} at the measured steps changes {sens:.1%} when it "
                f"doubles or halves{where} (under {MIN_SENSITIVITY:.0%}); left at the shipped value"
            )
        else:
            free.add(name)
            why[name] = f"{label} changes up to {sens:.0%} when it doubles or halves{where}"
    # A prompt-length sweep at the lightest load tells a prefill rate (TTFT's slope over the prompt)
    # from a fixed time per request (its intercept): both are then fitted together, there.
    joint = {"compute_eff_max", "request_overhead_us"} <= free and lengths >= 2
    if joint:
        why["request_overhead_us"] += (
            f"; fitted with compute_eff_max on the {lengths} prompt lengths at concurrency {lightest[0][0][0]}"
        )
    elif {"compute_eff_max", "request_overhead_us"} <= free:
        free.discard("request_overhead_us")
        why["request_overhead_us"] += (
            "; but confounded with compute_eff_max: at the pilot's one prompt length a fixed time per "
            "request and a prefill rate cannot be told apart; left at the shipped value"
        )

    best = start
    if tpot and free & {"memory_eff", "layer_overhead_us"}:
        if {"memory_eff", "layer_overhead_us"} <= free:
            # slower decode: less of the HBM bandwidth reached, more fixed time per layer
            best = min(
                (moved(best, memory_eff=1 / f, layer_overhead_us=f) for f in _GRID),
                key=lambda p: loss(p, 1, tpot),
            )
        elif "memory_eff" in free:
            best = min((moved(best, memory_eff=1 / f) for f in _WIDE), key=lambda p: loss(p, 1, tpot))
        if "layer_overhead_us" in free:  # the fixed time alone, for what the bandwidth bound could not take
            best = min((moved(best, layer_overhead_us=f) for f in _WIDE), key=lambda p: loss(p, 1, tpot))
    if tpot and "sequence_overhead_us" in free:  # what grows with the batch, with the fixed time per step
        best = fit_slope(best, tpot, free & {"layer_overhead_us", "sequence_overhead_us"})
    if joint:  # the prefill rate and the fixed time together, on the sweep at the lightest load

        def with_intercept(p: FamilyParams) -> FamilyParams:
            return replace(p, request_overhead_us=_clip("request_overhead_us", unexplained_us(p, lightest)))

        best = min(
            (with_intercept(moved(best, compute_eff_max=1 / f)) for f in _FINE if 0.1 <= f <= 10),
            key=lambda p: loss(p, 0, lightest),
        )
        best = min(  # and a tenth of that grid's step around its best: the intercept is sensitive to it
            (with_intercept(moved(best, compute_eff_max=10 ** (i / 400))) for i in range(-10, 11)),
            key=lambda p: loss(p, 0, lightest),
        )
    elif ttft and "compute_eff_max" in free:  # slower prefill: less of the peak compute reached
        best = min((moved(best, compute_eff_max=1 / f) for f in _WIDE), key=lambda p: loss(p, 0, ttft))
    if (
        "request_overhead_us" in free and not joint
    ):  # what the fitted prefill and decode step leave at the lightest step
        best = replace(best, request_overhead_us=_clip("request_overhead_us", unexplained_us(best, lightest)))
    changed = {k: round(getattr(best, k), 6) for k in metric_of if getattr(best, k) != getattr(start, k)}
    at_bound = sorted(k for k, v in changed.items() if v in PARAM_BOUNDS[k])
    for k in free - set(changed):
        why[k] += "; the fit kept the shipped value"
    for k in changed:
        why[k] += f"; fitted {getattr(start, k):.4g} -> {changed[k]:.4g}"
    # The overlay's own band per metric, from how the fitted model meets the steps each metric was
    # fitted on: TPOT at every kept step; TTFT at every kept step when compute is fitted, else at the
    # lightest (the request time is read there, and at higher concurrency TTFT holds waits the model
    # does not predict: those steps' ratios are named in the note, not folded into the band).
    final = cal.with_params(dep.family, best)
    bands: dict[str, list[float]] = {}
    band_notes: dict[str, str] = {}
    for metric, which, rows, names in (
        ("tpot_ms", 1, tpot, {"memory_eff", "layer_overhead_us", "sequence_overhead_us"}),
        ("ttft_ms", 0, ttft if "compute_eff_max" in free and not joint else lightest,
         {"compute_eff_max", "request_overhead_us"}),
    ):  # fmt: skip
        ratios = [m / p for c, m in rows if (p := _predict(dep, plan, final, c)[which])]
        if not ratios:
            continue
        (lo, hi), band_notes[metric] = residual_band(ratios, len(free & names))
        bands[metric] = [float(f"{lo:.4g}"), float(f"{hi:.4g}")]
        others = [
            (c, m / p)
            for c, m in ttft
            if which == 0 and (c, m) not in rows and (p := _predict(dep, plan, final, c)[0])
        ]
        if others:
            band_notes[metric] += "; not in it: " + ", ".join(
                f"{_name(c, plan)} ran {r:.2f}x" for c, r in others
            )
    when = datetime.now(UTC).date().isoformat()
    label = f"user calibration overlay ({dep.engine}, from a pilot of {dep.model} on {dep.instance}, {when})"
    return {
        "family": dep.family,
        "engine": dep.engine,
        "params": changed,
        "shipped": {k: getattr(start, k) for k in changed},
        "at_bound": at_bound,
        "why": why,
        "bands": bands,
        "band_notes": band_notes,
        "label": label,
        "source": source,
        **({"front_end": fe} if (fe := front_end(result, dep.max_batch, plan.input_len)) else {}),
        "fitted_on": {
            "steps": len({c for c, _ in tpot + ttft}),
            "prompt_lengths": sorted({c[1] for c, _ in tpot + ttft}),
            "metrics": ["tpot_ms p50", "ttft_ms p50"],
            "left_out": left_out,
        },
        "as_of": when,
    }


def write_overlay(entry: OverlayEntry, path: Path | None = None) -> Path:
    """Replace any entry for the same (family, engine) in the overlay file; keep the others."""
    target = path or overlay_path()
    entries = [
        e for e in read_overlay(target) if (e["family"], e["engine"]) != (entry["family"], entry["engine"])
    ]
    body = {"schema": OVERLAY_SCHEMA, "entries": [*entries, entry]}
    from silica._files import write_text

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DataFileError(f"Cannot write {target}: {err.strerror}.", "choose a writable --out.") from err
    write_text(target, json.dumps(body, indent=2) + "\n")  # atomic; in place for a device
    return target
