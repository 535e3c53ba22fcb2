"""`silica calibrate --from-monitor`: steady production windows as measurements for the overlay.

A `silica monitor report --json` keeps, per deployment and window, the engine's TTFT/TPOT histograms,
the mean running requests (or, without that gauge, the generated tokens/s from which Little's law gives
the sequences in flight). A window is steady when it has a TPOT histogram, the deployment reports no
gap (a window a host's gap overlaps is left out, the others kept), the monitor did not flag it as
drift, and its concurrency is within 25% of the deployment's median: there the batch is known, so the
window is a measurement at that concurrency, like a pilot step. The same bounded fit as
`--from-pilot` then moves the family's parameters; the label says the windows came from production.
"""

from __future__ import annotations

import statistics
from typing import Any

from silica.errors import DataFileError, InputError
from silica.pilot.calibrate import OverlayEntry, fit_from_pilot
from silica.pilot.engines import default_engine
from silica.pilot.loadplan import Deployed, LoadPlan
from silica.plan import estimate
from silica.workload import Deployment, InferenceWorkload

__all__ = ["STEADY_SPREAD", "fit_from_monitor", "steady_windows"]

STEADY_SPREAD = 0.25  # running requests within 25% of the deployment's median


def _running(w: dict[str, Any], instances: int) -> float | None:
    """Sequences in flight per instance: the engine's gauge, else Little's law on the decode stream
    (tokens/s generated x seconds per token = sequences decoding at once)."""
    if isinstance(w.get("requests_running"), int | float) and w["requests_running"] > 0:
        return float(w["requests_running"]) / max(1, instances)
    tpot, rate = (w.get("tpot") or {}).get("p50_ms"), w.get("output_tokens_per_s")
    if tpot and isinstance(rate, int | float) and rate > 0:
        return float(rate) * float(tpot) / 1000 / max(1, instances)
    return None


def steady_windows(dep: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Windows with a TPOT histogram, no gap, no drift flagged, and a concurrency within 25% of the
    deployment's median; and a line per reason windows were left out (how many, and why)."""
    spans = [(float(a), float(b)) for a, b in dep.get("gap_spans") or []]
    windows = list(dep.get("windows", []))
    if (
        dep.get("gaps") and not spans
    ):  # a report written before gaps had times: which window they hit is unknown
        return [], [f"all {len(windows)} windows: the report has gaps without times (write it again)"]
    # A window the monitor flagged left its band: something in production differed from the model's
    # assumptions (a noisy neighbour, a changed prompt mix, a misbehaving host). Fitting on it would
    # write that episode into every later estimate, so it is left out, as a pilot leaves out short answers.
    drifted = [(float(d["start"]), float(d["end"])) for d in dep.get("drift") or []]
    rows, gapped, flagged, unmeasured = [], 0, 0, 0
    for w in windows:
        if any(a < w["end"] and b > w["start"] for a, b in spans):
            gapped += 1
            continue
        if any(a < w["end"] and b > w["start"] for a, b in drifted):
            flagged += 1
            continue
        instances = int(w.get("instances") or (dep.get("plan") or {}).get("count") or 1)
        running = _running(w, instances)
        if (w.get("tpot") or {}).get("p50_ms") and running:
            rows.append({**w, "running_per_instance": running})
        else:
            unmeasured += 1
    left_out = []
    if flagged:
        left_out.append(
            f"{flagged} flagged as drift by the monitor (left its band: production differed from the model's "
            "assumptions there, so it is not fitted)"
        )
    if gapped:
        left_out.append(f"{gapped} overlapped a host's telemetry gap")
    if unmeasured:
        left_out.append(f"{unmeasured} had no TPOT histogram or no measure of requests in flight")
    if not rows:
        return [], left_out
    mid = statistics.median(w["running_per_instance"] for w in rows)
    kept = [w for w in rows if abs(w["running_per_instance"] - mid) <= STEADY_SPREAD * mid]
    if len(kept) < len(rows):
        left_out.append(
            f"{len(rows) - len(kept)} ran more than {STEADY_SPREAD:.0%} away from the median requests in flight"
        )
    return kept, left_out


def fit_from_monitor(
    report: dict[str, Any], source: str, *, input_len: int, output_len: int, engine: str | None = None
) -> list[OverlayEntry]:
    """One overlay entry per deployment with steady windows (TPOT/TTFT p50 at their concurrency)."""
    try:
        deployments = list(report["deployments"])
    except (KeyError, TypeError) as err:
        raise DataFileError(
            f"{source} is not a `silica monitor report --json` result.", "pass that JSON."
        ) from err
    entries, skipped = [], []
    for dep in deployments:
        windows, left_out = steady_windows(dep)
        if not windows:
            skipped.append(f"{dep.get('name')}: " + ("; ".join(left_out) or "no windows"))
            continue
        plan = dep["plan"]
        vendor = "aws" if str(plan["family"]).startswith("neuron") else "nvidia"
        # Request lengths the engine measured (its prompt/generation histograms) beat the flag's guess.
        ins = [float(v) for w in windows if isinstance(v := w.get("input_len"), int | float) and v >= 1]
        outs = [float(v) for w in windows if isinstance(v := w.get("output_len"), int | float) and v >= 1]
        lengths_from = "--lengths"
        if len(ins) == len(outs) == len(windows):
            input_len = max(1, round(statistics.median(ins)))
            output_len = max(1, round(statistics.median(outs)))
            lengths_from = "the engine's request-length histograms"
        batch = max(1, round(statistics.median(w["running_per_instance"] for w in windows)))
        wl = InferenceWorkload(input_len=input_len, output_len=output_len, batch=batch)
        e = estimate(plan["model"], wl, Deployment(instance=plan["instance"]))
        if not e.feasible or e.tp is None:
            continue
        deployed = Deployed(
            model=plan["model"], instance=plan["instance"], chip=e.chip, family=e.family, vendor=vendor,
            engine=engine or default_engine(vendor), tp=e.tp, max_batch=batch,
            max_len=input_len + output_len, dtype="bf16",
        )  # fmt: skip
        steps = [
            {
                "concurrency": max(1, round(w["running_per_instance"])),
                "completed": 1,
                "tpot_ms": {"p50": w["tpot"]["p50_ms"]},
                "ttft_ms": {"p50": (w.get("ttft") or {}).get("p50_ms")},
            }
            for w in windows
        ]
        pseudo = {
            "plan": LoadPlan(
                input_len, output_len, tuple(s["concurrency"] for s in steps), 1, deployed=deployed
            ).to_dict(),
            "steps": steps,
        }
        entry = fit_from_pilot(pseudo, source)
        entry["label"] = (
            f"user calibration overlay ({deployed.engine}, from {len(windows)} steady production windows "
            f"of {dep['name']} on {plan['instance']}, {entry['as_of']})"
        )
        entry["fitted_on"] = {
            "windows": len(windows),
            "metrics": ["tpot p50", "ttft p50"],
            "deployment": dep["name"],
            "lengths": f"{input_len}:{output_len} from {lengths_from}",
            "left_out": left_out,
        }
        # Fitted on the engine's own TTFT histograms: the monitor takes no front end off it.
        entry.pop("front_end", None)
        entry["ttft_side"] = "engine"
        entries.append(entry)
    if not entries:
        why = f" (windows left out: {' | '.join(skipped)})" if skipped else ""
        raise InputError(
            f"{source} has no steady window (latency histograms, no gap, no drift, steady running requests){why}.",
            "report over a longer or calmer period; if every window drifts, the model is off for this "
            "deployment: measure it with `silica pilot run` and `silica calibrate --from-pilot`.",
        )
    return entries
