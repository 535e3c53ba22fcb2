"""`silica models`: the bundled model configs, so users know which names `estimate` and `compare` take."""

from __future__ import annotations

import typer

from silica.cli._common import handle_errors
from silica.cli._output import Column, Listing, emit, output_option, resolve_format

__all__ = ["register"]


def _billions(value: float) -> str:
    return f"{value / 1e9:,.1f}B" if value >= 1e9 else f"{value / 1e6:,.0f}M"


def register(app: typer.Typer) -> None:
    @app.command(
        "models",
        epilog="Examples:\n\n  silica models\n\n  silica models --output csv > models.csv\n\n"
        "Any local config.json, a folder holding one, or a Hugging Face repo id in your local HF cache "
        "(meta-llama/Llama-3.1-8B) works wherever a model name is asked for.",
    )
    @handle_errors
    def models_cmd(
        output: str | None = output_option(),
        as_json: bool = typer.Option(False, "--json", help="Shorthand for --output json."),
    ) -> None:
        """List the bundled models: kind, parameters (total and active), layers, context, source date."""
        from silica.models import list_models, load_model

        specs = [load_model(m) for m in list_models()]
        listing = Listing(
            title=f"{len(specs)} bundled models (built from their config.json; nothing downloaded)",
            columns=(
                Column("model", keep=True),
                Column("kind", drop=2),
                Column("arch", drop=3),
                Column("params", _billions, right=True),
                Column("active", _billions, right=True),
                Column("layers", str, right=True, drop=1),
                Column("context", lambda v: f"{v:,}", right=True),
                Column("as_of", drop=4),
            ),
            rows=[
                (
                    s.id,
                    s.kind,
                    s.model_type,
                    s.total_params,
                    s.active_params,
                    s.n_layers,
                    s.max_positions,
                    s.as_of,
                )
                for s in specs
            ],
        )
        fmt = resolve_format(output, as_json)
        emit(listing, fmt, {"models": specs} if fmt == "json" else None)
