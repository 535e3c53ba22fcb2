"""Regenerate every model figure quoted in docs/fleet.md and examples/ from the code in the tree.

    python scripts/regenerate_docs.py            # rewrite the generated parts and the example report
    python scripts/regenerate_docs.py --check    # exit 1 (and say which) when any is out of date
    python scripts/regenerate_docs.py --only fleet-plan,rainier

docs/fleet.md marks each generated part: a block between `<!-- generated:NAME -->` and
`<!-- /generated:NAME -->`, or an inline phrase between `<!--g:NAME-->` and `<!--/g-->`. Everything
else is prose this script never touches. `examples/rainier_report.html` is rendered again from
`examples/rainier.yaml`. tests/fleet/test_examples.py recomputes the fast parts (the planner table, the
Rainier-like figures and report) and fails when a model change moves one without this script being
run. The bundled-trace tables read ../shared/traces (beside the checkout) and take about a minute.
Speed figures (docs/fleet.md "Speed") are measured by benchmarks/fleet_speed.py, not here: they
depend on the machine. docs/accuracy.md and the README's accuracy sentence belong to
scripts/accuracy_report.py.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from silica.fleet import FleetPlan, Simulation, load_fleet_file, plan_fleet, simulate_file  # noqa: E402
from silica.report.fleet import fleet_html  # noqa: E402
from silica.report.page import Meta  # noqa: E402
from silica.report.svg import fmt  # noqa: E402

DOC = ROOT / "docs" / "fleet.md"
FLEET = ROOT / "examples" / "fleet.yaml"
RAINIER = ROOT / "examples" / "rainier.yaml"
RAINIER_HTML = ROOT / "examples" / "rainier_report.html"
TRACES = ROOT.parent / "shared" / "traces"
BLOCK = re.compile(
    r"(<!-- generated:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /generated:(?P=name) -->)", re.S
)
INLINE = re.compile(r"(<!--g:(?P<name>[\w-]+)-->)(?P<body>.*?)(<!--/g-->)", re.S)


# --- the figures ---------------------------------------------------------------------------------


@cache
def fleet_plan() -> FleetPlan:
    return plan_fleet(load_fleet_file(FLEET))


@cache
def rainier() -> Simulation:
    return simulate_file(RAINIER)


def _mix(c: Any) -> str:
    return str(c.label)


def _count(c: Any) -> str:
    return f"{sum(p['count'] for p in c.pools):,}" if c.pools else "-"


def plan_table() -> str:
    """The planner's best mix and every runner-up for examples/fleet.yaml, as `silica fleet plan` prints."""
    plan = fleet_plan()
    best = plan.best
    rows = [
        "| mix | instances | USD / week | why it lost |",
        "|---|---:|---:|---|",
        f"| {_mix(best)}: "
        + " + ".join(f"{p['count']:,} {p['instance']}" for p in best.pools)
        + f" | {_count(best)} | {best.metrics['total_usd']:,.0f} | best |",
    ]
    for c in plan.runners_up:
        usd = c.metrics.get("total_usd")
        rows.append(
            f"| {_mix(c)} | {_count(c)} | {'-' if usd is None else f'{usd:,.0f}'} | {c.why_lost or ''} |"
        )
    return "\n".join(rows) + "\n"


def _single_type(c: Any) -> bool:
    return len({p["instance"] for p in c.pools}) == 1 and all(p["purchase"] == "reserved" for p in c.pools)


def melange() -> str:
    """How much the cheapest mix saves over the cheapest single type and over A100 alone."""
    plan = fleet_plan()
    best = plan.best.metrics["total_usd"]
    singles = [c for c in plan.runners_up if _single_type(c) and c.metrics.get("total_usd")]
    cheapest = min(singles, key=lambda c: c.metrics["total_usd"])
    a100 = next(c for c in singles if c.pools[0]["instance"] == "p4d.24xlarge")
    save = 100 * (1 - best / cheapest.metrics["total_usd"])
    save_a100 = 100 * (1 - best / a100.metrics["total_usd"])
    mix = plan.best.label.split(":")[0]  # "p4d.24xlarge serving + trn1.32xlarge training, reserved"
    return (
        f"({mix}) costs {save:.1f}% less than the cheapest single type ({cheapest.pools[0]['instance']}), "
        f"{save_a100:.1f}% less than A100 alone"
    )


