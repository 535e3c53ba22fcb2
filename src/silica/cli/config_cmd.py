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
        """Show the price defaults that apply (environment > config file > built-in) and where each came from."""
        from silica.config import config_path, load_settings

        settings = load_settings()
        rows = [(key, value["value"], value["origin"]) for key, value in settings.to_dict().items()]
        listing = Listing(
            f"Settings (config file: {config_path()})",
            (Column("setting", keep=True), Column("value", lambda v: v), Column("from")),
            rows,
        )
        fmt = resolve_format(output, as_json)
        emit(
            listing, fmt, {"config_file": str(config_path()), **settings.to_dict()} if fmt == "json" else None
        )
