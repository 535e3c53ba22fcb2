"""The `silica fleet simulate --html` report: policies side by side on the same demand, and over time.

It presents only what `Simulation` holds, so the report and `--json` agree. Comparisons read as words
("3% shorter", "2 fewer deadlines missed"), never as a signed ratio a reader has to decode; every chart
starts at zero and each policy's line has its own dash, so identical series stay visible; the job list
shows the jobs worth a look (missed deadlines, preemptions) instead of every job of every policy.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from silica.report.page import Meta, figure, page, table, text, ul
from silica.report.svg import PALETTE, Line, fmt, hour_ticks, line_charts

if TYPE_CHECKING:
    from silica.fleet.simulate import Simulation

__all__ = ["MAX_JOB_ROWS", "METRIC_ROWS", "cell", "comparison_phrases", "fleet_html", "write_fleet_report"]

MAX_JOB_ROWS = 12

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
    ("total_usd", "cost, USD", "usd"),
    ("usd_per_1m_output_tokens", "USD per 1M output tokens (all-in)", "usd"),
)


def cell(value: Any, kind: str) -> str:
    """One metric as shown in the report and the CLI table. A cost that cannot be computed says why
    (a pool with no public price: the notes name it), never a bare dash."""
    if value is None:
        return "unpriced pool" if kind == "usd" else "n/a"
    if kind == "pct":
        return f"{100 * value:.2f}%"
    if kind == "int":
        return f"{int(value):,}"
    return fmt(float(value), 4)


def _more(delta: float, what: str, one: str | None = None) -> str:
    """'2 more jobs completed', '1 fewer deadline missed', 'the same jobs completed'."""
    if delta == 0:
        return f"the same number of {what}" if one else f"the same {what}"
    noun = one if one and abs(delta) == 1 else what
    return f"{fmt(abs(delta), 4)} {'more' if delta > 0 else 'fewer'} {noun}"


def _ratio(r: float | None, what: str, up: str = "higher", down: str = "lower") -> str | None:
    if r is None:
        return None
    change = (r - 1.0) * 100
    if abs(change) < 0.05:
        return f"{what} unchanged"
    return f"{what} {abs(change):.1f}% {up if change > 0 else down}"


def comparison_phrases(d: dict[str, Any], common_jobs: int) -> list[str]:
    """One policy against the baseline, in words (the CLI and the report print the same phrases)."""
    speed = d["jct_speedup"]  # baseline JCT / this JCT: above 1 is faster
    jct = None
    if speed is not None and speed > 0:
        change = (1.0 / speed - 1.0) * 100
        jct = f"mean job completion time over the {common_jobs:,} jobs both finished " + (
            "unchanged"
            if abs(change) < 0.05
            else f"{abs(change):.1f}% {'shorter' if change < 0 else 'longer'}"
        )
    items = [
        f"SLO attainment {d['slo_attainment_points']:+.2f} percentage points",
        _ratio(d["utilisation_busy_ratio"], "busy utilisation"),
        _ratio(d["training_chip_hours_ratio"], "training chip-hours"),
        _more(d["lent_chip_hours"], "chip-hours lent to training"),
        _more(d["jobs_completed_delta"], "jobs completed", "job completed"),
        _more(d["deadlines_missed_delta"], "deadlines missed", "deadline missed"),
        jct,
        _ratio(d["usd_per_1m_tokens_ratio"], "USD per 1M tokens"),
    ]
    return [i for i in items if i]


def _fleet(sim: Simulation) -> str:
    f = sim.fleet
    rows = [
        [
            text(p["instance"]),
            f"{p['count']:,}",
            f"{p['chips']:,}",
            text(p["purchase"]),
            fmt(p["replica_output_tokens_per_s"], 4),
            str(p["instances_per_replica"]),
            fmt(p["train_speed"], 3),
            fmt(p["usd_per_instance_hour"], 4),
            text(p["price_basis"]),
        ]
        for p in f["pools"]
    ]
    d = f["demand"]
    return (
        f"<p>{f['chips']:,} chips; model {text(f['model'])}; horizon {f['horizon_hours']:g} h in "
        f"{f['steps']:,} steps of {f['step_s']:g} s; {f['training_jobs']} training jobs "
        f"({fmt(f['training_chip_hours'])} chip-hours).</p>"
        + table(
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
            numeric=(1, 2, 4, 5, 6, 7),
        )
        + f"<p>Demand: <b>{text(d['name'])}</b> ({text(d['source'])}); peak "
        f"{fmt(d['peak_output_tokens_per_s'])} output tokens/s, mean {fmt(d['mean_output_tokens_per_s'])}; "
        f"mean request {d['mean_input_len']:.0f} in / {d['mean_output_len']:.0f} out tokens.</p>"
    )


def _comparison(sim: Simulation) -> str:
    names = [r.policy.name for r in sim.runs]
    rows = [
        [text(label), *(cell(r.metrics.get(key), kind) for r in sim.runs)] for key, label, kind in METRIC_ROWS
    ]
    html = table(["metric", *names], rows, numeric=range(1, len(names) + 1))
    base = sim.comparison.get("baseline")
    for name, d in sim.comparison.get("vs_baseline", {}).items():
        phrases = comparison_phrases(d, sim.comparison["common_jobs"])
        html += f"<p><b>{text(name)} against {text(base)}</b>: " + "; ".join(map(text, phrases)) + ".</p>"
    return html


def _charts(sim: Simulation) -> str:
    runs = sim.runs
    x = [float(v or 0.0) for v in runs[0].series["t_h"]]  # every run shares the fleet's steps
    ticks = hour_ticks(x[-1] if x else 1.0)
    colors = {r.policy.name: PALETTE[(i + 1) % len(PALETTE)] for i, r in enumerate(runs)}
    names = ", ".join(r.policy.name for r in runs)
    out = [
        figure(
            line_charts(
                x,
                [Line("demand", runs[0].series["demand_tokens_per_s"], "#1a1a1a")]
                + [
                    Line(
                        f"capacity, {r.policy.name}", r.series["capacity_tokens_per_s"], colors[r.policy.name]
                    )
                    for r in runs
                ],
                title="Inference demand and serving capacity at the SLO",
                unit="tok/s",
                x_labels=ticks,
            ),
            "Output tokens per second asked for (black) and what each policy's serving chips can deliver "
            "within the latency SLO, over the simulated hours; the axis starts at zero. Where a policy's "
            "capacity line drops below demand, requests miss the SLO.",
        ),
        figure(
            line_charts(
                x,
                [Line(r.policy.name, r.series["training_chips"], colors[r.policy.name]) for r in runs],
                title="Chips training (lent capacity included)",
                unit="chips",
                x_labels=ticks,
            ),
            f"Chips running training jobs under each policy ({names}); lines with the same values overlap, "
            "so each has its own dash pattern.",
        ),
        figure(
            line_charts(
                x,
                [
                    Line(
                        r.policy.name,
                        [
                            _div(b, f)
                            for b, f in zip(r.series["busy_chips"], r.series["fleet_chips"], strict=True)
                        ],
                        colors[r.policy.name],
                    )
                    for r in runs
                ],
                title="Busy chips over chips paid for",
                percent=True,
                x_labels=ticks,
            ),
            "Share of the paid-for chips doing work (serving, scaled by load, plus training), 0-100%.",
        ),
        figure(
            line_charts(
                x,
                [Line(r.policy.name, r.series["attainment"], colors[r.policy.name]) for r in runs],
                title="SLO attainment per interval",
                percent=True,
                x_labels=ticks,
            ),
            "Share of each interval's output tokens served within the SLO, 0-100%.",
        ),
    ]
    if all(r.metrics["total_usd"] is not None for r in runs):
        out.append(
            figure(
                line_charts(
                    x,
                    [Line(r.policy.name, r.series["usd_per_hour"], colors[r.policy.name]) for r in runs],
                    title="Cost rate",
                    unit="$/h",
                    x_labels=ticks,
                ),
                "What the fleet costs per hour under each policy, in US dollars, from zero.",
            )
        )
    for r in runs:
        out.append(
            figure(
                line_charts(
                    x,
                    [
                        Line("serving", r.series["inference_chips"], "proposed"),
                        Line("training", r.series["training_chips"], "nvidia"),
                        Line("idle", r.series["idle_chips"], "#bdbdbd"),
                    ],
                    title=f"Chips by use, {r.policy.name}",
                    unit="chips",
                    x_labels=ticks,
                    stacked=True,
                ),
                f"Every chip of the fleet under {r.policy.name}, stacked: serving at the bottom, training, "
                "then idle; the top edge is the fleet size.",
            )
        )
    return "".join(out)


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _jobs(sim: Simulation) -> str:
    summary = []
    for r in sim.runs:
        missed = sum(1 for j in r.jobs if j["deadline_missed"])
        pre = sum(1 for j in r.jobs if j["preemptions"])
        done = sum(1 for j in r.jobs if j["finish_h"] is not None)
        summary.append([text(r.policy.name), f"{len(r.jobs):,}", f"{done:,}", f"{missed:,}", f"{pre:,}"])
    html = table(
        ["policy", "jobs", "finished", "deadline missed", "jobs preempted"], summary, numeric=(1, 2, 3, 4)
    )
    for r in sim.runs:
        worth = sorted(
            (j for j in r.jobs if j["deadline_missed"] or j["preemptions"]),
            key=lambda j: (not j["deadline_missed"], -j["preemptions"], j["name"]),
        )
        if not worth:
            continue
        rows = [
            [
                text(j["name"]),
                f"{j['chips']:,}",
                fmt(j["hours"], 3),
                fmt(j["deadline_h"], 4),
                fmt(j["finish_h"], 4),
                '<span class="bad">missed</span>' if j["deadline_missed"] else "met",
                str(j["preemptions"]),
            ]
            for j in worth[:MAX_JOB_ROWS]
        ]
        more = len(worth) - MAX_JOB_ROWS
        html += f"<h3>{text(r.policy.name)}: jobs that missed a deadline or were preempted</h3>"
        html += table(
            ["job", "chips", "hours", "deadline h", "finished h", "deadline", "preemptions"],
            rows,
            numeric=(1, 2, 3, 4, 6),
        )
        if more > 0:
            html += f'<p class="small">{more:,} more such jobs; every job is in the --json output.</p>'
    return html


def fleet_html(sim: Simulation, meta: Meta, title: str | None = None) -> str:
    """The whole fleet simulation page."""
    knobs = [
        f"<b>{text(r.policy.name)}</b>: "
        + text(", ".join(f"{k}={v}" for k, v in r.policy.to_dict().items() if k != "name"))
        for r in sim.runs
    ]
    body = []
    if sim.warnings:
        body.append(
            "<h2>Warnings</h2><ul>"
            + "".join(f'<li class="bad">{text(w)}</li>' for w in sim.warnings)
            + "</ul>"
        )
    body += [
        "<h2>Fleet</h2>",
        _fleet(sim),
        "<h2>Policies compared on the same demand and jobs</h2>",
        _comparison(sim),
        "<h2>Over time</h2>",
        _charts(sim),
        "<h2>Training jobs</h2>",
        _jobs(sim),
        "<h2>Policy settings</h2>",
        ul(knobs, escaped=True),
        "<h2>Assumptions</h2>",
        ul(sim.assumptions),
    ]
    return page(title or f"Fleet simulation: {sim.fleet['name']}", body, meta)


def write_fleet_report(sim: Simulation, path: Path, meta: Meta, title: str | None = None) -> Path:
    from silica._files import write_text

    path = Path(path)
    write_text(path, fleet_html(sim, meta, title))  # atomic, unique temporary name beside `path`
    return path
