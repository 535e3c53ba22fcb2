"""`silica validate` and `silica calibrate`: check the model against measurements, and refit it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from silica.cli._common import console, handle_errors, print_json


def register(app: typer.Typer) -> None:
    @app.command()
    @handle_errors
    def validate(
        file: Path = typer.Argument(
            ..., help="Measurements CSV in the schema of shared/benchmarks/README.md."
        ),
        out: Path | None = typer.Option(
            None, "--out", help="Write each row's prediction beside its measurement."
        ),
        calibration: Path | None = typer.Option(
            None, "--calibration", help="Calibration file (default: bundled)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the library result as JSON."),
    ) -> None:
        """Predict every measured row through the same code path as `estimate`, and report the error."""
        from silica._files import check_output
        from silica.perf.calibration import load_calibration
        from silica.validate import validate as run
        from silica.validate.report import write_predictions

        if out is not None:  # before the work: never an input, always a writable file
            check_output(out, inputs=(file, calibration))
        report = run(file, load_calibration(calibration))
        if out is not None:
            write_predictions(report, out)
        if as_json:
            print_json(report)
            return
        _print(report)

    @app.command()
    @handle_errors
    def calibrate(
        files: list[Path] = typer.Argument(None, help="One or more measurement CSVs."),
        out: Path = typer.Option(None, "--out", help="Where to write the fitted calibration (JSON)."),
        from_pilot: Path | None = typer.Option(
            None, "--from-pilot", help="A `silica pilot run` result: update your calibration overlay instead."
        ),
        from_monitor: Path | None = typer.Option(
            None,
            "--from-monitor",
            help="A `silica monitor report --json`: steady windows update the overlay.",
        ),
        lengths: str = typer.Option(
            "1024:256", "--lengths", help="With --from-monitor: prompt:output tokens."
        ),
    ) -> None:
        """Fit each chip family's few efficiency parameters to measurements (robust, on log error)."""
        if from_pilot is not None:  # the user's overlay, not the shipped fit (silica.pilot.calibrate)
            from silica.cli.pilot_cmd import calibrate_from_pilot

            return calibrate_from_pilot(from_pilot, out)
        if from_monitor is not None:
            from silica.cli.pilot_cmd import calibrate_from_monitor

            return calibrate_from_monitor(from_monitor, out, lengths)
        if not files or out is None:
            from silica.errors import InputError

            raise InputError(
                "calibrate needs measurement CSVs and --out.",
                "pass FILES --out PATH, or --from-pilot RESULT.",
            )
        import json
        import sys

        from silica._files import check_output, write_text
        from silica.perf.calibration import calibration_to_json
        from silica.validate.benchmarks import read_benchmarks
        from silica.validate.fit import fit_calibration

        check_output(out, inputs=files)  # before the fit, which can take a while
        rows = [row for f in files for row in read_benchmarks(f)]
        command = "silica calibrate " + " ".join(str(f) for f in files) + f" --out {out}"
        result = _fit_with_progress(rows, command, fit_calibration)
        write_text(out, json.dumps(calibration_to_json(result), indent=2) + "\n")
        coverage = result.band_coverage
        sys.stdout.write(
            f"fitted {', '.join(f'{k} ({v} rows)' for k, v in result.fitted_rows.items())}; "
            f"p10-p90 band covers {coverage.get('in_sample', float('nan')):.0%} of rows in sample, "
            f"{coverage.get('out_of_sample', float('nan')):.0%} leave-one-source-out; wrote {out}\n"
        )


def _fit_with_progress(rows: list[Any], command: str, fit: Callable[..., Any]) -> Any:
    """Run the fit (a minute or more) with a progress bar on stderr: one step per fit."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    steps = 1 + len({r.source for r in rows})
    with Progress(
        TextColumn("fitting"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=steps)
        started = [0]

        def step(what: str) -> None:  # called as each fit starts: the one before it is done
            label = "on all sources" if what == "all sources" else f"without {what[:60]}"
            bar.update(task, completed=started[0], description=label)
            started[0] += 1

        result = fit(rows, command=command, progress=step)
        bar.update(task, completed=steps)
    return result


def _print(report: object) -> None:
    from rich.table import Table

    r = report.to_dict()  # type: ignore[attr-defined]
    out = console()
    med = r["median_ape"]
    out.print(
        f"{r['predicted']} of {r['rows']} rows predicted ({r['skipped']} skipped); "
        f"median APE {med:.1%}, p90 {r['p90_ape']:.1%}"
        if med is not None
        else "no performance row could be predicted"
    )
    e = r["energy"]
    if e["rows"]:
        out.print(
            f"energy and power: {e['n']} of {e['rows']} rows predicted; median APE {e['median_ape']:.1%}, "
            f"p90 {e['p90_ape']:.1%} ({e['model']})"
            if e["n"]
            else f"energy and power: none of {e['rows']} rows could be predicted"
        )
    for key in ("by_chip", "by_metric"):
        table = Table(title=key.replace("_", " "))
        table.add_column(key[3:])
        table.add_column("n", justify="right")
        table.add_column("median APE", justify="right")
        table.add_column("p90 APE", justify="right")
        for name, s in r[key].items():
            table.add_row(name, str(s["n"]), f"{s['median_ape']:.1%}", f"{s['p90_ape']:.1%}")
        out.print(table)
    for skip in r["skipped_rows"][:20]:
        out.print(f"skipped row {skip['id']}: {skip['reason']}")
