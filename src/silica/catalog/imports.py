"""Prices and instance facts from the files users already have.

Three price formats, told apart by their content, not their name:
- an AWS Price List AmazonEC2 offer file (`index.json` of a region; streamed, see `_offer`),
- the output of `aws pricing get-products --service-code AmazonEC2 ...` (one page or several, as the
  CLI prints them: `{"FormatVersion": "aws_v1", "PriceList": ["<json string>", ...], "NextToken": ...}`;
  each PriceList string is one product with its terms, in the offer file's layout),
- a SkyPilot AWS catalog CSV (`InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,
  Price,SpotPrice,Region,AvailabilityZone`, one row per availability zone).
And one hardware format: `aws ec2 describe-instance-types` JSON (`{"InstanceTypes": [...]}`), read to
check the bundled instance facts (chips, vCPUs, memory) against what AWS reports for the user's account.

The same filter applies to every price format: Linux, shared tenancy, on-demand (and 1-year
reserved, or spot where the format has it); only instance types in the catalog are kept.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from silica.catalog._offer import OfferSku, keep_product
from silica.catalog.schema import Catalog, Price
from silica.errors import DataFileError

__all__ = [
    "InstanceCheck",
    "PriceFormat",
    "check_instance_types",
    "detect_price_format",
    "import_get_products",
    "import_prices",
    "import_skypilot_csv",
]

PriceFormat = Literal["offer", "get-products", "skypilot"]
SKYPILOT_COLUMNS = ("InstanceType", "Price", "Region")
MAX_JSON_BYTES = 256 * 1024 * 1024  # get-products and describe-instance-types outputs are MBs, not GBs


def detect_price_format(path: Path) -> PriceFormat:
    """Which of the three price formats `path` holds, from its first bytes."""
    head = _head(path)
    stripped = head.lstrip()
    if stripped.startswith(("{", "[")):
        if '"PriceList"' in head or '"FormatVersion"' in head:
            return "get-products"
        return "offer"
    first_line = stripped.splitlines()[0] if stripped else ""
    if all(col in first_line.split(",") for col in SKYPILOT_COLUMNS):
        return "skypilot"
    raise DataFileError(
        f"{path}: not a price file Silica knows (first line {first_line[:60]!r}).",
        "pass an AWS Price List offer file (index.json), `aws pricing get-products` JSON output, or a "
        "SkyPilot AWS catalog CSV (vms.csv).",
    )


def import_prices(path: Path, known: Collection[str] | None = None) -> tuple[PriceFormat, list[Price]]:
    """Prices from any of the three formats, with the format found."""
    from silica._files import MAX_NESTING, check_size
    from silica.catalog.prices import import_offer_file

    path = Path(path)
    if path.is_dir():
        raise DataFileError(f"{path} is a directory, not a price file.", "pass a JSON or CSV price file.")
    fmt = detect_price_format(path)
    if fmt != "offer":  # an offer file is streamed; the other two are read whole
        check_size(path, "price file")
    try:
        if fmt == "offer":
            return fmt, import_offer_file(path, known)
        if fmt == "get-products":
            return fmt, import_get_products(path, known)
        return fmt, import_skypilot_csv(path, known)
    except RecursionError:
        raise DataFileError(
            f"{path}: JSON nested deeper than any price file ({MAX_NESTING}+ levels).",
            "pass the offer file or the AWS CLI's output as it is.",
        ) from None
    except UnicodeDecodeError as err:
        raise DataFileError(
            f"{path} is not UTF-8 text (byte {err.start}: {err.reason}).", "pass the file as AWS wrote it."
        ) from None


def import_get_products(path: Path, known: Collection[str] | None = None) -> list[Price]:
    """On-demand and 1-yr reserved prices from `aws pricing get-products` output.

    Accepts one page, a JSON list of pages, or pages written one after another (as a shell loop over
    NextToken appends them).
    """
    from silica.catalog.prices import offer_sku_prices

    known = _known(known)
    pages = _json_values(path)
    skus: dict[str, OfferSku] = {}
    dates: list[str] = []
    for page in pages:
        items = page.get("PriceList") if isinstance(page, dict) else None
        if not isinstance(items, list):
            raise DataFileError(
                f"{path}: a page has no 'PriceList' list; this is not `aws pricing get-products` output.",
                "run `aws pricing get-products --service-code AmazonEC2 --region us-east-1 "
                "--filters ... > prices.json` and pass that file.",
            )
        for item in items:
            product = _price_list_item(path, item)
            kept = keep_product(product.get("product"), known)
            if kept is None:
                continue
            sku_id = str(product["product"].get("sku", f"{kept[0]}/{kept[1]}"))
            sku = skus.setdefault(sku_id, OfferSku(sku=sku_id, instance=kept[0], region=kept[1]))
            raw_terms = product.get("terms")
            terms: dict[str, Any] = raw_terms if isinstance(raw_terms, dict) else {}
            for term_type, target in (("OnDemand", sku.on_demand), ("Reserved", sku.reserved)):
                group = terms.get(term_type)
                if isinstance(group, dict):
                    target.extend(t for t in group.values() if isinstance(t, dict))
            if isinstance(product.get("publicationDate"), str):
                dates.append(product["publicationDate"][:10])
    as_of = max(dates) if dates else ""
    source = f"aws pricing get-products output {path.name}"
    return offer_sku_prices(path, skus.values(), source, as_of)


def import_skypilot_csv(path: Path, known: Collection[str] | None = None) -> list[Price]:
    """On-demand prices (the `Price` column) and spot prices (median of the zones' `SpotPrice`) per region.

    The CSV carries no date, so `as_of` is the file's modification date and the notes say so.
    """
    known = _known(known)
    text = _read_text(path)
    reader = csv.DictReader(text.splitlines())
    from silica._files import check_columns

    check_columns(path, reader.fieldnames or [])
    missing = [c for c in SKYPILOT_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise DataFileError(
            f"{path}: no column {', '.join(missing)}; not a SkyPilot AWS catalog CSV.",
            "pass catalogs/vN/aws/vms.csv from the SkyPilot catalog (~/.sky/catalogs/.../aws/vms.csv).",
        )
    on_demand: dict[tuple[str, str], float] = {}
    spot: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in reader:
        instance, region = (row.get("InstanceType") or "").strip(), (row.get("Region") or "").strip()
        if instance not in known or not region:
            continue
        where = f"{path.name} line {reader.line_num}"
        price = _usd(row.get("Price"), where)
        if price is not None:
            on_demand.setdefault((instance, region), price)
        spot_price = _usd(row.get("SpotPrice"), where)
        if spot_price is not None:
            spot[(instance, region)].append(spot_price)
    as_of = dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC).date().isoformat()
    source = f"SkyPilot AWS catalog CSV {path.name}"
    dated = f"The CSV is undated; as_of is the file's modification date ({as_of})."
    prices = [
        Price(
            instance=i,
            region=r,
            option="on_demand",
            usd_per_hour=usd,
            source=source,
            as_of=as_of,
            notes=f"Linux on-demand rate as SkyPilot lists it. {dated}",
        )
        for (i, r), usd in on_demand.items()
    ]
    prices += [
        Price(
            instance=i,
            region=r,
            option="spot",
            usd_per_hour=statistics.median(values),
            source=source,
            as_of=as_of,
            notes=f"Median spot rate over {len(values)} availability zone(s). {dated}",
        )
        for (i, r), values in spot.items()
    ]
    return sorted(prices, key=lambda p: (p.instance, p.region, p.option))


@dataclass(frozen=True)
class InstanceCheck:
    """One accelerator instance type from describe-instance-types, held against the catalog."""

    instance: str
    accelerator: str  # as AWS names it: "H100", "Inferentia2", "Trainium2"
    chips: int
    vcpus: int | None
    memory_gib: float | None
    accelerator_memory_gib: float | None
    in_catalog: bool
    differences: tuple[str, ...]  # "chips: catalog 8, AWS 16"; empty when everything matches

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "differences": list(self.differences)}


def check_instance_types(path: Path, catalog: Catalog) -> list[InstanceCheck]:
    """Accelerator instance types in `aws ec2 describe-instance-types` output, each checked against the catalog."""
    checks: list[InstanceCheck] = []
    for page in _json_values(path):
        types = page.get("InstanceTypes") if isinstance(page, dict) else None
        if not isinstance(types, list):
            raise DataFileError(
                f"{path}: no 'InstanceTypes' list; this is not `aws ec2 describe-instance-types` output.",
                "run `aws ec2 describe-instance-types --instance-types p5.48xlarge trn2.48xlarge ... > types.json`.",
            )
        if types and not any(isinstance(i, dict) and isinstance(i.get("InstanceType"), str) for i in types):
            raise DataFileError(
                f"{path}: 'InstanceTypes' holds no instance type entries (objects with an 'InstanceType').",
                "pass `aws ec2 describe-instance-types ... --output json` as the AWS CLI wrote it.",
            )
        for item in types:
            check = _check_one(item, catalog)
            if check is not None:
                checks.append(check)
    return sorted(checks, key=lambda c: c.instance)


def _check_one(item: Any, catalog: Catalog) -> InstanceCheck | None:
    if not isinstance(item, dict) or not isinstance(item.get("InstanceType"), str):
        return None
    devices, total_mib = [], None
    for info_key, list_key, total_key in (
        ("GpuInfo", "Gpus", "TotalGpuMemoryInMiB"),
        ("NeuronInfo", "NeuronDevices", "TotalNeuronDeviceMemoryInMiB"),
    ):
        info = item.get(info_key)
        if isinstance(info, dict) and isinstance(info.get(list_key), list):
            devices = [d for d in info[list_key] if isinstance(d, dict)]
            total_mib = info.get(total_key)
            break
    if not devices:
        return None  # not an accelerator instance
    name = str(devices[0].get("Name", "?"))
    chips = sum(int(d.get("Count") or 0) for d in devices)
    vcpus = (item.get("VCpuInfo") or {}).get("DefaultVCpus")
    mem_mib = (item.get("MemoryInfo") or {}).get("SizeInMiB")
    memory_gib = None if mem_mib is None else float(mem_mib) / 1024
    acc_gib = None if not isinstance(total_mib, int | float) else float(total_mib) / 1024
    known = catalog.instances.get(item["InstanceType"])
    diffs: list[str] = []
    if known is not None:
        if known.chips != chips:
            diffs.append(f"chips: catalog {known.chips}, AWS {chips}")
        if known.vcpus is not None and vcpus is not None and known.vcpus != vcpus:
            diffs.append(f"vCPUs: catalog {known.vcpus}, AWS {vcpus}")
        if (
            known.memory_gib is not None
            and memory_gib is not None
            and abs(known.memory_gib - memory_gib) > 0.5
        ):
            diffs.append(f"memory GiB: catalog {known.memory_gib:g}, AWS {memory_gib:g}")
    return InstanceCheck(
        instance=item["InstanceType"],
        accelerator=name,
        chips=chips,
        vcpus=vcpus if isinstance(vcpus, int) else None,
        memory_gib=memory_gib,
        accelerator_memory_gib=acc_gib,
        in_catalog=known is not None,
        differences=tuple(diffs),
    )


def _known(known: Collection[str] | None) -> Collection[str]:
    if known is not None:
        return known
    from silica.catalog.loader import load_catalog

    return load_catalog().instances


def _head(path: Path, size: int = 4096) -> str:
    from silica._files import read_head

    raw = read_head(path, size, "price file", "a JSON or CSV price file")
    if b"\x00" in raw:
        raise DataFileError(f"{path} is a binary file, not a price file.", "pass a JSON or CSV price file.")
    return raw.decode("utf-8", errors="replace")


def _read_text(path: Path) -> str:
    from silica._files import read_bytes

    try:
        size = path.stat().st_size
    except (OSError, ValueError):
        size = 0
    if size > MAX_JSON_BYTES:
        raise DataFileError(
            f"{path} is {size / 2**20:,.0f} MiB; the limit for this format is {MAX_JSON_BYTES // 2**20} MiB.",
            "filter the output to the instance types you use (e.g. --filters on instanceType).",
        )
    data = read_bytes(path, "price file", "a JSON or CSV price file", limit=MAX_JSON_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DataFileError(
            f"{path} is not UTF-8 text.", "pass the JSON or CSV file as the tool wrote it."
        ) from None


def _json_values(path: Path) -> list[Any]:
    """One JSON value, a list of pages, or several values one after another."""
    text = _read_text(Path(path))
    from silica._files import MAX_NESTING, _depth, json_decoder

    decoder = json_decoder(path)  # NaN, huge integers and overflowing floats: one line each
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise DataFileError(
                f"{path}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}).",
                "pass the file exactly as the AWS CLI wrote it (--output json).",
            ) from None
        except RecursionError:
            raise DataFileError(
                f"{path}: JSON nested too deeply.", "pass the AWS CLI's output as it is."
            ) from None
        if _depth(value) > MAX_NESTING:
            raise DataFileError(f"{path}: JSON nested too deeply.", "pass the AWS CLI's output as it is.")
        values.extend(value if isinstance(value, list) else [value])
    if not values:
        raise DataFileError(f"{path} is empty.", "pass the AWS CLI's JSON output.")
    return values


def _price_list_item(path: Path, item: Any) -> dict[str, Any]:
    if isinstance(item, str):  # the CLI and boto3 return each product as a JSON string
        from silica._files import parse_json

        try:
            item = parse_json(item, "a PriceList entry", "the AWS CLI's get-products output")
        except DataFileError as err:
            raise DataFileError(
                f"{path}: {err.problem.replace(' is not JSON: not', ' is not')}", None
            ) from None
    if not isinstance(item, dict):
        raise DataFileError(f"{path}: a PriceList entry is a {type(item).__name__}, not a product.", None)
    return item


def _usd(text: str | None, where: str) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise DataFileError(
            f"{where}: price {text!r} is not a number.", "pass the CSV as SkyPilot wrote it."
        ) from None
    if not math.isfinite(value) or value < 0:
        raise DataFileError(
            f"{where}: price {text!r} is not a valid rate.", "pass the CSV as SkyPilot wrote it."
        )
    return value if value > 0 else None
