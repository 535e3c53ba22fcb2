"""A self-contained HTML report of a fleet simulation: policies side by side, and over time.

One file, inline CSS and SVG, no scripts and no network: it opens the same on a laptop, in a
ticket attachment or in an air-gapped review. It shows only what `Simulation` holds; it computes
nothing new, so the report and `--json` always agree.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from silica.fleet._svg import PALETTE, chart, fmt
from silica.fleet.simulate import Simulation

__all__ = ["METRIC_ROWS", "render_html", "write_report"]

MAX_JOB_ROWS = 60
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:980px;color:#222}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px}
th{background:#f4f4f4;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#666;font-size:12px}svg{margin:6px 0 10px;background:#fff}
svg .t{font-size:13px;font-weight:600}svg .g{stroke:#eee}svg .yl{font-size:10px;text-anchor:end;fill:#555}
svg .xl{font-size:10px;text-anchor:middle;fill:#555}svg .ax{font-size:11px;text-anchor:middle;fill:#555}
svg .lg{font-size:11px;fill:#333}.good{color:#1a7f37}.bad{color:#b42318}
"""

# (metric key, label, kind): kind says how to show it.
METRIC_ROWS: tuple[tuple[str, str, str], ...] = (
    ("slo_attainment", "SLO attainment (output tokens served within SLO)", "pct"),
    ("steps_meeting_slo", "steps with enough capacity", "pct"),
    ("worst_hour_attainment", "worst hour's attainment", "pct"),
    ("utilisation_busy", "utilisation, busy", "pct"),
    ("utilisation_allocated", "utilisation, allocated", "pct"),
    ("inference_chip_hours", "chip-hours serving", "num"),
    ("training_chip_hours", "chip-hours training", "num"),
    ("lent_chip_hours", "chip-hours lent to training", "num"),
    ("idle_chip_hours", "chip-hours idle", "num"),
    ("lost_chip_hours", "chip-hours lost to preemption and restarts", "num"),
    ("jobs_completed", "training jobs completed", "int"),
    ("jobs_deadline_missed", "deadlines missed", "int"),
    ("mean_jct_hours", "mean job completion time, h", "num"),
    ("preemptions", "preemptions", "int"),
    ("total_usd", "cost, USD", "num"),
    ("usd_per_1m_output_tokens", "USD per 1M output tokens (all-in)", "num"),
)


def _cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "pct":
        return f"{100 * value:.2f}%"
    if kind == "int":
        return f"{int(value):,}"
    return fmt(float(value), 4)


