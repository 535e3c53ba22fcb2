"""Prices and instance facts from the files users already have (recorded files in tests/data/imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from silica.catalog import import_offer_file, load_catalog
from silica.catalog.imports import check_instance_types, detect_price_format, import_prices
from silica.errors import DataFileError

DATA = Path(__file__).resolve().parent / "data"
REC = DATA / "imports"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _key(prices: list[Any]) -> set[tuple[str, str, str, float]]:
    return {(p.instance, p.region, p.option, round(p.usd_per_hour, 6)) for p in prices}


def test_formats_are_told_apart_by_content() -> None:
    assert detect_price_format(DATA / "offer_sample.json") == "offer"
    assert detect_price_format(REC / "get_products_ec2.json") == "get-products"
    assert detect_price_format(REC / "skypilot_aws_vms_excerpt.csv") == "skypilot"


def test_get_products_pages_give_the_same_prices_as_the_offer_file_they_hold() -> None:
    kind, from_api = import_prices(REC / "get_products_ec2.json")
    from_offer = import_offer_file(DATA / "offer_sample.json")
    assert kind == "get-products"
    assert _key(from_api) == _key(from_offer)
    assert ("p5.48xlarge", "us-east-1", "on_demand", 55.04) in _key(from_api)
    assert all(p.as_of == "2026-01-21" and "get-products" in p.source for p in from_api)


def test_skypilot_csv_gives_regional_on_demand_and_median_spot_for_known_types_only() -> None:
    kind, prices = import_prices(REC / "skypilot_aws_vms_excerpt.csv")
    assert kind == "skypilot"
    keys = _key(prices)
    # Rows copied from skypilot-catalog: us-east-1 inf1.24xlarge Price 4.721, five zones' spot prices.
    assert ("inf1.24xlarge", "us-east-1", "on_demand", 4.721) in keys
    assert (
        "inf1.24xlarge",
        "us-east-1",
        "spot",
        1.2242,
    ) in keys  # median of 1.3528 3.9013 1.2242 1.1577 0.9319
    assert ("inf1.6xlarge", "eu-west-1", "on_demand", 1.315) in keys
    assert not any(p.instance.startswith(("a1.", "m5a.")) for p in prices)  # not in the catalog
    assert all("modification date" in p.notes for p in prices)  # the CSV has no date; say so


def test_describe_instance_types_finds_the_difference_and_the_missing_type() -> None:
    checks = {
        c.instance: c for c in check_instance_types(REC / "describe_instance_types.json", load_catalog())
    }
    assert set(checks) == {
        "p5.48xlarge",
        "inf2.xlarge",
        "trn2.48xlarge",
        "g4dn.xlarge",
    }  # m7i has no accelerator
    assert checks["p5.48xlarge"].differences == ()
    assert checks["inf2.xlarge"].differences == ("vCPUs: catalog 4, AWS 8",)
    assert not checks["g4dn.xlarge"].in_catalog
    assert checks["trn2.48xlarge"].chips == 16 and checks["trn2.48xlarge"].accelerator_memory_gib == 16 * 96


def _conforms(value: Any, shape: Any, where: str = "") -> None:
    """Every key of `value` is a member of botocore's output shape, recursively (types checked loosely)."""
    if shape.type_name == "structure":
        assert isinstance(value, dict), where
        for key, item in value.items():
            assert key in shape.members, f"{where}.{key} is not in {shape.name}"
            _conforms(item, shape.members[key], f"{where}.{key}")
    elif shape.type_name == "list":
        assert isinstance(value, list), where
        for i, item in enumerate(value):
            _conforms(item, shape.member, f"{where}[{i}]")
    elif shape.type_name == "string":
        assert isinstance(value, str), where
    elif shape.type_name in ("integer", "long"):
        assert isinstance(value, int), where


