"""`silica scan`: Neuron readiness of a model or a code base.

Only typer is imported at module level; the scan library, rich, torch and transformers load inside the
command, so `silica --help` stays light. This module formats the library's `ScanReport`; it decides nothing.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from silica.cli._common import console, handle_errors, print_json

if TYPE_CHECKING:
    from silica.scan import ScanReport, TargetVerdict, Task

__all__ = ["register"]

HELP = (
    "Check whether a model or a code base can run on AWS Inferentia2, Trainium1, Trainium2 and Trainium3.\n\n"
    "SUBJECT is one of:\n\n"
    "\b\n"
    "  MODEL_ID            a bundled registry model, e.g. llama-3.1-8b\n"
    "  path/config.json    a Hugging Face config.json\n"
    "  path/file.py:NAME   your own factory NAME() returning (module, example_inputs)\n"
    "  DIR                 a repository to scan as code\n\n"
    "Models are built from their config with transformers on the meta device (few layers, no weights, no "
    "download), exported with torch.export to ATen operators (dynamo, with graph breaks, when export fails), "
    "and each operator is checked against Silica's Neuron operator table.\n\n"
    "Your own code runs ONLY for the file.py:NAME form, which imports that file and calls NAME(). "
    "A code scan reads requirements*.txt, pyproject.toml, setup.py, setup.cfg, environment.yml, "
    "Python sources and .cu/.cuh files as text: it never imports or executes the repository.\n\n"
    "Each target gets ready, needs-work or blocked, with its blockers, the CPU-fallback partition plan "
    "and an effort estimate in engineer-weeks, split into named work items (replace parallel layers, change "
    "the launcher, remove CUDA-only kernels, port custom ops, validate numerics, ...). --task training judges "
    "the code as a training job (Inferentia2 does not train; DDP, FSDP, GradScaler and the trainer count). "
    "A source file that cannot be read or parsed makes the verdict needs-work, never ready. A model that cannot be built or traced is still a result "
    '(exit code 0) with "status": "failed" in the JSON and the reason among the findings; bad input '
    "(a missing path, an unknown model id) is one line and exit code 2. Model scans need the scan extra: "
    "pip install 'silica\\[scan]' (install the CPU build of torch first, see the README).\n\n"
    "\b\nExamples:\n"
    "  silica scan llama-3.1-8b\n"
    "  silica scan llama-3.1-8b --ops            # every operator, not only the summary\n"
    "  silica scan path/to/repo --task training\n"
    "  silica scan path/to/repo --model llama-3.1-8b   # the repository and the model it loads, one verdict\n"
    "  silica scan path/to/repo --output sarif > scan.sarif   # GitHub code scanning"
)

_COLOURS = {"ready": "green", "needs-work": "yellow", "blocked": "red"}
_STATUS = {
    "supported": "green",
    "limited": "yellow",
    "unsupported": "red",
    "info": "dim",
    "needs-work": "yellow",
    "blocker": "red",
}


def _cut(text: str, width: int) -> str:
    """Shorten for a table cell and escape rich markup: notes carry tags such as "[doc]"."""
    from rich.markup import escape

    if len(text) > width:
        cut = text[: width - 1]
        space = cut.rfind(" ")
        text = (cut[:space] if space > width // 2 else cut).rstrip(" ,;:") + "…"
    return escape(text)


def _fallback(v: TargetVerdict) -> str:
    fb = v.fallback
    if not fb.cpu_nodes and not fb.graph_breaks:
        return "-"
    return (
        f"{len(fb.cpu_ops)} op(s), {fb.cpu_nodes} node(s), {fb.cpu_partitions} partition(s), "
        f"{fb.graph_breaks} break(s), {fb.supported_share:.0%} on device"
    )


def _ops_summary(report: ScanReport) -> str:
    counts: dict[str, int] = {}
    for o in report.ops:
        counts[o.status] = counts.get(o.status, 0) + 1
    parts = [f"{counts[s]} {s}" for s in ("supported", "limited", "unsupported") if counts.get(s)]
    return f"Operators: {len(report.ops)} distinct ({', '.join(parts)})"


def _render(report: ScanReport, all_findings: bool, all_ops: bool = False) -> None:
    from rich.table import Table

    out = console()
    facts = [report.kind, report.task, report.model_type or "", report.method, f"{report.seconds:.1f} s"]
    if report.kind in ("code", "combined"):
        facts.append(f"{report.files_scanned} files")
    out.print(f"[bold]silica scan[/bold] {_cut(report.subject, 200)}  ({', '.join(f for f in facts if f)})")
    if report.failed:
        why = "; ".join(f.message for f in report.findings if f.title == "model could not be scanned")
        out.print(
            f"[bold red]scan failed:[/bold red] {_cut(why or 'see the findings', 400)}\n"
            "[red]No operator graph was seen: the verdicts and effort below are placeholders, "
            "not an estimate.[/red]"
        )
    verdicts = Table(title="Verdict per target", title_justify="left")
    for col in ("target", "verdict", "path", "effort (wk)", "CPU fallback", "why"):
        verdicts.add_column(col, overflow="fold")
    for v in report.target_verdicts.values():
        why = "; ".join([*v.blockers, *v.work]) or "-"
        path = v.path + (f": {', '.join(v.libraries)}" if v.libraries else "")
        colour = _COLOURS[v.verdict]
        verdict = f"[{colour}]{v.verdict}[/{colour}]"
        verdicts.add_row(
            v.target, verdict, _cut(path, 120), f"{v.effort_weeks:g}", _fallback(v), _cut(why, 300)
        )
    out.print(verdicts)
    out.print(
        f"Estimated effort to the cheapest open target: [bold]{report.effort_weeks:g}[/bold] engineer-weeks"
    )
    open_ = [v for v in report.target_verdicts.values() if v.verdict != "blocked"] or list(
        report.target_verdicts.values()
    )
    cheapest = min(open_, key=lambda v: v.effort_weeks)
    if cheapest.work_items:
        items = Table(title=f"Work items ({cheapest.target})", title_justify="left")
        for col in ("work item", "weeks", "sized by"):
            items.add_column(col, overflow="fold")
        for w in cheapest.work_items:
            items.add_row(w.title, f"{w.weeks:g}", _cut(", ".join(w.rules), 160))
        out.print(items)
    if report.ops:
        out.print(_ops_summary(report))
    shown_ops = [o for o in report.ops if all_ops or o.status != "supported"]
    if shown_ops:
        title = "Operators" if all_ops else "Operators that need attention (--ops lists all)"
        ops = Table(title=f"{title} ({len(shown_ops)})", title_justify="left")
        for col in ("operator", "count", "status", "note", "source"):
            ops.add_column(col, overflow="fold")
        for o in shown_ops:
            s = _STATUS[o.status]
            name = o.op + (f" [{o.condition}]" if o.condition else "")
            ops.add_row(
                _cut(name, 80), str(o.count), f"[{s}]{o.status}[/{s}]", _cut(o.note, 90), _cut(o.source, 60)
            )
        out.print(ops)
    shown = [f for f in report.findings if all_findings or any(i != "info" for i in f.impact.values())]
    if shown:
        table = Table(title=f"Findings ({len(shown)} of {len(report.findings)})", title_justify="left")
        for col in ("where", "rule", "impact", "finding", "Neuron alternative"):
            table.add_column(col, overflow="fold")
        for f in shown:
            worst = max(f.impact.values(), key=("info", "needs-work", "blocker").index)
            s = _STATUS[worst]
            where = _cut(f.location or "-", 120)
            table.add_row(
                where, f.rule, f"[{s}]{worst}[/{s}]", _cut(f.message, 120), _cut(f.alternative, 120)
            )
        out.print(table)
    for v in report.target_verdicts.values():
        for note in v.notes[:3]:
            out.print(f"[dim]{v.target}: {_cut(note, 240)}[/dim]")
    for a in report.assumptions:
        out.print(f"[dim]assumption: {_cut(a, 400)}[/dim]")


def register(app: typer.Typer) -> None:
    @app.command("scan", help=HELP, no_args_is_help=True)
    @handle_errors
    def scan(
        subject: str = typer.Argument(
            ..., metavar="SUBJECT", help="MODEL_ID, config.json, file.py:NAME or DIR."
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the ScanReport as JSON (--output json)."),
        output: str = typer.Option(
            "table", "--output", "-o", metavar="table|json|sarif", help="Output format; sarif is SARIF 2.1.0."
        ),
        task: str = typer.Option(
            "inference", "--task", metavar="inference|training", help="Judge the subject for this task."
        ),
        all_ops: bool = typer.Option(
            False, "--ops", help="List every operator (model scans), not a summary."
        ),
        layers: int = typer.Option(2, "--layers", min=1, help="Layers per stack to build (model scans)."),
        all_findings: bool = typer.Option(False, "--all", help="Also show informational findings."),
        model: str | None = typer.Option(
            None,
            "--model",
            metavar="MODEL",
            help="With a DIR: the model the repository loads (MODEL_ID, config.json or file.py:NAME); "
            "both are scanned and judged as one port.",
        ),
    ) -> None:
        from silica.errors import InputError
        from silica.scan import scan as run_scan

        if output not in ("table", "json", "sarif"):
            raise InputError(f"Unknown --output {output!r}.", "pass --output table, json or sarif.")
        if task not in ("inference", "training"):
            raise InputError(f"Unknown --task {task!r}.", "pass --task inference or --task training.")
        chosen: Task = "training" if task == "training" else "inference"
        from silica.limits import check

        check("layers", layers, "--layers")  # a million layers would be built one by one
        fmt = "json" if json_out else output
        if fmt == "table" and sys.stderr.isatty():
            from rich.console import Console

            with Console(stderr=True).status(f"Scanning {subject} ...", spinner="dots"):
                report: Any = run_scan(subject, layers=layers, task=chosen, model=model)
        else:
            report = run_scan(subject, layers=layers, task=chosen, model=model)
        if fmt == "json":
            print_json(report)
        elif fmt == "sarif":
            from silica import __version__
            from silica.scan.sarif import to_sarif

            print_json(to_sarif(report, version=__version__))
        else:
            _render(report, all_findings, all_ops)
