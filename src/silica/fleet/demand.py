"""Inference demand per simulation step, from a replayed trace or from a diurnal profile.

A fleet is sized on output tokens per second, step by step: the performance model gives each
replica's output tokens/s at the SLO for the demand's mean request shape, so demand and capacity meet
in the same unit. Two sources:

- replay: requests of a trace binned into steps (the one-hour Azure and Mooncake traces, bundled as
  per-minute counts, or any raw trace file);
- profile: a rate shape (ServeGen's 14 days, or a built-in cosine day with a weekend dip) scaled to a
  peak, optionally with minute-to-minute burstiness resampled from a real trace, because a smooth
  curve would flatter every policy.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from silica.cost import HOURS_PER_DAY
from silica.errors import InputError, UnknownNameError
from silica.fleet.derive import REQUEST_TRACES, SERVEGEN_MODELS
from silica.fleet.traces import RateShape, RequestTrace

__all__ = [
    "BUNDLED_SHAPES",
    "BUNDLED_TRACES",
    "InferenceDemand",
    "Lengths",
    "bundled_shape",
    "burst_factors",
    "diurnal_shape",
    "lengths_of",
    "profile",
    "replay",
    "replay_bundled",
    "shape_at",
]

FloatArray = NDArray[np.float64]
DATA_DIR = Path(__file__).resolve().parent / "data"
BUNDLED_SHAPES = tuple(f"servegen:{m}" for m in SERVEGEN_MODELS)
BUNDLED_TRACES = tuple(REQUEST_TRACES)
BURST_WINDOW_MIN = 15  # burstiness = a minute's requests over the centred 15-minute mean (trend removed)
DAY_S = 86400.0
MAX_BURST_DRAWS = 10_000_000


@dataclass(frozen=True, slots=True)
class InferenceDemand:
    """Request and token rates in each step of `step_s` seconds."""

    name: str
    source: str
    step_s: float
    requests_per_s: FloatArray
    input_tokens_per_s: FloatArray
    output_tokens_per_s: FloatArray
    notes: tuple[str, ...] = ()

    @property
    def steps(self) -> int:
        return len(self.requests_per_s)

    @property
    def mean_input_len(self) -> float:
        total = float(self.requests_per_s.sum())
        return float(self.input_tokens_per_s.sum()) / total if total > 0 else 0.0

    @property
    def mean_output_len(self) -> float:
        total = float(self.requests_per_s.sum())
        return float(self.output_tokens_per_s.sum()) / total if total > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        out = self.output_tokens_per_s
        return {
            "name": self.name,
            "source": self.source,
            "step_s": self.step_s,
            "steps": self.steps,
            "mean_input_len": self.mean_input_len,
            "mean_output_len": self.mean_output_len,
            "peak_output_tokens_per_s": float(out.max()),
            "mean_output_tokens_per_s": float(out.mean()),
            "peak_to_mean": float(out.max() / out.mean()) if out.mean() > 0 else None,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class Lengths:
    """The mean request shape the performance model is asked about."""

    input_len: float
    output_len: float
    source: str


@functools.cache
def _minutes() -> dict[str, tuple[FloatArray, FloatArray, FloatArray]]:
    rows: dict[str, list[tuple[float, float, float]]] = {}
    with (DATA_DIR / "request_minutes.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            rows.setdefault(row["trace"], []).append(
                (float(row["requests"]), float(row["input_tokens"]), float(row["output_tokens"]))
            )
    out = {}
    for name, values in rows.items():
        arr = np.asarray(values, dtype=np.float64)
        out[name] = (arr[:, 0], arr[:, 1], arr[:, 2])
    return out


def _bundled_trace(name: str) -> tuple[FloatArray, FloatArray, FloatArray]:
    minutes = _minutes()
    if name not in minutes:
        raise UnknownNameError("bundled trace", name, minutes, f"use one of {', '.join(minutes)}.")
    return minutes[name]


def lengths_of(name: str) -> Lengths:
    """Mean input and output tokens per request of a bundled one-hour trace."""
    req, inp, out = _bundled_trace(name)
    total = float(req.sum())
    return Lengths(float(inp.sum()) / total, float(out.sum()) / total, f"mean request of {name}")


def burst_factors(name: str) -> FloatArray:
    """Minute-to-minute load factors of a bundled trace: requests over the centred 15-minute mean.

    The last minute is partial and dropped. Factors are rescaled to mean 1 so resampling them onto a
    profile keeps its volume and adds only the trace's burstiness.
    """
    req = _bundled_trace(name)[0][:-1]
    kernel = np.ones(BURST_WINDOW_MIN)
    local = np.convolve(req, kernel, mode="same") / np.convolve(np.ones_like(req), kernel, mode="same")
    factors = np.divide(req, local, out=np.ones_like(req), where=local > 0)
    return np.asarray(factors / factors.mean(), dtype=np.float64)


@functools.cache
def _servegen() -> tuple[FloatArray, dict[str, FloatArray]]:
    with (DATA_DIR / "servegen_shapes.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        data = np.asarray([[float(c) for c in row] for row in reader], dtype=np.float64)
    return data[:, 0], {name: data[:, i] for i, name in enumerate(header) if i > 0}


def bundled_shape(name: str) -> RateShape:
    """ServeGen's 14-day request-rate shape of one model (servegen:m-large, m-mid or m-small)."""
    times, columns = _servegen()
    model = name.removeprefix("servegen:")
    if not name.startswith("servegen:") or model not in columns:
        raise UnknownNameError("demand shape", name, (*BUNDLED_SHAPES, "diurnal", "flat"))
    return RateShape(
        name,
        f"ServeGen {model} 10-minute aggregate rate, 14 days (bundled shape; Apache-2.0)",
        times,
        columns[model],
        600.0,
    )


