"""The hardware catalog: chips, EC2 instances and UltraServers, and what they cost per hour.

Everything here is read from the data files in `silica/data` on first use (never at import) and
returned as frozen rows; prices can be overridden by the user or imported from AWS's offer files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from silica.catalog.loader import load_catalog
from silica.catalog.prices import import_offer_file, parse_price_overrides, price_for, write_prices
from silica.catalog.schema import Catalog, Chip, Instance, Price, PurchaseOption
from silica.catalog.systems import Placement, chip_system, is_reference_system, load_systems, resolve_on
from silica.errors import UnknownNameError

if TYPE_CHECKING:
    from silica.catalog.listing import InstanceRow, chip_rows, instance_rows

__all__ = [
    "Catalog",
    "Chip",
    "Instance",
    "InstanceRow",
    "Placement",
    "Price",
    "PurchaseOption",
    "chip_rows",
    "chip_system",
    "get_chip",
    "get_instance",
    "import_offer_file",
    "instance_rows",
    "is_reference_system",
    "load_catalog",
    "load_systems",
    "parse_price_overrides",
    "price_for",
    "resolve_on",
    "write_prices",
]


def get_chip(catalog: Catalog, chip_id: str) -> Chip:
    """The chip with id `chip_id`; a misspelt id fails with the nearest known ids."""
    try:
        return catalog.chips[chip_id]
    except KeyError:
        raise UnknownNameError("chip", chip_id, catalog.chips) from None


def get_instance(catalog: Catalog, instance_id: str) -> Instance:
    """The instance (or UltraServer) with id `instance_id`; a misspelt id fails with the nearest ids."""
    try:
        return catalog.instances[instance_id]
    except KeyError:
        raise UnknownNameError("instance", instance_id, catalog.instances) from None


def __getattr__(name: str) -> Any:
    """The listing (what `silica catalog` shows) loads on first use: planning never needs it."""
    if name in ("InstanceRow", "chip_rows", "instance_rows"):
        from silica.catalog import listing

        return getattr(listing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