def test_constructed_recordings_have_the_aws_response_shapes() -> None:
    botocore_session = pytest.importorskip("botocore.session")
    session = botocore_session.get_session()
    pricing = session.get_service_model("pricing").operation_model("GetProducts").output_shape
    ec2 = session.get_service_model("ec2").operation_model("DescribeInstanceTypes").output_shape
    text = (REC / "get_products_ec2.json").read_text(encoding="utf-8")
    decoder, pos, pages = json.JSONDecoder(), 0, []
    while pos < len(text.rstrip()):
        page, pos = decoder.raw_decode(text, pos)
        pages.append(page)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    assert len(pages) == 2
    for page in pages:
        _conforms(page, pricing, "GetProducts")
    _conforms(
        json.loads((REC / "describe_instance_types.json").read_text(encoding="utf-8")),
        ec2,
        "DescribeInstanceTypes",
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\x01binary", "binary file"),
        (b'{"PriceList": 5}', "no 'PriceList' list"),
        (b'{"FormatVersion": "aws_v1", "PriceList": ["{not json"]}', "PriceList entry is not valid JSON"),
        (b"InstanceType,Price,Region\ninf1.xlarge,abc,us-east-1\n", "is not a number"),
        (b"name,cost\nx,1\n", "not a price file Silica knows"),
    ],
)
def test_bad_price_files_are_one_clear_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "prices.in"
    path.write_bytes(content)
    with pytest.raises(DataFileError, match=message):
        import_prices(path)
    env = dict(os.environ, PYTHONPATH=SRC)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "silica.cli",
            "catalog",
            "import-prices",
            str(path),
            "--out",
            str(tmp_path / "o.csv"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not (tmp_path / "o.csv").exists()


def test_check_instances_refuses_other_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"Reservations": []}', encoding="utf-8")
    with pytest.raises(DataFileError, match="not `aws ec2 describe-instance-types` output"):
        check_instance_types(path, load_catalog())


def _pages() -> list[dict[str, Any]]:
    text = (REC / "get_products_ec2.json").read_text(encoding="utf-8")
    decoder, pos, pages = json.JSONDecoder(), 0, []
    while pos < len(text.rstrip()):
        page, pos = decoder.raw_decode(text, pos)
        pages.append(page)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return pages


def test_refresh_pages_through_recorded_responses_with_the_documented_filters() -> None:
    """botocore's Stubber replays the recorded GetProducts pages; nothing leaves the machine."""
    boto3 = pytest.importorskip("boto3")
    from botocore.stub import ANY, Stubber

    from silica.catalog.refresh import refresh_prices

    client = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    pages = _pages()
    with Stubber(client) as stub:
        stub.add_response(
            "get_products", pages[0], {"ServiceCode": "AmazonEC2", "Filters": ANY, "FormatVersion": "aws_v1"}
        )
        stub.add_response(
            "get_products",
            pages[1],
            {
                "ServiceCode": "AmazonEC2",
                "Filters": ANY,
                "FormatVersion": "aws_v1",
                "NextToken": "token-page-2",
            },
        )
        prices = refresh_prices("us-east-1", ["p5.48xlarge", "inf2.xlarge", "trn1.32xlarge"], client=client)
        stub.assert_no_pending_responses()
    expected = [p for p in import_offer_file(DATA / "offer_sample.json") if p.region == "us-east-1"]
    assert _key(prices) == _key(expected) and len(expected) >= 3
    assert all("AWS Price List Query API" in p.source for p in prices)


def test_refresh_failure_is_one_line() -> None:
    boto3 = pytest.importorskip("boto3")
    from botocore.stub import Stubber

    from silica.catalog.refresh import refresh_prices

    client = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    with Stubber(client) as stub:
        stub.add_client_error("get_products", "AccessDeniedException", "User is not authorized")
        with pytest.raises(DataFileError, match=r"AWS Price List query failed: .*not authorized"):
            refresh_prices("us-east-1", ["p5.48xlarge"], client=client)