def _pct(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{100 * v:.{digits}f}%".replace(f".{'0' * digits}%", "%")


def _times(ratio: float | None) -> str:
    return "static trains nothing" if ratio is None else f"{ratio:.2f} times static"


def rainier_table() -> str:
    sim = rainier()
    s, d = sim.run("static").metrics, sim.run("day_night").metrics
    cmp = sim.comparison["vs_baseline"]["day_night"]
    jct = cmp["common_mean_jct_hours"]
    return (
        "\n".join(
            [
                "| | static | day/night |",
                "|---|---:|---:|",
                f"| SLO attainment (worst hour) | {_pct(s['slo_attainment'])} ({_pct(s['worst_hour_attainment'])}) "
                f"| {_pct(d['slo_attainment'])} ({_pct(d['worst_hour_attainment'])}) |",
                f"| busy utilisation | {_pct(s['utilisation_busy'], 1)} | {_pct(d['utilisation_busy'], 1)} "
                f"({cmp['utilisation_busy_ratio']:.2f} times static) |",
                f"| training chip-hours | {fmt(s['training_chip_hours'])} | {fmt(d['training_chip_hours'])} "
                f"({_times(cmp['training_chip_hours_ratio'])}) |",
                f"| lent to training | {fmt(s['lent_chip_hours'])} | {fmt(d['lent_chip_hours'])} chip-hours |",
                f"| jobs completed / deadlines missed | {s['jobs_completed']} / {s['jobs_deadline_missed']} "
                f"| {d['jobs_completed']} / {d['jobs_deadline_missed']} |",
                f"| mean JCT, {sim.comparison['common_jobs']} jobs both finished | {jct['static']:.2f} h "
                f"| {jct['day_night']:.2f} h |",
                f"| preemptions / chip-hours lost | {s['preemptions']} / {fmt(s['lost_chip_hours'])} "
                f"| {d['preemptions']} / {fmt(d['lost_chip_hours'])} |",
                "| cost | unknown: trn2.48xlarge has no public price | |",
            ]
        )
        + "\n"
    )


def _job(j: dict[str, Any]) -> str:
    start = "never starts" if j["first_start_h"] is None else f"starts at hour {j['first_start_h']:.0f}"
    if j["finish_h"] is None:
        end = f"is unfinished at the horizon with {fmt(j['done_chip_hours'])} of its {fmt(j['chip_hours'])} chip-hours done"
    else:
        end = f"finishes at hour {j['finish_h']:.0f}"
    pre = {0: "", 1: " after one preemption"}.get(j["preemptions"], f" after {j['preemptions']} preemptions")
    missed = f", missing its hour-{j['deadline_h']:.0f} deadline" if j["deadline_missed"] else ""
    return f"{j['name']} ({j['chips']:,} chips x {j['hours']:g} h) {start} and {end}{pre}{missed}"


def rainier_story() -> str:
    """What happens to the big jobs and to every job that misses a deadline, per policy."""
    sim = rainier()
    out = []
    for name in ("static", "day_night"):
        jobs = sim.run(name).jobs
        shown = [j for j in jobs if j["chips"] >= 65_536 or j["deadline_missed"]]
        out.append(f"- **{name}**: " + "; ".join(_job(j) for j in shown) + ".")
    return "\n".join(out) + "\n"


# --- the bundled traces ----------------------------------------------------------------------------

WEEK_ROWS = (
    ("servegen-m-large", "ServeGen m-large"),
    ("servegen-m-mid", "ServeGen m-mid"),
    ("servegen-m-small", "ServeGen m-small"),
    ("diurnal-2x", "built-in diurnal 2x"),
)
HOUR_ROWS = (
    ("azure:conv", 1.25e6, "Azure conv"),
    ("azure:code", 1.875e5, "Azure code"),
    ("mooncake:conversation", 9.375e4, "Mooncake conversation"),
)


def _traces_spec() -> dict[str, Any]:
    """The YAML shown in docs/fleet.md (one source of truth), with traces_dir made absolute."""
    text = DOC.read_text()
    found = re.search(r"```yaml\n(name: traces-week\n.*?)```", text, re.S)
    if found is None:
        raise SystemExit("docs/fleet.md lost its traces-week YAML block")
    spec: dict[str, Any] = yaml.safe_load(found.group(1))
    spec["traces_dir"] = str(TRACES)
    return spec


def _simulate(spec: dict[str, Any]) -> Simulation:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.yaml"
        path.write_text(yaml.safe_dump(spec))
        return simulate_file(path)


def traces_week_runs(only: tuple[str, ...] = ()) -> list[tuple[str, str, Simulation]]:
    base = _traces_spec()
    runs = []
    for chips_per_gpu, load in ((1, "light"), (4, "backlogged")):
        for key, label in WEEK_ROWS:
            if only and (key, load) not in [tuple(o.split("/")) for o in only]:
                continue
            spec = copy.deepcopy(base)
            spec.pop("sweep")
            spec["inference"]["demand"] = base["sweep"]["demands"][key]
            spec["training"]["philly"]["chips_per_gpu"] = chips_per_gpu
            runs.append((label, load, _simulate(spec)))
    return runs


def _pair(a: float | None, b: float | None, spec: str, ratio: bool = False, speedup: bool = False) -> str:
    """'static / day-night', with day-night's ratio to static when it differs by 5% or more (for a
    time, `speedup` gives static over day-night, so above 1 is faster). None (no job finished
    under both policies) reads '-'."""
    if a is None or b is None:
        return f"{'-' if a is None else format(a, spec)} / {'-' if b is None else format(b, spec)}"
    text = f"{format(a, spec)} / {format(b, spec)}"
    r = (a / b if speedup else b / a) if a and b else 1.0
    if ratio and abs(r - 1) >= 0.05:
        text += f" (x{r:.2f})" if r < 1.3 else f" (x{r:.2g})"
    return text


def week_row(label: str, load: str, sim: Simulation, *, with_peak: bool) -> str:
    s, d = sim.run("static").metrics, sim.run("day_night").metrics
    jct = sim.comparison["vs_baseline"]["day_night"]["common_mean_jct_hours"]
    peak = f" ({sim.fleet['demand']['peak_to_mean']:.2f})" if with_peak else ""
    lent = d["lent_chip_hours"]
    return (
        f"| {label}{peak} | {load} | {_pair(100 * s['slo_attainment'], 100 * d['slo_attainment'], '.2f')} "
        f"| {_pair(100 * s['utilisation_busy'], 100 * d['utilisation_busy'], '.1f', load == 'backlogged')} "
        f"| {fmt(s['training_chip_hours'])} / {fmt(d['training_chip_hours'])} | {'0' if lent == 0 else fmt(lent)} "
        f"| {s['jobs_completed']:,} / {d['jobs_completed']:,} "
        f"| {s['jobs_deadline_missed']:,} / {d['jobs_deadline_missed']:,} "
        f"| {_pair(jct['static'], jct['day_night'], '.3g', True, speedup=True)} |"
    )


WEEK_HEAD = (
    "| demand (peak/mean) | training | SLO attainment % | busy utilisation % | training chip-hours | lent "
    "| jobs done | deadlines missed | mean JCT, common jobs (h) |\n|---|---|---|---|---|---|---|---|---|\n"
)


def traces_week(runs: list[tuple[str, str, Simulation]]) -> str:
    return (
        WEEK_HEAD + "\n".join(week_row(lb, ld, sim, with_peak=ld == "light") for lb, ld, sim in runs) + "\n"
    )


def traces_hour_runs() -> list[tuple[str, Simulation]]:
    base = _traces_spec()
    out = []
    for shape, peak, label in HOUR_ROWS:
        spec = copy.deepcopy(base)
        spec.pop("sweep")
        spec.pop("days")
        spec["hours"] = 1
        spec["inference"]["ttft_slo_ms"] = 5000
        spec["inference"]["demand"] = {"shape": shape, "peak_output_tokens_per_s": peak}
        spec["training"].pop("philly")
        spec["training"]["jobs"] = [{"name": "backlog", "chips": 256, "hours": 4, "repeat": 20}]
        out.append((label, _simulate(spec)))
    return out


def traces_hour(runs: list[tuple[str, Simulation]]) -> str:
    rows = [
        "| trace (peak/mean per minute) | SLO attainment % | busy utilisation % | lent chip-hours |",
        "|---|---|---|---|",
    ]
    for label, sim in runs:
        s, d = sim.run("static").metrics, sim.run("day_night").metrics
        rows.append(
            f"| {label} ({sim.fleet['demand']['peak_to_mean']:.2f}) "
            f"| {_pair(100 * s['slo_attainment'], 100 * d['slo_attainment'], '.2f')} "
            f"| {_pair(100 * s['utilisation_busy'], 100 * d['utilisation_busy'], '.1f')} | {fmt(d['lent_chip_hours'])} |"
        )
    return "\n".join(rows) + "\n"


def lyra(week: list[tuple[str, str, Simulation]]) -> str:
    """Day/night against static on the bundled traces and the Rainier-like example, for the Lyra row."""
    util = {
        ld: [
            sim.comparison["vs_baseline"]["day_night"]["utilisation_busy_ratio"]
            for _, l2, sim in week
            if l2 == ld
        ]
        for ld in ("light", "backlogged")
    }
    jct = [sim.comparison["vs_baseline"]["day_night"]["jct_speedup"] for _, _, sim in week]
    jct = [j for j in jct if j and j >= 1.05]
    r = rainier().comparison["vs_baseline"]["day_night"]["utilisation_busy_ratio"]
    return (
        f"busy utilisation x{_range(util['backlogged'], '.2f')} with a training backlog, "
        f"x{_range(util['light'], '.2f')} without; Rainier-like x{r:.2f}; JCT x{_range(jct, '.2g')}"
    )


def _range(values: list[float], spec: str, unit: str = "") -> str:
    if not values:
        return "1 (no run moved it)"
    lo, hi = min(values), max(values)
    return (
        f"{format(lo, spec)}{unit}"
        if format(lo, spec) == format(hi, spec)
        else f"{format(lo, spec)}-{format(hi, spec)}{unit}"
    )


def findings(week: list[tuple[str, str, Simulation]], hour: list[tuple[str, Simulation]]) -> str:
    """The "what this says" bullets, with every number taken from the runs above."""

    def m(sim: Simulation, policy: str) -> dict[str, Any]:
        return sim.run(policy).metrics

    light = [(lb, sim) for lb, ld, sim in week if ld == "light"]
    unchanged = [lb for lb, sim in light if m(sim, "day_night")["lent_chip_hours"] == 0]
    helped = [(lb, sim) for lb, sim in light if m(sim, "day_night")["lent_chip_hours"] > 0]
    jct_cut = [100 * (1 - 1 / sim.comparison["vs_baseline"]["day_night"]["jct_speedup"]) for _, sim in helped]
    missed_cut = [
        100 * (1 - m(sim, "day_night")["jobs_deadline_missed"] / m(sim, "static")["jobs_deadline_missed"])
        for _, sim in helped
    ]
    back = [sim for _, ld, sim in week if ld == "backlogged"]
    util_up = [
        100 * (sim.comparison["vs_baseline"]["day_night"]["utilisation_busy_ratio"] - 1) for sim in back
    ]
    train_x = [sim.comparison["vs_baseline"]["day_night"]["training_chip_hours_ratio"] for sim in back]
    slo = [-sim.comparison["vs_baseline"]["day_night"]["slo_attainment_points"] for _, _, sim in week]
    worst_label, worst = max(
        ((lb, -sim.comparison["vs_baseline"]["day_night"]["slo_attainment_points"]) for lb, sim in hour),
        key=lambda t: t[1],
    )
    always = min(m(sim, p)["jobs_deadline_missed"] for _, _, sim in week for p in ("static", "day_night"))
    total = week[0][2].fleet["training_jobs"]
    return (
        "- **Lending pays only where the static split's training share is short of the training demand.**\n"
        f"  With light training, {' and '.join(unchanged) or 'no demand'} leave the static share big enough, and "
        "day/night changes nothing. Where the peak (with bursts) eats the static share "
        f"({', '.join(lb for lb, _ in helped)}), day/night cuts the common jobs' mean JCT by "
        f"{_range(jct_cut, '.0f', '%')} and missed deadlines by {_range(missed_cut, '.0f', '%')}; with a backlog, "
        f"it raises busy utilisation by {_range(util_up, '.0f', '%')} and training chip-hours "
        f"{_range(train_x, '.2g')} times.\n"
        f"- **It costs SLO attainment**: {_range(slo, '.2f')} points over a week, from demand rising faster than lent "
        "chips come back (5 minutes) when the headroom (10%) is not enough. Within one bursty hour the cost is "
        f"larger (up to {worst:.1f} points on {worst_label}) for little lent: the one-hour traces have no day and "
        "night, and minute bursts are exactly what reclaiming cannot follow.\n"
        f"- About {always:,} Philly jobs ({100 * always / total:.1f}%) miss their deadline under every policy: they "
        "run for a few minutes, less than a 1-minute step plus a 2-minute restart allows at 3x slack.\n"
    )


def provenance() -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    return (
        f"The generated parts of this page (the planner table, the Rainier-like figures, the bundled-trace "
        f"tables and the figures quoted from them) were last written by `python scripts/regenerate_docs.py` "
        f"on {dt.date.today().isoformat()} from commit {commit or 'unknown'}; `tests/fleet/test_examples.py` "
        "recomputes the planner table and the Rainier-like figures and fails when they drift.\n"
    )


def rainier_html() -> str:
    meta = Meta(
        "silica fleet simulate examples/rainier.yaml --html examples/rainier_report.html",
        "trn2.48xlarge has no public price (cost unknown)",
        run_at=f"{dt.date.today().isoformat()} (scripts/regenerate_docs.py)",
    )
    return fleet_html(rainier(), meta)


# --- writing ----------------------------------------------------------------------------------------


def rainier_peak() -> str:
    """The example's peak demand as the prose quotes it (read from examples/rainier.yaml)."""
    peak = yaml.safe_load(RAINIER.read_text())["inference"]["demand"]["peak_output_tokens_per_s"]
    return f"{float(peak) / 1e6:g}M"


FAST: dict[str, Callable[[], str]] = {
    "fleet-plan": plan_table,
    "rainier-peak": rainier_peak,
    "melange": melange,
    "rainier": rainier_table,
    "rainier-story": rainier_story,
}


def sections(only: set[str] | None = None) -> dict[str, str]:
    """Every generated part by name (the slow trace runs only when asked for or when `only` is None)."""
    out = {name: fn() for name, fn in FAST.items() if only is None or name in only}
    if only is None or {"traces-week", "traces-hour", "traces-findings", "lyra"} & only:
        week = traces_week_runs() if TRACES.is_dir() else []
        if week:
            out["traces-week"] = traces_week(week)
            out["lyra"] = lyra(week)
            hour = traces_hour_runs()
            out["traces-hour"] = traces_hour(hour)
            out["traces-findings"] = findings(week, hour)
        else:
            print(f"note: {TRACES} not found; the bundled-trace tables are left as they are", file=sys.stderr)
    if only is None:
        out["provenance"] = provenance()
    return out


def parts(text: str) -> dict[str, str]:
    """The generated parts a document holds now, by name."""
    found = {m.group("name"): m.group("body") for m in BLOCK.finditer(text)}
    found.update({m.group("name"): m.group("body") for m in INLINE.finditer(text)})
    return found


def rewrite(text: str, new: dict[str, str]) -> str:
    def block(m: re.Match[str]) -> str:
        name = m.group("name")
        return m.group(1) + new[name] + m.group(4) if name in new else m.group(0)

    def inline(m: re.Match[str]) -> str:
        name = m.group("name")
        return m.group(1) + new[name] + m.group(4) if name in new else m.group(0)

    return INLINE.sub(inline, BLOCK.sub(block, text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Only say what is out of date (exit 1 if any).")
    parser.add_argument("--only", help="Comma-separated part names (default: all).")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    new = sections(only)
    text = DOC.read_text()
    have = parts(text)
    missing = sorted(set(new) - set(have))
    if missing:
        raise SystemExit(f"docs/fleet.md has no marker for {', '.join(missing)}")
    stale = [n for n in new if n != "provenance" and have[n] != new[n]]
    html_new = rainier_html() if only is None or "rainier" in only else None
    if args.check:
        for name in stale:
            print(f"out of date: docs/fleet.md {name}")
        return 1 if stale else 0
    DOC.write_text(rewrite(text, new))
    if html_new is not None:
        RAINIER_HTML.write_text(html_new)
    print(
        f"rewrote {len(new)} parts of docs/fleet.md ({len(stale)} changed)"
        + (" and examples/rainier_report.html" if html_new else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
