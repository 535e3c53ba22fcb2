"""Live price refresh from the AWS Price List Query API (boto3's `pricing` client), opt-in.

Silica never reaches the network on its own: this runs only when the user calls
`silica catalog refresh-prices`, with their AWS credentials. It asks for the accelerated instance
types in the catalog, Linux, shared tenancy, in one region, pages through `GetProducts`, and keeps
the same on-demand and 1-year reserved rates the offer-file importer keeps (the responses hold the
offer file's product and terms layout). The result is written as a dated prices CSV, so later runs
work offline from it (`--prices FILE`, `SILICA_PRICES` or `prices` in config.toml).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from silica.catalog.schema import Price
from silica.errors import DataFileError, InputError

__all__ = ["default_cache_path", "refresh_prices"]

# The Price List Query API is served from these endpoints only (AWS docs, "Using the AWS Price List
# Query API", read 2026-12-01); any of them answers for every region's prices.
PRICING_ENDPOINT_REGION = "us-east-1"
MAX_PAGES = 200  # 100 products a page; a region's accelerated Linux types need a handful


def default_cache_path(region: str, today: dt.date | None = None) -> Path:
    """Where a refresh is kept: the user cache dir, one dated file per region."""
    from platformdirs import user_cache_dir

    day = (today or dt.date.today()).isoformat()
    return Path(user_cache_dir("silica")) / f"prices-{region}-{day}.csv"


def refresh_prices(region: str, instances: Collection[str], client: Any | None = None) -> list[Price]:
    """On-demand and 1-yr reserved prices for `instances` in `region`, fetched now from AWS.

    `client` is a boto3 `pricing` client (tests pass one with recorded responses); by default one is
    made with the user's credentials.
    """
    from silica.catalog._offer import OfferSku, keep_product
    from silica.catalog.prices import offer_sku_prices

    if not instances:
        raise InputError("No instance types to refresh.", "name at least one with --instance.")
    client = client or _client()
    filters = [
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
        {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
        {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
        {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
        {"Type": "ANY_OF", "Field": "instanceType", "Value": ",".join(sorted(instances))},
    ]
    skus: dict[str, OfferSku] = {}
    dates: list[str] = []
    token: str | None = None
    for _ in range(MAX_PAGES):
        kwargs: dict[str, Any] = {"ServiceCode": "AmazonEC2", "Filters": filters, "FormatVersion": "aws_v1"}
        if token:
            kwargs["NextToken"] = token
        page = _call(client, kwargs)
        for text in page.get("PriceList", []):
            item = json.loads(text) if isinstance(text, str) else text
            kept = keep_product(item.get("product"), instances)
            if kept is None or kept[1] != region:  # the filter asks for one region; keep only that one
                continue
            sku_id = str(item["product"].get("sku", f"{kept[0]}/{kept[1]}"))
            sku = skus.setdefault(sku_id, OfferSku(sku=sku_id, instance=kept[0], region=kept[1]))
            terms = item.get("terms") or {}
            for term_type, target in (("OnDemand", sku.on_demand), ("Reserved", sku.reserved)):
                target.extend(t for t in (terms.get(term_type) or {}).values() if isinstance(t, dict))
            if isinstance(item.get("publicationDate"), str):
                dates.append(item["publicationDate"][:10])
        token = page.get("NextToken")
        if not token:
            break
    fetched = dt.date.today().isoformat()
    source = f"AWS Price List Query API GetProducts ({region}), fetched {fetched}"
    return offer_sku_prices(
        Path(f"pricing:{region}"), skus.values(), source, max(dates) if dates else fetched
    )


def _client() -> Any:
    try:
        import boto3
    except ImportError:
        raise InputError(
            "Refreshing prices needs boto3.", "pip install 'silica[aws]' (and AWS credentials)."
        ) from None
    return boto3.client("pricing", region_name=PRICING_ENDPOINT_REGION)


def _call(client: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        page = client.get_products(**kwargs)
    except Exception as err:  # botocore: no credentials, access denied, throttled, no network
        reason = " ".join(str(err).split())[:240]
        raise DataFileError(
            f"AWS Price List query failed: {reason}.",
            "check your AWS credentials (aws sts get-caller-identity) and network; or import an offer file "
            "or `aws pricing get-products` output with `silica catalog import-prices`.",
        ) from None
    if not isinstance(page, dict):
        raise DataFileError("AWS Price List query returned an unexpected response.", None)
    return page
