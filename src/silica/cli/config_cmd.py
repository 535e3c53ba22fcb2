"""`silica config`: which region, purchase option and prices file apply, and where each came from."""

from __future__ import annotations

import typer

from silica.cli._common import handle_errors
from silica.cli._output import Column, Listing, emit, output_option, resolve_format

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command(
        "config",
        epilog="Examples:\n\n  silica config\n\n  SILICA_REGION=us-west-2 silica config\n\n"
        'Set defaults in the file it names (TOML): region = "us-west-2", price_option = "on_demand", '
        'prices = "~/prices.csv". Command-line options always win.',
    )
    @handle_errors
    def config_cmd(
        output: str | None = output_option(),
        as_json: bool = typer.Option(False, "--json", help="Shorthand for --output json."),
    ) -> None:
        """Show the settings every plan uses (environment > config file > built-in) and where each came from.

        The table is the plan context's own (`silica.context`): what `estimate`, `compare`, `advise`,
        `fleet`, the HTTP API and the web pages run with when no flag overrides it, overlay included.
        """
        from silica.config import config_path
        from silica.context import plan_context

        settings = plan_context().settings_dict()
        rows = [(key, value["value"], value["origin"]) for key, value in settings.items()]
        listing = Listing(
            f"Settings (config file: {config_path()})",
            (Column("setting", keep=True), Column("value", lambda v: v), Column("from")),
            rows,
        )
        fmt = resolve_format(output, as_json)
        emit(listing, fmt, {"config_file": str(config_path()), **settings} if fmt == "json" else None)
