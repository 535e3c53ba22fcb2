"""Production against plan: the figures per deployment and window, drift, and what to do about it.

`build_report` is a pure function of the telemetry and the plan; readers, the Prometheus client, the
store and the renderers sit around it. Every figure is None when its signal is missing, and the report
says which signal was missing: a missing counter is never read as zero tokens.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from silica import cost
from silica.errors import InputError
from silica.monitor import figures as fg
from silica.monitor.expected import engine_side_front_end, expected_at
from silica.monitor.plan import Planned
from silica.monitor.results import DeploymentReport, Latency, MonitorReport, Span, iso_utc
from silica.monitor.series import Series, Telemetry
from silica.monitor.signals import CHIP_LABELS, HOST_LABELS, signal_of
from silica.monitor.verdicts import advice, drift_of, verdict, within_slo

__all__ = ["build_report"]

QUANTILES = (0.5, 0.9, 0.99)


def build_report(
    telemetry: Telemetry,
    plans: Sequence[Planned],
    *,
    since: float,
    until: float,
    window_s: float = 3600.0,
    step_s: float | None = None,
    label: str = "deployment",
    target_utilisation: float = 0.8,
    ttft_slo_ms: float | None = None,
    tpot_slo_ms: float | None = None,
) -> MonitorReport:
    """Compare telemetry between `since` and `until` (epoch seconds) with the planned deployments."""
    if not plans:
        raise InputError(
            "No plan to compare with.", "pass --plan with an estimate, compare, advise or fleet plan result."
        )
    if not until > since:
        raise InputError("--until is not after --since.", "give a time range that moves forward.")
    if not (window_s > 0 and math.isfinite(window_s)):
        raise InputError("--window must be a positive duration.", "for example --window 1h.")
    if not 0 < target_utilisation <= 1:
        raise InputError("--target-utilisation must be in (0, 1].", "for example 0.8.")
    for flag, slo in (("--ttft-slo-ms", ttft_slo_ms), ("--tpot-slo-ms", tpot_slo_ms)):
        if slo is not None and not (slo > 0 and math.isfinite(slo)):
            raise InputError(
                f"{flag} must be a positive number of milliseconds, got {slo}.", f"e.g. {flag} 50."
            )
    names = [p.name for p in plans]
    if len(set(names)) != len(names):
        raise InputError(
            f"Two plans share the deployment name {max(names, key=names.count)!r}.",
            "name them as NAME=PATH, each NAME the value of the deployment label.",
        )
    step = step_s or _default_step(until - since)
    notes = list(telemetry.notes)
    groups = _by_deployment(telemetry, since, until, label, plans, notes)
    deps = tuple(
        _deployment(
            p,
            groups.get(p.name, []),
            since,
            until,
            window_s,
            step,
            target_utilisation,
            ttft_slo_ms if ttft_slo_ms is not None else p.ttft_slo_ms,
            tpot_slo_ms if tpot_slo_ms is not None else p.tpot_slo_ms,
        )
        for p in plans
    )
    said = advice(deps, target_utilisation)
    return MonitorReport(since, until, window_s, step, telemetry.sources, deps, said, tuple(notes))


def _default_step(span: float) -> float:
    for step in (60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 86400.0):
        if span / step <= 120:
            return step
    return 86400.0


def _by_deployment(
    tel: Telemetry, since: float, until: float, label: str, plans: Sequence[Planned], notes: list[str]
) -> dict[str, list[Series]]:
    clipped = [_clip(s, since, until) for s in tel.series]
    clipped = [s for s in clipped if s.times]
    if not clipped:
        raise InputError(
            f"No sample between {iso_utc(since)} and {iso_utc(until)} in {', '.join(tel.sources)}.",
            f"the data spans {iso_utc(tel.start or 0)} to {iso_utc(tel.end or 0)}; adjust --since/--until.",
        )
    labelled = [s for s in clipped if s.label(label) is not None]
    if not labelled:
        if len(plans) == 1:
            notes.append(f"no series carries a {label!r} label; all telemetry is taken as {plans[0].name}.")
            return {plans[0].name: clipped}
        raise InputError(
            f"No series carries a {label!r} label, so telemetry cannot be split between {len(plans)} deployments.",
            "add the label in Prometheus relabel_configs, pass --from NAME=FILE, or choose another with --label.",
        )
    out: dict[str, list[Series]] = defaultdict(list)
    wanted = {p.name for p in plans}
    for s in labelled:
        out[str(s.label(label))].append(s)
    for other in sorted(set(out) - wanted):
        notes.append(f"telemetry for deployment {other!r}, which no plan names; not compared.")
    unlabelled = len(clipped) - len(labelled)
    if unlabelled:
        notes.append(f"{unlabelled} series without a {label!r} label; not compared.")
    return out


def _clip(s: Series, since: float, until: float) -> Series:
    keep = [i for i, t in enumerate(s.times) if since <= t <= until]
    return Series(s.name, s.labels, tuple(s.times[i] for i in keep), tuple(s.values[i] for i in keep))


def _classify(series: Sequence[Series]) -> dict[str, list[tuple[Series, float]]]:
    """Series by signal key; histogram parts under 'key:bucket', 'key:sum', 'key:count'."""
    out: dict[str, list[tuple[Series, float]]] = defaultdict(list)
    for s in series:
        found = signal_of(s.name, s.labels)
        if found:
            out[found[0].key].append((s, found[2]))
            continue
        base, _, part = s.name.rpartition("_")
        found = signal_of(base)
        if found and found[0].kind == "histogram" and part in ("bucket", "sum", "count"):
            out[f"{found[0].key}:{part}"].append((s, found[2]))
    return out


def _deployment(
    plan: Planned,
    series: list[Series],
    since: float,
    until: float,
    window_s: float,
    step_s: float,
    target: float,
    ttft_slo: float | None,
    tpot_slo: float | None,
) -> DeploymentReport:
    sig = _classify(series)
    missing = [
        f"no {what} for {plan.name}: {figure} unknown"
        for key, what, figure in (
            (
                "generation_tokens",
                "engine token counter (vllm:generation_tokens_total, ...)",
                "delivered tokens/s and cost per 1M tokens",
            ),
            ("tpot:bucket", "TPOT histogram", "TPOT"),
            ("ttft:bucket", "TTFT histogram", "TTFT"),
            (
                "chip_utilisation",
                "DCGM or neuron-monitor utilisation",
                f"utilisation (instance-hours taken from the plan: {plan.count})",
            ),
        )
        if key not in sig
    ]
    span = until - since
    n_w = max(1, math.ceil(span / window_s - 1e-9))
    n_s = max(1, math.ceil(span / step_s - 1e-9))
    overall = _spans(plan, sig, since, span, 1)[0]
    windows = tuple(_spans(plan, sig, since, window_s, n_w, clip_end=until))
    steps = tuple(_spans(plan, sig, since, step_s, n_s, clip_end=until))
    if plan.model and any(w.concurrency and w.input_len and w.expected_tpot_ms is None for w in windows):
        missing.append(
            f"no expectation at the windows' own load for {plan.name}: no estimate of {plan.model!r} on "
            f"{plan.instance} at that load (a model Silica cannot find: a plan of a local config.json "
            "names it by its file stem, so put the file's path in the plan's `model`; or a load that does "
            "not fit); drift judged against the plan"
        )
    per_instance = plan.tokens_per_s_per_instance
    capacity = tuple(
        None
        if per_instance is None
        else per_instance * (s.instances if s.instances is not None else plan.count)
        for s in steps
    )
    peak = max((s.output_tokens_per_s for s in steps if s.output_tokens_per_s is not None), default=None)
    peak_instances = max((s.instances for s in steps if s.instances is not None), default=None)
    drift = tuple(d for w in windows for d in drift_of(plan, w))
    slo = {
        "ttft_p99_within_slo": within_slo(overall.ttft, ttft_slo),
        "tpot_p99_within_slo": within_slo(overall.tpot, tpot_slo),
    }
    return DeploymentReport(
        name=plan.name,
        plan=plan,
        verdict=verdict(plan, drift, windows, peak, peak_instances, target),
        overall=overall,
        windows=windows,
        steps=steps,
        capacity_tokens_per_s=capacity,
        chips=_chips(sig),
        peak_instances=peak_instances,
        instances_from="telemetry" if "chip_utilisation" in sig else "plan",
        peak_output_tokens_per_s=peak,
        drift=drift,
        slo=slo,
        gaps=tuple(_gaps(plan.name, series)),
        missing=tuple(missing),
        resets=tuple(_resets(sig)),
        gap_spans=tuple(sorted({g for s in series for g in fg.gaps(s)})),
    )


def _resets(sig: dict[str, list[tuple[Series, float]]]) -> list[str]:
    """Where a token counter fell: the engine behind it restarted (its increase there is its new value)."""
    out = []
    for key in ("generation_tokens", "prompt_tokens"):
        for s, _ in sig.get(key, []):
            for r in fg.rises(s):
                if r.reset:
                    out.append(f"{s.name} on {_host(s)} reset at {iso_utc(r.t1)} (the engine restarted)")
    return out


def _spans(
    plan: Planned,
    sig: dict[str, list[tuple[Series, float]]],
    start: float,
    width: float,
    count: int,
    clip_end: float | None = None,
) -> list[Span]:
    gen = [s for s, _ in sig.get("generation_tokens", [])]
    prompt = [s for s, _ in sig.get("prompt_tokens", [])]
    tokens, _ = fg.counter_sums(gen, start, width, count) if gen else ([], 0)
    prompt_tokens, _ = fg.counter_sums(prompt, start, width, count) if prompt else ([], 0)
    latency = {key: _latency(sig, key, start, width, count) for key in ("ttft", "tpot")}
    util, instances, hours = _hardware(sig, start, width, count)
    running = _gauge_mean(sig.get("requests_running", []), start, width, count)
    power = _gauge_mean(sig.get("power", []), start, width, count)  # summed over chips
    lengths = {key: _hist_mean(sig, key, start, width, count) for key in ("prompt_len", "output_len")}
    out = []
    for i in range(count):
        a = start + i * width
        b = min(a + width, clip_end) if clip_end is not None else a + width
        extent = _extent(gen, a, b)
        out_tokens = tokens[i] if gen else None
        rate = out_tokens / extent if out_tokens is not None and extent else None
        prompt_rate = prompt_tokens[i] / _extent(prompt, a, b) if prompt and _extent(prompt, a, b) else None
        inst_hours = hours[i] if hours is not None else (plan.count * extent / 3600.0 if extent else None)
        usd = cost.usd(plan.usd_per_instance_hour, inst_hours)
        watts = power[i]
        # replicas of the planned deployment (each `plan.count` instances) that served the window
        hosts = instances[i] if instances is not None and instances[i] else plan.count
        replicas = max(1.0, hosts / plan.count)
        tpot, in_flight = latency["tpot"][i], running[i]
        if in_flight is not None:
            conc: float | None = in_flight / replicas
        elif rate is not None and tpot is not None and tpot.mean_ms:  # Little's law for the decode batch
            conc = rate * tpot.mean_ms / 1000.0 / replicas
        else:
            conc = None
        n_in, n_out = lengths["prompt_len"][i], lengths["output_len"][i]
        exp_ttft, exp_tpot = expected_at(plan, conc, n_in, n_out) if conc and n_in and n_out else (None, None)
        front_end, ttft_note = engine_side_front_end(plan, conc) if exp_ttft is not None else (None, None)
        if front_end is not None and exp_ttft is not None:
            if exp_ttft > front_end:
                exp_ttft -= front_end
            else:  # the model leaves nothing for the engine: no engine-side expectation
                exp_ttft, ttft_note = (
                    None,
                    (
                        f"no engine-side TTFT expectation: the model's {exp_ttft:.2f} ms is not above the pilot's "
                        f"measured front end {front_end:.2f} ms"
                    ),
                )
                front_end = None
        out.append(
            Span(
                start=a,
                end=b,
                output_tokens=out_tokens,
                output_tokens_per_s=rate,
                prompt_tokens_per_s=prompt_rate,
                ttft=latency["ttft"][i],
                tpot=latency["tpot"][i],
                utilisation=util[i],
                instances=instances[i] if instances is not None else None,
                instance_hours=inst_hours,
                usd=usd,
                usd_per_1m_output_tokens=cost.usd_per_million(usd, out_tokens),
                requests_running=running[i],
                chip_power_w=watts,
                chip_j_per_output_token=watts / rate if watts is not None and rate else None,
                concurrency=conc,
                input_len=n_in,
                output_len=n_out,
                expected_ttft_ms=exp_ttft,
                expected_tpot_ms=exp_tpot,
                ttft_front_end_ms=front_end,
                ttft_note=ttft_note,
            )
        )
    return out


def _hist_mean(
    sig: dict[str, list[tuple[Series, float]]], key: str, start: float, width: float, count: int
) -> list[float | None]:
    """Mean of a per-request histogram (prompt or generated tokens) in each interval: sum / count."""
    sums = [s for s, _ in sig.get(f"{key}:sum", [])]
    counts = [s for s, _ in sig.get(f"{key}:count", [])]
    if not sums or not counts:
        return [None] * count
    total, _ = fg.counter_sums(sums, start, width, count)
    n, _ = fg.counter_sums(counts, start, width, count)
    return [t / c if c > 0 else None for t, c in zip(total, n, strict=True)]


def _extent(series: Sequence[Series], a: float, b: float) -> float:
    """Seconds of (a, b] that the counters' samples span: the time their increase was counted over."""
    if not series:
        return 0.0
    first = min(s.times[0] for s in series)
    last = max(s.times[-1] for s in series)
    return max(0.0, min(b, last) - max(a, first))


