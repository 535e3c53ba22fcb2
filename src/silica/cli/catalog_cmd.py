"""`silica catalog`: list chips and instances with their prices, and import AWS Price List files.

Only typer is imported at module level; the catalog and rich load inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from silica.cli._common import handle_errors
from silica.cli._output import Column, Listing, emit, output_option, resolve_format

__all__ = ["register"]


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _basis(price: Any, region: str | None) -> str:
    """Where the shown price comes from, or why there is none."""
    if price is None:
        return "unpriced" if region is None else f"no public price in {region}"
    return f"{price.option}, {price.region}, {price.as_of}"


def register(app: typer.Typer) -> None:
    catalog_app = typer.Typer(
        name="catalog",
        help="Chips, instances and prices Silica knows, with their sources.",
        no_args_is_help=True,
    )

    @catalog_app.command(
        "chips",
        epilog="Examples:\n\n  silica catalog chips --family nvidia\n\n  silica catalog chips -o csv",
    )
    @handle_errors
    def chips_cmd(
        family: str | None = typer.Option(
            None, "--family", help="Only this vendor (nvidia, aws) or chip family (hopper, neuron-v3, ...)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print every field as JSON."),
        output: str | None = output_option(),
    ) -> None:
        """List accelerator chips: dense peak compute, memory, links."""
        from silica.catalog import chip_rows, load_catalog

        chips = chip_rows(load_catalog(), family)
        fmt = resolve_format(output, as_json)
        listing = Listing(
            "Chips (dense TFLOP/s; memory GiB; bandwidth decimal TB/s and GB/s)",
            (
                Column("chip", keep=True),
                Column("name", drop=2),
                Column("family", drop=1),
                Column("BF16", _num, right=True),
                Column("FP8", _num, right=True),
                Column("FP4", _num, right=True, drop=3),
                Column("HBM GiB", _num, right=True),
                Column("HBM TB/s", lambda v: _num(v, 2), right=True),
                Column("link GB/s", lambda v: _num(v, 0), right=True, drop=4),
                Column("status", drop=5),
                Column("source", drop=6),
            ),
            [
                (
                    c.id,
                    c.name,
                    c.family,
                    c.tflops_bf16,
                    c.tflops_fp8,
                    c.tflops_fp4,
                    c.hbm_gib,
                    c.hbm_tb_per_s,
                    c.link_gb_per_s,
                    c.status if c.confidence != "derived" else f"{c.status} (derived)",
                    c.source if fmt != "table" else f"{c.confidence}, {c.as_of}",
                )
                for c in chips
            ],
            notes=("Every field and its full source: --json.",),
        )
        emit(listing, fmt, {"chips": chips} if fmt == "json" else None)

    @catalog_app.command(
        "instances",
        epilog="Examples:\n\n  silica catalog instances --family nvidia -o csv\n\n"
        "  silica catalog instances --family g6e\n\n  silica catalog instances --region eu-central-1",
    )
    @handle_errors
    def instances_cmd(
        family: str | None = typer.Option(
            None,
            "--family",
            help="Only this vendor (nvidia, aws), chip family (hopper) or instance id prefix (p5, trn2).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print every field and every price as JSON."),
        prices: Path | None = typer.Option(
            None,
            "--prices",
            help="A prices CSV or YAML map to apply on top (default: SILICA_PRICES or config).",
        ),
        price: list[str] = typer.Option([], "--price", help="Override one price: INSTANCE=USD_PER_HOUR."),
        region: str | None = typer.Option(
            None, "--region", help="Show the price in this region (default: us-east-1 where it has one)."
        ),
        output: str | None = output_option(),
    ) -> None:
        """List instances and UltraServers with chips, memory and the price that applies."""
        from silica.catalog import instance_rows, load_catalog, parse_price_overrides
        from silica.config import load_settings

        overrides = parse_price_overrides(price, load_catalog().instances) if price else None
        catalog = load_catalog(prices_path=prices or load_settings().prices_path, overrides=overrides)
        rows = instance_rows(catalog, family, region=region)
        fmt = resolve_format(output, as_json)
        listing = Listing(
            "Instances (price: user > on-demand; reserved, spot and capacity block via --json)",
            (
                Column("instance", keep=True),
                Column("chips", str, right=True),
                Column("chip"),
                Column("HBM GiB total", lambda v: _num(v, 0), right=True, drop=2),
                Column("$/hour", lambda v: _num(v, 2), right=True, keep=True),
                Column("price basis", drop=1),
                Column("regions priced", drop=3),
            ),
            [
                (
                    r.instance.id,
                    r.instance.chips,
                    r.chip.id,
                    r.hbm_gib_total,
                    None if r.price is None else r.price.usd_per_hour,
                    _basis(r.price, region),
                    len({p.region for p in r.prices if p.option == "on_demand"}),
                )
                for r in rows
            ],
            notes=("Every price row (region, purchase option, source, date): --json.",),
        )
        emit(listing, fmt, {"instances": rows} if fmt == "json" else None)

    @catalog_app.command(
        "import-prices",
        epilog="Examples:\n\n  silica catalog import-prices index.json --out prices.csv\n\n"
        "  aws pricing get-products --service-code AmazonEC2 --region us-east-1 "
        "--filters Type=TERM_MATCH,Field=instanceType,Value=p5.48xlarge > p5.json\n\n"
        "  silica catalog import-prices p5.json --out prices.csv\n\n"
        "  silica catalog import-prices ~/.sky/catalogs/v7/aws/vms.csv --out prices.csv",
    )
    @handle_errors
    def import_prices_cmd(
        source: Path = typer.Argument(
            ...,
            help="An AWS Price List offer file (index.json), `aws pricing get-products` JSON output, "
            "or a SkyPilot AWS catalog CSV (vms.csv); the format is found from the content.",
        ),
        out: Path = typer.Option(..., "--out", help="Where to write the prices CSV."),
        output: str | None = output_option(),
        as_json: bool = typer.Option(False, "--json", help="Shorthand for --output json."),
    ) -> None:
        """Import on-demand, 1-yr reserved and spot prices into a prices CSV for --prices."""
        from silica._files import check_output
        from silica.catalog import write_prices
        from silica.catalog.imports import import_prices

        fmt = resolve_format(output, as_json, isatty=True)  # a summary line unless a format is asked for
        check_output(out, inputs=(source,))  # before the import: never over the offer file
        kind, imported = import_prices(source)
        write_prices(imported, out)
        if fmt != "table":
            emit(
                Listing(
                    "imported prices",
                    [Column(n) for n in ("instance", "region", "option", "usd_per_hour", "as_of")],
                    [(p.instance, p.region, p.option, p.usd_per_hour, p.as_of) for p in imported],
                ),
                fmt,
                {"format": kind, "out": str(out), "prices": imported} if fmt == "json" else None,
            )
            return
        kinds = sorted({p.option for p in imported})
        typer.echo(
            f"Read {kind} file {source}. Wrote {len(imported)} prices ({', '.join(kinds) or 'none'}) for "
            f"{len({p.instance for p in imported})} instance types to {out}. "
            f"Use them with --prices {out}."
        )

    @catalog_app.command(
        "refresh-prices",
        epilog="Examples:\n\n  silica catalog refresh-prices --region eu-west-1\n\n"
        "  silica catalog refresh-prices --region us-west-2 --instance p5.48xlarge --instance trn1.32xlarge\n\n"
        "Reaches AWS (your credentials); the prices are kept in a dated CSV to use offline with --prices.",
    )
    @handle_errors
    def refresh_prices_cmd(
        region: str = typer.Option(
            ..., "--region", help="The AWS region whose prices to fetch, e.g. eu-west-1."
        ),
        instance: list[str] = typer.Option([], "--instance", help="Only these instance types (repeatable)."),
        out: Path | None = typer.Option(
            None, "--out", help="Where to write the CSV (default: the user cache dir)."
        ),
    ) -> None:
        """Fetch current on-demand and reserved prices for one region from AWS (opt-in network access)."""
        from silica.catalog import load_catalog, write_prices
        from silica.catalog.refresh import default_cache_path, refresh_prices
        from silica.errors import UnknownNameError

        known = load_catalog().instances
        wanted = instance or [i for i, spec in known.items() if spec.kind == "instance"]
        for name in wanted:
            if name not in known:
                raise UnknownNameError("instance", name, known)
        if out is not None:  # before the network round trips
            from silica._files import check_output

            check_output(out)
        target = out or default_cache_path(region)
        if out is None:  # Silica's own cache dir may be created; a user's --out folder must exist
            target.parent.mkdir(parents=True, exist_ok=True)
        prices = refresh_prices(region, wanted)
        write_prices(prices, target)
        typer.echo(
            f"Fetched {len(prices)} prices for {len({p.instance for p in prices})} instance types in {region}; "
            f"wrote {target}. Use them with --prices {target} (or SILICA_PRICES)."
        )

    @catalog_app.command(
        "check-instances",
        epilog="Examples:\n\n  aws ec2 describe-instance-types --instance-types p5.48xlarge trn2.48xlarge "
        "inf2.xlarge > types.json\n\n  silica catalog check-instances types.json",
    )
    @handle_errors
    def check_instances_cmd(
        source: Path = typer.Argument(..., help="`aws ec2 describe-instance-types` JSON output."),
        output: str | None = output_option(),
        as_json: bool = typer.Option(False, "--json", help="Shorthand for --output json."),
    ) -> None:
        """Hold AWS's own instance facts (chips, vCPUs, memory) against Silica's catalog."""
        from silica.catalog import load_catalog
        from silica.catalog.imports import check_instance_types

        checks = check_instance_types(source, load_catalog())
        listing = Listing(
            f"{len(checks)} accelerator instance types in {source.name}",
            (
                Column("instance", keep=True),
                Column("accelerator"),
                Column("chips", str, right=True),
                Column("vCPUs", str, right=True, drop=2),
                Column("memory GiB", lambda v: f"{v:,.0f}", right=True, drop=1),
                Column("in catalog", lambda v: "yes" if v else "no (not estimated)"),
                Column("differences", lambda v: "; ".join(v) or "none"),
            ),
            [
                (c.instance, c.accelerator, c.chips, c.vcpus, c.memory_gib, c.in_catalog, c.differences)
                for c in checks
            ],
        )
        emit(listing, resolve_format(output, as_json), {"instances": checks})

    app.add_typer(catalog_app, name="catalog")