def _table(header: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{c}</td>' if i >= numeric_from else f"<td>{c}</td>" for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _fleet(sim: Simulation) -> str:
    f = sim.fleet
    rows = [
        [
            escape(p["instance"]),
            f"{p['count']:,}",
            f"{p['chips']:,}",
            escape(p["purchase"]),
            fmt(p["replica_output_tokens_per_s"], 4),
            str(p["instances_per_replica"]),
            fmt(p["train_speed"], 3),
            fmt(p["usd_per_instance_hour"], 4),
            escape(p["price_basis"]),
        ]
        for p in f["pools"]
    ]
    d = f["demand"]
    return (
        f"<p>{f['chips']:,} chips; model {escape(str(f['model']))}; horizon {f['horizon_hours']:g} h in "
        f"{f['steps']:,} steps of {f['step_s']:g} s; {f['training_jobs']} training jobs "
        f"({fmt(f['training_chip_hours'])} chip-hours).</p>"
        + _table(
            [
                "instance",
                "count",
                "chips",
                "purchase",
                "tokens/s per replica",
                "instances/replica",
                "train speed",
                "USD/instance-h",
                "price basis",
            ],
            rows,
        )
        + f"<p>Demand: <b>{escape(d['name'])}</b> ({escape(d['source'])}); peak "
        f"{fmt(d['peak_output_tokens_per_s'])} output tokens/s, mean {fmt(d['mean_output_tokens_per_s'])}; "
        f"mean request {d['mean_input_len']:.0f} in / {d['mean_output_len']:.0f} out tokens.</p>"
    )


def _comparison(sim: Simulation) -> str:
    names = [r.policy.name for r in sim.runs]
    rows = [
        [escape(label), *(_cell(r.metrics.get(key), kind) for r in sim.runs)]
        for key, label, kind in METRIC_ROWS
    ]
    html = _table(["metric", *names], rows)
    vs = sim.comparison.get("vs_baseline", {})
    for name, d in vs.items():
        base = sim.comparison["baseline"]
        items = [
            f"SLO attainment {d['slo_attainment_points']:+.2f} points",
            f"busy utilisation x{fmt(d['utilisation_busy_ratio'], 3)}",
            f"training chip-hours x{fmt(d['training_chip_hours_ratio'], 3)}",
            f"{fmt(d['lent_chip_hours'])} more chip-hours lent",
            f"{d['jobs_completed_delta']:+d} jobs completed",
            f"{d['deadlines_missed_delta']:+d} deadlines missed",
            f"mean JCT over the {sim.comparison['common_jobs']} jobs both finished x{fmt(d['jct_speedup'], 3)} faster",
        ]
        if d["usd_per_1m_tokens_ratio"] is not None:
            items.append(f"USD per 1M tokens x{fmt(d['usd_per_1m_tokens_ratio'], 3)}")
        html += f"<p><b>{escape(name)} vs {escape(base)}</b>: " + "; ".join(items) + ".</p>"
    return html


def _charts(sim: Simulation) -> str:
    runs = sim.runs
    x = runs[0].series["t_h"]  # every run shares the fleet's steps
    x_f = [float(v or 0.0) for v in x]
    colors = {r.policy.name: PALETTE[i % len(PALETTE)] for i, r in enumerate(runs)}
    out = [
        chart(
            "Inference demand and serving capacity at the SLO (output tokens/s)",
            x_f,
            [("demand", runs[0].series["demand_tokens_per_s"], "#444")]
            + [
                (f"capacity, {r.policy.name}", r.series["capacity_tokens_per_s"], colors[r.policy.name])
                for r in runs
            ],
            y_label="tokens/s",
        ),
        chart(
            "Chips training (lent capacity included)",
            x_f,
            [(r.policy.name, r.series["training_chips"], colors[r.policy.name]) for r in runs],
            y_label="chips",
            y_min=0.0,
        ),
        chart(
            "Busy chips (serving, scaled by load, plus training) over chips paid for",
            x_f,
            [
                (
                    r.policy.name,
                    [
                        _div(b, f)
                        for b, f in zip(r.series["busy_chips"], r.series["fleet_chips"], strict=True)
                    ],
                    colors[r.policy.name],
                )
                for r in runs
            ],
            y_label="utilisation",
            percent=True,
            y_min=0.0,
        ),
        chart(
            "SLO attainment per interval",
            x_f,
            [(r.policy.name, r.series["attainment"], colors[r.policy.name]) for r in runs],
            y_label="attainment",
            percent=True,
        ),
    ]
    if all(r.metrics["total_usd"] is not None for r in runs):
        out.append(
            chart(
                "Cost rate (USD per hour)",
                x_f,
                [(r.policy.name, r.series["usd_per_hour"], colors[r.policy.name]) for r in runs],
                y_label="USD/h",
                y_min=0.0,
            )
        )
    for r in runs:
        out.append(
            chart(
                f"Chips by use, {r.policy.name}",
                x_f,
                [
                    ("serving", r.series["inference_chips"], "#1f77b4"),
                    ("training", r.series["training_chips"], "#2ca02c"),
                    ("idle", r.series["idle_chips"], "#bbbbbb"),
                ],
                y_label="chips",
                stacked=True,
            )
        )
    return "".join(out)


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _jobs(sim: Simulation) -> str:
    html = ""
    for r in sim.runs:
        rows = [
            [
                escape(j["name"]),
                f"{j['chips']:,}",
                fmt(j["hours"], 3),
                fmt(j["earliest_start_h"], 4),
                fmt(j["deadline_h"], 4),
                fmt(j["finish_h"], 4),
                fmt(j["jct_hours"], 4),
                {True: '<span class="bad">missed</span>', False: '<span class="good">met</span>', None: "-"}[
                    j["deadline_missed"]
                ],
                str(j["preemptions"]),
            ]
            for j in r.jobs[:MAX_JOB_ROWS]
        ]
        more = len(r.jobs) - MAX_JOB_ROWS
        note = f'<p class="muted">{more:,} more jobs in the JSON output.</p>' if more > 0 else ""
        html += (
            f"<h3>{escape(r.policy.name)}</h3>"
            + _table(
                [
                    "job",
                    "chips",
                    "hours",
                    "earliest h",
                    "deadline h",
                    "finished h",
                    "JCT h",
                    "deadline",
                    "preempted",
                ],
                rows,
            )
            + note
        )
    return html


def render_html(sim: Simulation, title: str | None = None) -> str:
    name = title or f"Fleet simulation: {sim.fleet['name']}"
    knobs = "".join(
        f"<li><b>{escape(r.policy.name)}</b>: "
        + ", ".join(f"{k}={v}" for k, v in r.policy.to_dict().items() if k != "name")
        + "</li>"
        for r in sim.runs
    )
    notes = "".join(f"<li>{escape(a)}</li>" for a in sim.assumptions)
    warned = "".join(f'<li class="bad">{escape(w)}</li>' for w in sim.warnings)
    warned = f"<h2>Warnings</h2><ul>{warned}</ul>" if warned else ""
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(name)}</title>"
        f"<style>{CSS}</style></head><body><h1>{escape(name)}</h1>"
        '<p class="muted">Written by silica fleet simulate. Self-contained: no scripts, no network.</p>'
        f"{warned}<h2>Fleet</h2>{_fleet(sim)}<h2>Policies compared on the same demand and jobs</h2>{_comparison(sim)}"
        f"<h2>Over time</h2>{_charts(sim)}<h2>Training jobs</h2>{_jobs(sim)}"
        f"<h2>Policy settings</h2><ul>{knobs}</ul><h2>Assumptions</h2><ul>{notes}</ul></body></html>\n"
    )


def write_report(sim: Simulation, path: Path, title: str | None = None) -> Path:
    from silica._files import write_text

    path = Path(path)
    write_text(path, render_html(sim, title))  # atomic, unique temporary name beside `path`
    return path