def diurnal_shape(
    peak_to_trough: float = 2.0, peak_hour: float = 14.0, weekend_factor: float = 1.0
) -> RateShape:
    """A cosine day peaking at `peak_hour`, trough 12 hours later; days 5 and 6 scaled by `weekend_factor`.

    Day 0 is a Monday. The shape has no source: it is a stated assumption, named as such in reports.
    """
    if not peak_to_trough >= 1.0:
        raise InputError(f"peak_to_trough must be at least 1, got {peak_to_trough}.", "use e.g. 2.0.")
    if not 0.0 < weekend_factor <= 1.0:
        raise InputError(f"weekend_factor must be in (0, 1], got {weekend_factor}.", "use e.g. 0.8.")
    window = 600.0
    t = np.arange(0.0, 7 * DAY_S, window)
    hour = ((t + window / 2) % DAY_S) / 3600.0
    wave = 0.5 + 0.5 * np.cos(2 * math.pi * (hour - peak_hour) / HOURS_PER_DAY)
    trough = 1.0 / peak_to_trough
    rate = trough + (1.0 - trough) * wave
    weekday = (t // DAY_S).astype(np.int64) % 7
    rate = np.where(weekday >= 5, rate * weekend_factor, rate)
    source = f"built-in diurnal shape: peak/trough {peak_to_trough:g} at {peak_hour:g}h, weekend x{weekend_factor:g}"
    return RateShape("diurnal", source, t, rate / rate.max(), window)


def shape_at(shape: RateShape, t_s: FloatArray) -> FloatArray:
    """The relative rate at times `t_s`, interpolated between window centres; the shape repeats."""
    period = float(shape.t_s[-1] - shape.t_s[0] + shape.window_s)
    centres = shape.t_s - shape.t_s[0] + shape.window_s / 2
    return np.asarray(
        np.interp((t_s - shape.t_s[0]) % period, centres, shape.rate, period=period), dtype=np.float64
    )


def _burst_per_step(factors: FloatArray, steps: int, step_s: float, seed: int) -> FloatArray:
    """Resample minute factors onto steps; a step of k minutes averages k draws (sub-minute: shared)."""
    rng = np.random.default_rng(seed)
    per_step = max(1, round(step_s / 60.0))
    # Steps of many minutes average many draws, which only narrows the factor towards 1: past
    # MAX_BURST_DRAWS in all, fewer draws per step keep memory bounded (at 7 days of 1-minute or
    # 1 year of 1-hour steps the cap is not reached).
    per_step = min(per_step, max(1, MAX_BURST_DRAWS // max(1, steps)))
    if step_s >= 60.0:
        return np.asarray(rng.choice(factors, size=(steps, per_step)).mean(axis=1), dtype=np.float64)
    minute = (np.arange(steps) * step_s // 60.0).astype(np.int64)
    return np.asarray(rng.choice(factors, size=int(minute[-1]) + 1)[minute], dtype=np.float64)


def profile(
    shape: RateShape,
    *,
    steps: int,
    step_s: float,
    peak_requests_per_s: float,
    lengths: Lengths,
    burst: str | None = None,
    seed: int = 0,
    start_s: float = 0.0,
) -> InferenceDemand:
    """Requests/s = peak x shape(t) / max over the horizon [x a resampled burst factor].

    Each request has the mean lengths. The peak is the horizon's, so a week cut from a 14-day shape
    reaches the stated peak even if the shape's highest day lies outside it.
    """
    if not peak_requests_per_s > 0:
        raise InputError(f"The peak rate must be positive, got {peak_requests_per_s}.", "set a peak above 0.")
    t = start_s + (np.arange(steps, dtype=np.float64) + 0.5) * step_s
    relative = shape_at(shape, t)
    top = float(relative.max(initial=0.0))
    # The peak is the horizon's own (before burstiness), not the shape's over all its days.
    rate = peak_requests_per_s * (relative / top if top > 0 else relative)
    notes = [f"shape: {shape.source}", f"request lengths: {lengths.source}"]
    if burst is not None:
        rate = rate * _burst_per_step(burst_factors(burst), steps, step_s, seed)
        notes.append(f"minute-to-minute burstiness resampled from {burst} (seed {seed})")
    return InferenceDemand(
        name=shape.name,
        source=shape.source,
        step_s=step_s,
        requests_per_s=rate,
        input_tokens_per_s=rate * lengths.input_len,
        output_tokens_per_s=rate * lengths.output_len,
        notes=tuple(notes),
    )


def replay(
    trace: RequestTrace, step_s: float, scale: float = 1.0, max_steps: int | None = None
) -> InferenceDemand:
    """A raw trace binned into steps from its first request; `scale` multiplies the request rate.

    With `max_steps`, only the requests in the first `max_steps` steps are binned (the rest would be
    cut from the horizon anyway), so a long trace never costs more memory than the horizon.
    """
    t_s, inp, out = trace.t_s, trace.input_tokens, trace.output_tokens
    note = f"replay of {len(t_s)} requests over {trace.span_s / 60:.1f} min, rate x{scale:g}"
    if max_steps is not None and max_steps < 1:
        raise InputError(f"max_steps must be at least 1, got {max_steps}.", None)
    if max_steps is not None and not trace.span_s < max_steps * step_s:
        keep = t_s < max_steps * step_s
        t_s, inp, out = t_s[keep], inp[keep], out[keep]
        note += f", of which the first {max_steps * step_s / 60:.1f} min ({len(t_s)} requests)"
        n = max_steps
    else:
        n = int(trace.span_s // step_s) + 1
    step = (t_s // step_s).astype(np.int64)
    per_s = scale / step_s
    return InferenceDemand(
        name=trace.name,
        source=trace.source,
        step_s=step_s,
        requests_per_s=np.bincount(step, minlength=n).astype(np.float64) * per_s,
        input_tokens_per_s=np.bincount(step, weights=inp, minlength=n).astype(np.float64) * per_s,
        output_tokens_per_s=np.bincount(step, weights=out, minlength=n).astype(np.float64) * per_s,
        notes=(note,),
    )


def replay_bundled(name: str, step_s: float, scale: float = 1.0) -> InferenceDemand:
    """A bundled one-hour trace (per-minute counts) replayed at steps of whole minutes."""
    if step_s < 60.0 or step_s % 60.0:
        raise InputError(
            f"The bundled trace {name} is stored per minute; a {step_s:g} s step cannot replay it.",
            "use a step of whole minutes, or point `trace:` at the raw trace file.",
        )
    req, inp, out = _bundled_trace(name)
    starts = np.arange(0, len(req), int(step_s // 60))  # one step of k minutes each; the last may be short

    def fold(a: FloatArray) -> FloatArray:
        return np.asarray(np.add.reduceat(a, starts) * scale / step_s, dtype=np.float64)

    source = {
        "azure": "Azure LLM inference trace 2023 (bundled per-minute counts; CC-BY-4.0)",
        "mooncake": "Mooncake FAST'25 trace (bundled per-minute counts; Apache-2.0)",
    }[name.split(":", 1)[0]]
    return InferenceDemand(
        name=name,
        source=source,
        step_s=step_s,
        requests_per_s=fold(req),
        input_tokens_per_s=fold(inp),
        output_tokens_per_s=fold(out),
        notes=(f"replay of {name} per minute, {len(req)} minutes, rate x{scale:g}",),
    )
