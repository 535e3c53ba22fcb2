"""The `silica` command. Each group of commands lives in its own module and registers itself here."""

from __future__ import annotations

import typer

from silica import __version__

app = typer.Typer(
    name="silica",
    help="Plan, price and prove AI workloads on AWS Trainium, AWS Inferentia and NVIDIA GPUs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"silica {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """Plan, price and prove AI workloads on AWS Trainium, AWS Inferentia and NVIDIA GPUs."""


def _register() -> None:
    # Each module adds its commands to `app`; imports are light (typer only) by convention.
    import importlib

    for name in ("catalog_cmd", "estimate_cmd", "validate_cmd", "scan_cmd", "advise_cmd", "fleet_cmd"):
        try:
            module = importlib.import_module(f"silica.cli.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"silica.cli.{name}":
                continue  # that command group is not built yet
            raise
        module.register(app)


_register()


def main() -> None:
    app()
