"""Stream an AWS Price List AmazonEC2 offer file, keeping only the SKUs Silica can price.

A region offer file is hundreds of MB to GB of JSON, so `json.load` would hold all of it in memory.
This walks the top-level objects incrementally with the standard library's `JSONDecoder.raw_decode`,
decodes one product or one SKU's terms at a time, and keeps only what passes the filter recipe of
catalog_notes.md section 3 (the recipe ec2instances.info's scraper applies). No extra dependency.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from silica.errors import DataFileError

__all__ = ["Offer", "OfferSku", "read_offer"]

PRODUCT_FAMILIES = frozenset({"Compute Instance", "Compute Instance (bare metal)"})
# Attributes a plain Linux, shared-tenancy, pay-as-you-go instance hour has; anything else is a
# different product (Windows, Dedicated, reservation accounting, pre-installed SQL Server, ...).
REQUIRED_ATTRIBUTES = {
    "operatingSystem": "Linux",
    "preInstalledSw": "NA",
    "tenancy": "Shared",
    "licenseModel": "No License required",
    "capacitystatus": "Used",
}
TERM_TYPES = ("OnDemand", "Reserved")


@dataclass
class OfferSku:
    """One kept product with its raw terms (each a dict as AWS writes it)."""

    sku: str
    instance: str
    region: str
    on_demand: list[dict[str, Any]] = field(default_factory=list)
    reserved: list[dict[str, Any]] = field(default_factory=list)

    @property
    def effective_date(self) -> str:
        for term in (*self.on_demand, *self.reserved):
            if isinstance(term.get("effectiveDate"), str):
                return str(term["effectiveDate"])
        return ""


@dataclass
class Offer:
    version: str
    publication_date: str
    skus: list[OfferSku]


def keep_product(product: Any, known: Collection[str]) -> tuple[str, str] | None:
    """(instance type, region) when the product is a Linux on-demand instance hour Silica knows."""
    if not isinstance(product, dict) or product.get("productFamily") not in PRODUCT_FAMILIES:
        return None
    attrs = product.get("attributes")
    if not isinstance(attrs, dict) or any(attrs.get(k) != v for k, v in REQUIRED_ATTRIBUTES.items()):
        return None
    if "BoxUsage" not in str(attrs.get("usagetype", "")):  # other usage types break pricing (vantage)
        return None
    if attrs.get("marketoption", "OnDemand") != "OnDemand":
        return None
    instance = attrs.get("instanceType")
    region = attrs.get("regionCode") or attrs.get("location")
    if instance not in known or not isinstance(region, str):
        return None
    return str(instance), region


def read_offer(path: Path, known: Collection[str]) -> Offer:
    """The kept SKUs of the offer file at `path`, with their on-demand and reserved terms."""
    from silica._files import file_kind, read_head

    if file_kind(path) != "regular":  # streamed, not read whole: devices and folders refused first
        read_head(path, 0, "offer file", "an AWS price-list offer file")
    try:
        handle = path.open(encoding="utf-8")
    except OSError as err:
        raise DataFileError(
            f"Cannot read {path}: {err.strerror}.", "check the path of the offer file."
        ) from err
    header: dict[str, Any] = {}
    skus: dict[str, OfferSku] = {}
    seen_products = False
    with handle:
        stream = _Stream(handle, path)
        for key in stream.members():
            if key == "products":
                seen_products = True
                for sku in stream.members():
                    kept = keep_product(stream.value(), known)
                    if kept is not None:
                        skus[sku] = OfferSku(sku=sku, instance=kept[0], region=kept[1])
            elif key == "terms":
                for term_type in stream.members():
                    if term_type not in TERM_TYPES:
                        stream.value()
                        continue
                    for sku in stream.members():
                        terms = stream.value()
                        if sku in skus and isinstance(terms, dict):
                            target = skus[sku].on_demand if term_type == "OnDemand" else skus[sku].reserved
                            target.extend(t for t in terms.values() if isinstance(t, dict))
            else:
                header[key] = stream.value()
        stream.end()
    if header.get("offerCode", "AmazonEC2") != "AmazonEC2":
        raise DataFileError(
            f"{path}: offer file for {header['offerCode']!r}, not AmazonEC2.",
            "download the AmazonEC2 region file (catalog_notes.md section 3 shows where).",
        )
    if not seen_products:
        raise DataFileError(f"{path}: no 'products' object; this is not a Price List offer file.", None)
    return Offer(
        version=str(header.get("version", "")),
        publication_date=str(header.get("publicationDate", "")),
        skus=list(skus.values()),
    )


class _Stream:
    """Just enough of an incremental JSON reader: walk objects key by key, decode values whole."""

    CHUNK = 1 << 20

    def __init__(self, handle: TextIO, path: Path) -> None:
        self.handle = handle
        self.path = path
        self.buf = ""
        self.pos = 0
        self.dropped = 0  # characters discarded before `buf`, for error positions
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        if self.eof:
            return False
        # Read at least as much again as is pending, so one large value costs O(size), not O(size^2).
        chunk = self.handle.read(max(self.CHUNK, len(self.buf) - self.pos))
        if not chunk:
            self.eof = True
            return False
        self.dropped += self.pos
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0
        return True

    def _peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            raise self._error(f"expected {char!r}")
        self.pos += 1

    def _error(self, msg: str) -> DataFileError:
        return DataFileError(
            f"{self.path}: not valid JSON near character {self.dropped + self.pos}: {msg}.",
            "download the offer file again; it may be truncated.",
        )

    def value(self) -> Any:
        """Decode the next complete JSON value."""
        self._peek()
        while True:
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as err:
                if self._more():
                    continue
                raise self._error(err.msg) from None
            if end == len(self.buf) and self._more():
                continue  # a number at the end of the buffer may go on in the next chunk
            self.pos = end
            return obj

    def members(self) -> Iterator[str]:
        """Keys of the object that starts here; the caller must consume each value before the next key."""
        self._expect("{")
        if self._peek() == "}":
            self.pos += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise self._error("expected an object key")
            self._expect(":")
            yield key
            sep = self._peek()
            self.pos += 1
            if sep == "}":
                return
            if sep != ",":
                self.pos -= 1
                raise self._error("expected ',' or '}'")

    def end(self) -> None:
        if self._peek() != "":
            raise self._error("unexpected data after the top-level object")