def _latency(
    sig: dict[str, list[tuple[Series, float]]], key: str, start: float, width: float, count: int
) -> list[Latency | None]:
    buckets = [s for s, _ in sig.get(f"{key}:bucket", [])]
    if not buckets:
        return [None] * count
    by_le = fg.bucket_sums(buckets, start, width, count)
    sums, _ = fg.counter_sums([s for s, _ in sig.get(f"{key}:sum", [])], start, width, count)
    counts, _ = fg.counter_sums([s for s, _ in sig.get(f"{key}:count", [])], start, width, count)
    out: list[Latency | None] = []
    for i in range(count):
        cumulative = list(by_le[i].items())
        total = max((c for le, c in cumulative if math.isinf(le)), default=0.0)
        if total <= 0:
            out.append(None)
            continue
        p50, p90, p99 = (_ms(fg.histogram_quantile(q, cumulative)) for q in QUANTILES)
        mean = sums[i] / counts[i] * 1000.0 if counts and counts[i] > 0 else None
        out.append(Latency(mean, p50, p90, p99, total))
    return out


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def _host(s: Series) -> str:
    for key in HOST_LABELS:
        value = s.label(key)
        if value:
            return value
    return "?"


def _chip(s: Series) -> str:
    for key in CHIP_LABELS:
        value = s.label(key)
        if value is not None:
            return f"{_host(s)}/{key} {value}"
    return _host(s)


