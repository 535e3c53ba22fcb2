"""What `silica monitor report` returns: per deployment and window, the observed figures beside the plan.

Plain frozen values that the CLI, the HTTP API, the renderers and the store serialise as they are;
`silica.monitor.report` computes them, `silica.monitor.verdicts` judges them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from silica.monitor.plan import Planned

__all__ = ["Advice", "DeploymentReport", "Drift", "Latency", "MonitorReport", "Span", "iso_utc", "minute_utc"]


@dataclass(frozen=True, slots=True)
class Latency:
    """One latency histogram over a span, in milliseconds."""

    mean_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    count: float


@dataclass(frozen=True, slots=True)
class Span:
    """The figures of one deployment over one interval (the whole range, a window or a chart step)."""

    start: float
    end: float
    output_tokens: float | None
    output_tokens_per_s: float | None
    prompt_tokens_per_s: float | None
    ttft: Latency | None
    tpot: Latency | None
    utilisation: float | None  # mean busy fraction over the deployment's chips
    instances: int | None  # hosts reporting hardware telemetry in the interval
    instance_hours: float | None
    usd: float | None
    usd_per_1m_output_tokens: float | None
    requests_running: float | None
    chip_power_w: float | None = None  # summed over the deployment's chips (DCGM board power)
    chip_j_per_output_token: float | None = None  # chip power / delivered output tokens/s
    # The load the window ran at, and what the plan's model expects at that load (None when the
    # engine does not export the request lengths or the plan has no layout to estimate again).
    concurrency: float | None = None  # requests in flight per replica (running gauge, else Little's law)
    input_len: float | None = None  # mean prompt tokens per request (the engine's histogram)
    output_len: float | None = None
    expected_ttft_ms: float | None = None  # engine-side when ttft_front_end_ms is set (model minus it)
    expected_tpot_ms: float | None = None
    # The pilot's measured time outside the engine taken off the model's TTFT (the window's TTFT is
    # the engine's own histogram), and what the window says about how its TTFT was judged.
    ttft_front_end_ms: float | None = None
    ttft_note: str | None = None


@dataclass(frozen=True, slots=True)
class Drift:
    """A window where a figure left the plan's band."""

    deployment: str
    start: float
    end: float
    figure: str  # "tpot_ms" or "ttft_ms"
    planned: float
    low: float
    high: float
    observed: float
    ratio: float  # observed / planned
    direction: str  # "slower" or "faster"
    against: str = "plan"  # "plan" (the planned batch) or "load" (expected at the window's own load)

    def describe(self) -> str:
        pct = abs(self.ratio - 1.0) * 100
        return (
            f"{self.deployment} {minute_utc(self.start)}-{minute_utc(self.end)}: {self.figure[:4].upper()} "
            f"{self.observed:.1f} ms vs {'expected at its load' if self.against == 'load' else 'plan'} "
            f"{self.planned:.1f} ms ({pct:.0f}% {self.direction}, band {self.low:.1f}-{self.high:.1f} ms)"
        )


@dataclass(frozen=True, slots=True)
class Advice:
    kind: str  # "right-size", "move traffic", "recalibrate", "check"
    deployment: str
    text: str
    monthly_saving_usd: float | None = None


@dataclass(frozen=True)
class DeploymentReport:
    name: str
    plan: Planned
    verdict: str
    overall: Span
    windows: tuple[Span, ...]
    steps: tuple[Span, ...]  # for the charts
    capacity_tokens_per_s: tuple[float | None, ...]  # per step: planned tokens/s for the hosts seen
    chips: tuple[tuple[str, float], ...]  # (host/chip, mean busy fraction)
    peak_instances: int | None
    instances_from: str  # "telemetry" or "plan"
    peak_output_tokens_per_s: float | None
    drift: tuple[Drift, ...]
    slo: dict[str, bool | None]
    gaps: tuple[str, ...]
    missing: tuple[str, ...]
    # counter resets (an engine restarted): the increase after one is the new value, as increase() does
    resets: tuple[str, ...] = ()
    gap_spans: tuple[tuple[float, float], ...] = ()  # the gaps above as (start, end) epoch seconds

    @property
    def ttft_notes(self) -> tuple[str, ...]:
        """How the windows' TTFT was judged (engine-side, or against a client-side expectation), each
        distinct note once, with the windows it applies to: reports print these beside the windows."""
        seen: dict[str, list[Span]] = {}
        for w in self.windows:
            if w.ttft_note:
                seen.setdefault(w.ttft_note, []).append(w)
        return tuple(
            f"{minute_utc(ws[0].start)}-{minute_utc(ws[-1].end)}: {note}"
            if len(seen) > 1
            else f"{self.name}: {note}"
            for note, ws in seen.items()
        )


@dataclass(frozen=True)
class MonitorReport:
    since: float
    until: float
    window_s: float
    step_s: float
    sources: tuple[str, ...]
    deployments: tuple[DeploymentReport, ...]
    advice: tuple[Advice, ...]
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["since_iso"] = iso_utc(self.since)
        out["until_iso"] = iso_utc(self.until)
        out["drift"] = [d.describe() for dep in self.deployments for d in dep.drift]
        return out

    def summaries(self) -> list[tuple[str, dict[str, Any]]]:
        """One store record per deployment and window: how it tracked its plan, not every sample."""
        out = []
        for dep in self.deployments:
            for w in dep.windows:
                drift = [d.describe() for d in dep.drift if d.start == w.start]
                out.append(
                    (
                        f"{dep.name} {iso_utc(w.start)}/{iso_utc(w.end)}",
                        {
                            "deployment": dep.name,
                            "instance": dep.plan.instance,
                            "model": dep.plan.model,
                            "start": iso_utc(w.start),
                            "end": iso_utc(w.end),
                            "verdict": "; ".join(drift) if drift else dep.verdict,
                            "summary": _summary_line(dep, w, drift),
                            "window": asdict(w),
                            "planned": {
                                "output_tokens_per_s_per_instance": dep.plan.tokens_per_s_per_instance,
                                "ttft_ms": dep.plan.ttft_ms,
                                "tpot_ms": dep.plan.tpot_ms,
                                "usd_per_1m_output_tokens": dep.plan.usd_per_1m_output_tokens,
                            },
                            "drift": drift,
                        },
                    )
                )
        return out


def _summary_line(dep: DeploymentReport, w: Span, drift: list[str]) -> str:
    """The line `silica history` shows for one stored window."""
    parts = [f"{dep.name} {minute_utc(w.start)}-{minute_utc(w.end)[-5:]}"]
    if w.output_tokens_per_s is not None:
        parts.append(f"{w.output_tokens_per_s:,.0f} tok/s")
    if w.tpot is not None and w.tpot.mean_ms is not None and dep.plan.tpot_ms:
        parts.append(f"TPOT {w.tpot.mean_ms:.1f} ms (plan {dep.plan.tpot_ms:.1f})")
    if w.usd_per_1m_output_tokens is not None:
        parts.append(f"${w.usd_per_1m_output_tokens:,.3f}/1M out")
    parts.append("DRIFT: " + "; ".join(d.split(": ", 1)[-1] for d in drift) if drift else dep.verdict)
    return ", ".join(parts)


def iso_utc(t: float) -> str:
    """A Unix time as ISO 8601 UTC to the second, as reports and stored records name windows."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def minute_utc(t: float) -> str:
    """A Unix time as `YYYY-MM-DD HH:MM` UTC, for one-line summaries."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")
