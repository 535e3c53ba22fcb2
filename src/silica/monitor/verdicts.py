"""Judging one deployment's observed windows against its plan: drift outside the band, the SLO, the
verdict line, and advice (right-size with the saving, recalibrate, move traffic between pools).

Kept apart from the measurement (`silica.monitor.report`): these rules change with what operators ask,
the measurement changes with what exporters send.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from silica import cost
from silica.monitor.plan import Planned
from silica.monitor.results import Advice, DeploymentReport, Drift, Latency, Span

__all__ = ["advice", "drift_of", "needed_instances", "verdict", "within_slo"]


def drift_of(plan: Planned, w: Span) -> list[Drift]:
    """Windows outside the band. The band is around what the plan's model expects at the window's own
    load (concurrency and lengths) when the telemetry gives them, else around the plan itself; the
    band keeps the plan's relative width either way. An engine-side TTFT expectation (the model minus
    the pilot's measured front end) is judged on the window's p50, as the pilot's p50s it comes from."""
    out = []
    for figure, latency, planned, low, high, expected in (
        ("tpot_ms", w.tpot, plan.tpot_ms, plan.tpot_ms_low, plan.tpot_ms_high, w.expected_tpot_ms),
        ("ttft_ms", w.ttft, plan.ttft_ms, plan.ttft_ms_low, plan.ttft_ms_high, w.expected_ttft_ms),
    ):
        if latency is None or latency.mean_ms is None or planned is None or low is None or high is None:
            continue
        against = "plan"
        if expected is not None and planned > 0:
            # An engine-side TTFT expectation is the model's minus the pilot's front end: the band is
            # the model's, moved by the same time (its absolute width kept, the model's error is in it).
            shift = (w.ttft_front_end_ms or 0.0) if figure == "ttft_ms" else 0.0
            model = expected + shift
            low, high = max(model * low / planned - shift, 0.0), model * high / planned - shift
            planned, against = expected, "load"
        observed = latency.mean_ms
        if figure == "ttft_ms" and w.ttft_front_end_ms is not None and expected is not None:
            if latency.p50_ms is None:
                continue
            observed = latency.p50_ms  # like the pilot's p50s the model and its front end come from
        # On the band's edge is inside it: a band whose edge is the plan itself (a family whose
        # measurements all ran faster than predicted) must not call an on-plan window slower
        # because a histogram's mean lands one rounding step above it.
        slack = 1e-9 * max(abs(high), abs(low))
        if observed > high + slack or observed < low - slack:
            out.append(
                Drift(
                    plan.name,
                    w.start,
                    w.end,
                    figure,
                    planned,
                    low,
                    high,
                    observed,
                    observed / planned,
                    "slower" if observed > high + slack else "faster",
                    against,
                )
            )
    return out


def within_slo(latency: Latency | None, slo: float | None) -> bool | None:
    if latency is None or latency.p99_ms is None or slo is None:
        return None
    return latency.p99_ms <= slo


def needed_instances(plan: Planned, peak: float | None, target: float) -> int | None:
    per = plan.tokens_per_s_per_instance
    if per is None or peak is None or per <= 0:
        return None
    return max(1, math.ceil(peak / (per * target) - 1e-9))


def verdict(
    plan: Planned,
    drift: tuple[Drift, ...],
    windows: tuple[Span, ...],
    peak: float | None,
    peak_instances: int | None,
    target: float,
) -> str:
    if all(w.output_tokens is None and w.tpot is None for w in windows):
        return "no engine metrics"
    slow = [d for d in drift if d.direction == "slower"]
    if slow:
        worst = max(slow, key=lambda d: d.ratio)
        return f"slower than plan ({worst.figure[:4].upper()} +{(worst.ratio - 1) * 100:.0f}% in {len({d.start for d in slow})} of {len(windows)} windows)"
    needed = needed_instances(plan, peak, target)
    have = peak_instances if peak_instances is not None else plan.count
    if needed is not None and needed < have:
        return f"over-provisioned (peak needs {needed} of {have} instances)"
    if drift:
        return "faster than plan"
    return "on plan"


def advice(deps: Sequence[DeploymentReport], target: float) -> tuple[Advice, ...]:
    out: list[Advice] = []
    for d in deps:
        needed = needed_instances(d.plan, d.peak_output_tokens_per_s, target)
        have = d.peak_instances if d.peak_instances is not None else d.plan.count
        slo_ok = all(v is not False for v in d.slo.values())
        slow = any(x.direction == "slower" for x in d.drift)
        if needed is not None and needed < have and slo_ok and not slow:
            saving = cost.usd_per_month(cost.usd_per_hour(d.plan.usd_per_instance_hour, have - needed))
            money = f"saves ${saving:,.0f}/month" if saving is not None else "saving unknown (no price)"
            out.append(
                Advice(
                    "right-size",
                    d.name,
                    f"{d.name}: peak {d.peak_output_tokens_per_s:,.0f} output tokens/s needs {needed} "
                    f"{d.plan.instance} at {target:.0%} of planned capacity, {have} ran; run {needed}: {money}.",
                    saving,
                )
            )
        windows_with_data = [w for w in d.windows if w.tpot is not None]
        slow_windows = {x.start for x in d.drift if x.direction == "slower" and x.figure == "tpot_ms"}
        if len(windows_with_data) >= 2 and len(slow_windows) == len(windows_with_data):
            ratio = sum(x.ratio for x in d.drift if x.figure == "tpot_ms") / len(slow_windows)
            out.append(
                Advice(
                    "recalibrate",
                    d.name,
                    f"{d.name}: TPOT is {(ratio - 1) * 100:.0f}% above plan in every window: the calibration for "
                    f"{d.plan.family or d.plan.instance} does not fit this deployment; run "
                    "`silica calibrate --from-monitor` on steady windows.",
                )
            )
        elif slow:
            out.append(
                Advice("check", d.name, f"{d.name}: slower than plan in some windows; see the drift list.")
            )
    hot = [d for d in deps if _load(d) is not None and (_load(d) or 0) > 0.9]
    cold = [d for d in deps if _load(d) is not None and (_load(d) or 1) < 0.5]
    for h in hot:
        for c in cold:
            if c.plan.model == h.plan.model and c is not h:
                out.append(
                    Advice(
                        "move traffic",
                        h.name,
                        f"move traffic from {h.name} (peak {_load(h):.0%} of planned capacity) to {c.name} "
                        f"(peak {_load(c):.0%}): both serve {h.plan.model or 'the same model'}.",
                    )
                )
    return tuple(out)


def _load(d: DeploymentReport) -> float | None:
    loads = [
        s.output_tokens_per_s / cap
        for s, cap in zip(d.steps, d.capacity_tokens_per_s, strict=True)
        if s.output_tokens_per_s is not None and cap
    ]
    return max(loads) if loads else None
