"""The catalog covers every current size of the families the issue names, each with its source and date,
with prices in several regions; the listings take `-o` like every other listing and print TSV when piped.

No test here pins how many rows the catalog has: AWS adds sizes, and a new one must not fail a test.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from silica.catalog import load_catalog, price_for
from silica.catalog.schema import Catalog

# Every current size AWS sells of each family (vantage/instances.vantage.sh data, 2026-01-21), except
# the fractional-GPU g6f/gr6f sizes, which share one GPU between instances (see the catalog notes).
REQUIRED = {
    "g5": ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    "g6": ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    "g6e": ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
    "gr6": ("4xlarge", "8xlarge"),
    "p4d": ("24xlarge",),
    "p4de": ("24xlarge",),
    "p5": ("4xlarge", "48xlarge"),
    "p5e": ("48xlarge",),
    "p5en": ("48xlarge",),
    "p6-b200": ("48xlarge",),
    "p6-b300": ("48xlarge",),
    "p6e-gb200": ("36xlarge",),
    "trn1": ("2xlarge", "32xlarge"),
    "trn1n": ("32xlarge",),
    "trn2": ("3xlarge", "48xlarge"),
    "trn2u": ("48xlarge",),
    "inf1": ("xlarge", "2xlarge", "6xlarge", "24xlarge"),
    "inf2": ("xlarge", "8xlarge", "24xlarge", "48xlarge"),
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_every_current_size_is_in_the_catalog_with_source_and_date(catalog: Catalog) -> None:
    for family, sizes in REQUIRED.items():
        for size in sizes:
            inst = catalog.instances.get(f"{family}.{size}")
            assert inst is not None, f"{family}.{size} missing"
            assert inst.source.strip() and inst.as_of.strip(), inst.id
    # g6e.12xlarge: four L40S, priced from the same dated source as the rest of the family.
    g6e = catalog.instances["g6e.12xlarge"]
    assert (g6e.chip, g6e.chips) == ("l40s", 4)
    price = price_for(catalog, "g6e.12xlarge")
    assert price is not None and price.option == "on_demand" and price.region == "us-east-1"
    assert "g6e_instances.js" in price.source and price.as_of == "2026-01-21"


def test_prices_cover_at_least_four_regions_with_each_purchase_option_sourced(catalog: Catalog) -> None:
    regions = {p.region for p in catalog.prices if p.option == "on_demand"}
    assert len(regions) >= 4
    for p in catalog.prices:
        assert p.source.strip() and p.as_of.strip() and p.usd_per_hour > 0, p
    # A family priced in several regions has each region's own rate (not us-east-1 copied).
    g6e = {
        p.region: p.usd_per_hour
        for p in catalog.prices
        if p.instance == "g6e.xlarge" and p.option == "on_demand"
    }
    assert len(g6e) >= 4 and len(set(g6e.values())) > 1
    eu = price_for(catalog, "g6e.xlarge", region="eu-central-1")
    assert eu is not None and eu.region == "eu-central-1" and eu.usd_per_hour != g6e["us-east-1"]
    # Unknown stays unknown: no on-demand rate was published for trn2.48xlarge.
    assert price_for(catalog, "trn2.48xlarge") is None


def test_catalog_instances_family_nvidia_as_csv() -> None:
    from silica.cli.app import app

    result = CliRunner().invoke(app, ["catalog", "instances", "--family", "nvidia", "-o", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    catalog = load_catalog()
    assert rows and all(catalog.chips[catalog.instances[r["instance"]].chip].vendor == "nvidia" for r in rows)
    assert "g6e.12xlarge" in {r["instance"] for r in rows}
    assert float(next(r for r in rows if r["instance"] == "g6e.xlarge")["$/hour"]) == 1.861


@pytest.mark.parametrize("command", ["instances", "chips"])
def test_catalog_listings_print_tsv_when_piped(command: str) -> None:
    from silica.cli.app import app

    result = CliRunner().invoke(app, ["catalog", command])  # CliRunner's stdout is not a terminal
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "\t" in lines[0] and "┃" not in result.stdout and "│" not in result.stdout
    as_json = CliRunner().invoke(app, ["catalog", command, "-o", "json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)


def test_region_option_shows_that_regions_price() -> None:
    from silica.cli.app import app

    args = ["catalog", "instances", "--family", "g6e", "--region", "eu-central-1", "-o", "csv"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows and all("eu-central-1" in r["price basis"] for r in rows)
