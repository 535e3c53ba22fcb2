"""Which price applies, user price overrides, and prices imported from an AWS Price List offer file.

Prices go stale faster than anything else in the catalog, so a user can replace them three ways:
`--price INSTANCE=USD`, a prices CSV (or YAML map), or a CSV written here from AWS's own offer file.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Collection, Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING

from silica.catalog.schema import PURCHASE_OPTIONS, Catalog, Price, PurchaseOption
from silica.errors import DataFileError, InputError, UnknownNameError

if TYPE_CHECKING:  # the offer-file reader loads only when a file is imported, not at every start
    from silica.catalog._offer import OfferSku

__all__ = [
    "DEFAULT_PREFERENCE",
    "import_offer_file",
    "offer_sku_prices",
    "parse_price_overrides",
    "price_for",
    "write_prices",
]

# With no option asked for: a user's own price, else the on-demand list price. Nothing else, because
# the other bundled rates are not comparable with a list price: spot and reserved are a risk or a
# commitment the user must choose, and the Capacity Block rates are a late-2024 snapshot taken before
# the June 2025 on-demand price cut, often for another region than the on-demand row.
DEFAULT_PREFERENCE: tuple[PurchaseOption, ...] = ("user", "on_demand")
HOURS_PER_YEAR = 8760  # AWS RI effective hourly = hourly + upfront / (8760 x years), as vantage does


def price_for(
    catalog: Catalog, instance_id: str, option: PurchaseOption | None = None, region: str | None = None
) -> Price | None:
    """The price that applies to `instance_id`, or None when nobody has published one.

    A user's price (option "user": `--price INSTANCE=USD` or a user prices file) always applies,
    whatever `option` and `region` ask for: the user has said what they pay. Otherwise the price of
    `option` is returned or, with no option, the on-demand price. Capacity Block rates are never a
    default: the bundled ones are a late-2024 snapshot from before the June 2025 on-demand price
    cut, several for another region, and a Capacity Block is a reservation bought ahead for a fixed
    window, so falling back to one would quietly mix stale, other-region prices into comparisons of
    list prices (ask for option "capacity_block" to use them). An instance with no on-demand price
    is therefore unpriced by default.

    Within the other options, rows keep the catalog's order (the bundled file lists us-east-1 first);
    among user rows the last one wins (one in `region` if there is one). An unknown `option`, or a
    `region` no price row has, raises InputError naming the valid values.
    """
    if instance_id not in catalog.instances:
        raise UnknownNameError("instance", instance_id, catalog.instances)
    if option is not None and option not in PURCHASE_OPTIONS:
        raise UnknownNameError(
            "purchase option", str(option), PURCHASE_OPTIONS, f"pass one of: {', '.join(PURCHASE_OPTIONS)}."
        )
    if region is not None:
        regions = sorted({p.region for p in catalog.prices})
        if region not in regions:
            raise UnknownNameError(
                "price region", region, regions, f"pass a region that has prices: {', '.join(regions)}."
            )
    rows = [p for p in catalog.prices if p.instance == instance_id]
    user = [p for p in rows if p.option == "user"]
    if user:
        return ([p for p in user if p.region == region] or user)[-1]
    rows = [p for p in rows if region is None or p.region == region]
    for wanted in (option,) if option is not None else DEFAULT_PREFERENCE:
        matches = [p for p in rows if p.option == wanted]
        if matches:
            return matches[0]
    return None


def parse_price_overrides(
    items: list[str], known: Catalog | Collection[str] | None = None
) -> dict[str, float]:
    """Parse `--price INSTANCE=USD` strings into {instance: usd_per_hour}, checking every part.

    `known` (a catalog or its instance ids) defaults to the bundled catalog.
    """
    if known is None:
        from silica.catalog.loader import load_catalog

        known = load_catalog()
    if isinstance(known, Catalog):
        known = known.instances
    fix = "write it as INSTANCE=USD_PER_HOUR, e.g. --price p5.48xlarge=40.5"
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise InputError(f"Bad price override {item!r}.", fix + ".")
        try:
            usd = float(value)
        except ValueError:
            raise InputError(f"Bad price override {item!r}: {value!r} is not a number.", fix + ".") from None
        if not math.isfinite(usd) or usd <= 0:
            raise InputError(
                f"Bad price override {item!r}: the price must be a positive number of USD per hour.", fix
            )
        if name not in known:
            raise UnknownNameError("instance", name, known)
        from silica.limits import check

        if name in out:  # last-wins would hide a typo in one of them
            raise InputError(
                f"--price {name} is given twice ({out[name]:g} and {usd:g}).", "keep one of them."
            )
        out[name] = check("price_usd_per_hour", usd, f"--price {name}")
    return out


def import_offer_file(path: Path, known: Collection[str] | None = None) -> list[Price]:
    """Linux, shared-tenancy on-demand and 1-yr Standard No-Upfront reserved prices from an offer file.

    Follows the filter recipe in catalog_notes.md section 3 (the one ec2instances.info uses) and keeps
    only instance types in the catalog. The file is streamed, so a multi-GB region file is fine.
    """
    if known is None:
        from silica.catalog.loader import load_catalog

        known = load_catalog().instances
    path = Path(path)
    from silica.catalog._offer import read_offer

    offer = read_offer(path, known)
    source = f"AWS Price List offer file {path.name} (AmazonEC2 version {offer.version or '?'})"
    return offer_sku_prices(path, offer.skus, source, offer.publication_date[:10])


def offer_sku_prices(path: Path, skus: Iterable[OfferSku], source: str, as_of: str) -> list[Price]:
    """Prices of kept SKUs (offer-file layout terms), one rate per instance, region and option.

    Shared by the offer-file and `aws pricing get-products` importers, which hold the same terms.
    """
    prices: dict[tuple[str, str, str], Price] = {}
    for sku in skus:
        for option, usd in _sku_prices(path, sku):
            key = (sku.instance, sku.region, option)
            if key in prices:
                continue  # one rate per instance type and region, as the recipe says; first SKU wins
            prices[key] = Price(
                instance=sku.instance,
                region=sku.region,
                option=option,
                usd_per_hour=usd,
                source=f"{source}, SKU {sku.sku}",
                as_of=as_of or sku.effective_date[:10],
                notes=_NOTES[option],
            )
    return sorted(prices.values(), key=lambda p: (p.instance, p.region, p.option))


_NOTES: dict[PurchaseOption, str] = {
    "on_demand": "Linux, shared tenancy, BoxUsage on-demand rate.",
    "reserved_1yr": "1-year Standard Reserved Instance, No Upfront, Linux: hourly rate + upfront / 8760. "
    "Not a Savings Plan rate.",
}


def _sku_prices(path: Path, sku: OfferSku) -> Iterable[tuple[PurchaseOption, float]]:
    for term in sku.on_demand:
        dims = [d for d in term.get("priceDimensions", {}).values() if d.get("unit") == "Hrs"]
        if len(dims) != 1:
            raise DataFileError(
                f"{path}: on-demand term of SKU {sku.sku} has {len(dims)} hourly price dimensions, expected 1.",
                "check that this is an AmazonEC2 offer file; ec2instances.info treats this as an error too.",
            )
        usd = _usd(path, sku.sku, dims[0])
        if usd > 0:  # zero rates are placeholders, as in the ec2instances.info scraper
            yield "on_demand", usd
            break
    for term in sku.reserved:
        attrs = term.get("termAttributes", {})
        if (attrs.get("LeaseContractLength"), attrs.get("OfferingClass"), attrs.get("PurchaseOption")) != (
            "1yr",
            "standard",
            "No Upfront",
        ):
            continue
        hourly = upfront = 0.0
        for dim in term.get("priceDimensions", {}).values():
            if dim.get("unit") == "Hrs":
                hourly += _usd(path, sku.sku, dim)
            elif dim.get("unit") == "Quantity":
                upfront += _usd(path, sku.sku, dim)
        usd = hourly + upfront / (HOURS_PER_YEAR * 1)
        if usd > 0:
            yield "reserved_1yr", usd
            break


def _usd(path: Path, sku: str, dim: dict[str, object]) -> float:
    per_unit = dim.get("pricePerUnit")
    text = per_unit.get("USD") if isinstance(per_unit, dict) else None
    try:
        value = float(str(text))
    except ValueError:
        raise DataFileError(f"{path}: SKU {sku} has a price that is not a number: {text!r}.", None) from None
    if not math.isfinite(value) or value < 0:
        raise DataFileError(f"{path}: SKU {sku} has an invalid price {text!r}.", None)
    return value


def write_prices(prices: Iterable[Price], path: Path) -> None:
    """Write prices as a CSV in the bundled schema, ready to pass back as `prices_path`.

    Atomic (silica._files): the rows go to a uniquely named temporary file next to `path`, which then
    replaces `path`, so a failed write (disk full, an error while producing `prices`) leaves an
    existing file as it was, and concurrent writers never share a temporary file.
    """
    from silica._files import atomic_open

    columns = [f.name for f in fields(Price)]
    with atomic_open(Path(path), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for price in prices:
            writer.writerow({k: ("" if v is None else v) for k, v in asdict(price).items()})