def _hardware(
    sig: dict[str, list[tuple[Series, float]]], start: float, width: float, count: int
) -> tuple[list[float | None], list[int] | None, list[float] | None]:
    util_series = sig.get("chip_utilisation", [])
    if not util_series:
        return [None] * count, None, None
    means = [fg.gauge_means(s, start, width, count, scale) for s, scale in util_series]
    util = []
    for i in range(count):
        vals = [v for m in means if (v := m[i]) is not None]
        util.append(sum(vals) / len(vals) if vals else None)
    hosts: dict[str, Series] = {}
    for s, _ in util_series:
        h = _host(s)
        if h not in hosts or len(s.times) > len(hosts[h].times):
            hosts[h] = s
    covered = [fg.covered_seconds(s, start, width, count) for s in hosts.values()]
    hours = [sum(c[i] for c in covered) / 3600.0 for i in range(count)]
    instances = [sum(1 for c in covered if c[i] > 0) for i in range(count)]
    return util, instances, hours


def _gauge_mean(
    items: list[tuple[Series, float]], start: float, width: float, count: int
) -> list[float | None]:
    """Sum over series of each series' mean (requests running across replicas)."""
    if not items:
        return [None] * count
    means = [fg.gauge_means(s, start, width, count, scale) for s, scale in items]
    out: list[float | None] = []
    for i in range(count):
        vals = [v for m in means if (v := m[i]) is not None]
        out.append(sum(vals) if vals else None)
    return out


def _chips(sig: dict[str, list[tuple[Series, float]]]) -> tuple[tuple[str, float], ...]:
    out = []
    for s, scale in sig.get("chip_utilisation", []):
        if s.values:
            out.append((_chip(s), sum(s.values) / len(s.values) * scale))
    return tuple(sorted(out))


def _gaps(name: str, series: Sequence[Series]) -> list[str]:
    seen: dict[tuple[float, float], list[str]] = defaultdict(list)
    for s in series:
        for a, b in fg.gaps(s):
            seen[(a, b)].append(_host(s) if _host(s) != "?" else s.name)
    return [
        f"{name}: no samples from {', '.join(sorted(set(who))[:3])} between {iso_utc(a)} and {iso_utc(b)} ({(b - a) / 60:.0f} min)"
        for (a, b), who in sorted(seen.items())
    ]
