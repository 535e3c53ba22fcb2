"""`silica validate` and `silica calibrate`: check the model against measurements, and refit it."""

from __future__ import annotations

from pathlib import Path

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
        files: list[Path] = typer.Argument(..., help="One or more measurement CSVs."),
        out: Path = typer.Option(..., "--out", help="Where to write the fitted calibration (JSON)."),
    ) -> None:
        """Fit each chip family's few efficiency parameters to measurements (robust, on log error)."""
        import json
        import sys

        from silica._files import check_output, write_text
        from silica.perf.calibration import calibration_to_json
        from silica.validate.benchmarks import read_benchmarks
        from silica.validate.fit import fit_calibration

        check_output(out, inputs=files)  # before the fit, which can take a while
        rows = [row for f in files for row in read_benchmarks(f)]
        command = "silica calibrate " + " ".join(str(f) for f in files) + f" --out {out}"
        result = fit_calibration(rows, command=command)
        write_text(out, json.dumps(calibration_to_json(result), indent=2) + "\n")
        sys.stdout.write(
            f"fitted {', '.join(f'{k} ({v} rows)' for k, v in result.fitted_rows.items())}; wrote {out}\n"
        )


def _print(report: object) -> None:
    from rich.table import Table

    r = report.to_dict()  # type: ignore[attr-defined]
    out = console()
    med = r["median_ape"]
    out.print(
        f"{r['predicted']} of {r['rows']} rows predicted ({r['skipped']} skipped); "
        f"median APE {med:.1%}, p90 {r['p90_ape']:.1%}"
        if med is not None
        else "no row could be predicted"
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
