"""The hardware catalog: every data row loads, facts match the reference, errors point at the fix."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

import silica.catalog as cat
from silica.catalog import _offer, get_chip, get_instance, load_catalog, price_for
from silica.catalog.loader import DATA_DIR
from silica.catalog.schema import PURCHASE_OPTIONS, Chip, Instance, Price, PurchaseOption
from silica.cli._common import plain
from silica.errors import DataFileError, InputError, UnknownNameError

OFFER = Path(__file__).parent / "data" / "offer_sample.json"
GIB_PER_GB = 1e9 / 2**30


@pytest.fixture(scope="module")
def catalog() -> cat.Catalog:
    return load_catalog()


def _copy_data(tmp_path: Path) -> Path:
    for name in ("chips.csv", "instances.csv", "prices.csv"):
        shutil.copy(DATA_DIR / name, tmp_path / name)
    return tmp_path


# --- every row loads and carries its provenance ---------------------------------------------------


def test_public_names_are_pinned() -> None:
    assert set(cat.__all__) >= {
        "load_catalog",
        "price_for",
        "parse_price_overrides",
        "import_offer_file",
        "write_prices",
        "get_chip",
        "get_instance",
        "instance_rows",
        "chip_rows",
        "InstanceRow",
    }


def test_headers_are_exactly_the_schema_fields() -> None:
    for name, model in (("chips.csv", Chip), ("instances.csv", Instance), ("prices.csv", Price)):
        with (DATA_DIR / name).open(newline="") as handle:
            assert next(csv.reader(handle)) == [f.name for f in fields(model)], name


# Cells the direct conversion must either read as pydantic does or leave to pydantic (start-up path).
ODD_CELLS = (
    "8",
    "0",
    "-1",
    "1.5",
    "8.0",
    "1e3",
    "1E-2",
    "-0",
    "-0.0",
    "007",
    "+1",
    "1_0",
    ".5",
    "5.",
    "0x10",
    "inf",
    "-inf",
    "nan",
    "1e999",
    "abc",
    "aws",
    "AWS",
    "user",
    "on_demand",
    "true",
    None,
)


def _both(
    model: type[Chip] | type[Instance] | type[Price], values: dict[str, object]
) -> tuple[object, object]:
    from silica.catalog.loader import plain_row, pydantic_row

    fast = plain_row(model, values)
    try:
        slow: object = pydantic_row(model, values, Path("x.csv"), 2)
    except DataFileError as err:
        slow = str(err)
    return fast, slow


def test_the_direct_cell_reading_gives_what_pydantic_gives() -> None:
    """Every bundled row is read without pydantic (or start-up pays ~80 ms) and to the same row; an odd
    cell in any field is read to pydantic's value or left to pydantic (whose error then stands)."""
    from silica.catalog.loader import cell_values

    for name, model in (("chips.csv", Chip), ("instances.csv", Instance), ("prices.csv", Price)):
        with (DATA_DIR / name).open(newline="") as handle:
            rows = [cell_values(raw, model) for raw in csv.DictReader(handle)]
        for values in rows:
            fast, slow = _both(model, values)
            assert fast is not None and fast == slow, values
        for spec in fields(model):
            for cell in ODD_CELLS:
                fast, slow = _both(model, {**rows[0], spec.name: cell})
                if fast is not None:
                    assert fast == slow, (name, spec.name, cell)
                    assert type(getattr(fast, spec.name)) is type(getattr(slow, spec.name)), (spec.name, cell)
        assert _both(model, {**rows[0], "colour": "red"})[0] is None  # pydantic names the extra field
        assert "Extra inputs are not permitted" in str(_both(model, {**rows[0], "colour": "red"})[1])


def test_every_row_loads_with_source_and_date(catalog: cat.Catalog) -> None:
    rows: list[Chip | Instance | Price] = [
        *catalog.chips.values(),
        *catalog.instances.values(),
        *catalog.prices,
    ]
    assert catalog.chips and catalog.instances  # completeness: tests/test_catalog_complete.py
    for row in rows:
        assert row.source.strip() and row.as_of.strip(), row
    for inst in catalog.instances.values():
        assert inst.chip in catalog.chips, inst.id
    for price in catalog.prices:
        assert price.instance in catalog.instances, price
        assert isinstance(price.usd_per_hour, float) and price.usd_per_hour > 0


def test_chip_ids_cover_the_benchmarks(catalog: cat.Catalog) -> None:
    published = {"inferentia2", "trainium1", "trainium2", "a100-80gb", "h100", "h200", "gh200", "l40s"}
    published |= {"b200", "gb200", "gb300"}
    assert published <= set(catalog.chips)


def test_default_catalog_is_cached() -> None:
    assert load_catalog() is load_catalog()


# --- facts checked against /work/shared/reference (exact unless a tolerance is stated) ------------


@pytest.mark.parametrize(
    ("chip", "field", "expected"),
    [
        ("h100", "tflops_bf16", 989.4),  # datasheet 1,979 sparse / 2
        ("h100", "tflops_fp8", 1978.9),
        ("inferentia2", "hbm_gib", 32.0),  # Neuron docs state GiB
        ("trainium2", "tflops_fp8", 1299.0),
        ("trainium3", "tflops_fp4", 2517.0),  # MXFP4 runs at the MXFP8 rate
        ("b300", "tflops_fp4", 13500.0),  # Blackwell Ultra FP4 sparse:dense is 1.33:1
        ("a10g", "tflops_fp16", 70.0),
        ("gh200", "hbm_tb_per_s", 4.0),
        ("trainium1", "link_gb_per_s", 384.0),
        ("trainium2", "tp_cores_per_chip", 4),
        ("trainium1", "tp_cores_per_chip", 2),
        ("inferentia1", "tp_cores_per_chip", 4),
    ],
)
def test_chip_facts(catalog: cat.Catalog, chip: str, field: str, expected: float) -> None:
    assert getattr(catalog.chips[chip], field) == expected


def test_unit_conversions(catalog: cat.Catalog) -> None:
    # 820 GiB/s HBM is 0.880 TB/s decimal.
    assert catalog.chips["trainium1"].hbm_tb_per_s == pytest.approx(0.880, abs=1e-3)
    # NVIDIA's marketed HBM "GB" are not 10^9 bytes: the driver reports 81,559 MiB on an "80GB" H100,
    # 143,771 MiB on a "141GB" H200 and 183,359 MiB on a "180GB" B200 (chips.csv notes, with sources).
    assert catalog.chips["h100"].hbm_gib == pytest.approx(81559 / 1024, abs=1e-3)
    assert catalog.chips["h200"].hbm_gib == pytest.approx(143771 / 1024, abs=1e-3)
    assert catalog.chips["b200"].hbm_gib == pytest.approx(183359 / 1024, abs=1e-3)
    assert catalog.chips["h100"].hbm_gib > 80 * GIB_PER_GB  # the old decimal reading was too small


def test_unknowns_stay_unknown(catalog: cat.Catalog) -> None:
    assert catalog.chips["v100"].tflops_bf16 is None  # Volta has no BF16
    assert catalog.chips["v100"].tflops_fp16 == 125.0
    assert catalog.chips["trainium2"].tflops_int8 is None
    assert catalog.chips["trainium4"].hbm_gib is None
    assert catalog.chips["trainium4"].status == "announced"
    assert catalog.chips["trainium4"].confidence == "announced"
    assert catalog.chips["inferentia2"].tflops_bf16 == catalog.chips["inferentia2"].tflops_fp16 == 190.0


def test_instance_facts(catalog: cat.Catalog) -> None:
    assert catalog.instances["trn1n.32xlarge"].link_gb_per_s == 768.0
    assert catalog.instances["trn1.32xlarge"].link_gb_per_s is None  # same as the chip
    assert catalog.instances["trn3-gen2-ultraserver"].chips == 144
    assert catalog.instances["u-trn2x64"].kind == "ultraserver"
    assert catalog.instances["p6e-gb200.36xlarge"].kind == "instance"
    assert catalog.instances["p5.48xlarge"].network_gbps == 3200.0


def test_prices_match_the_reference(catalog: cat.Catalog) -> None:
    p5 = price_for(catalog, "p5.48xlarge")
    assert p5 is not None and (p5.usd_per_hour, p5.region, p5.option) == (55.04, "us-east-1", "on_demand")
    assert p5.as_of == "2026-01-21"
    assert "98.32" in p5.notes  # the pre-cut price is only mentioned, never used
    assert all(p.usd_per_hour != 98.32 for p in catalog.prices)
    ri = price_for(catalog, "p4d.24xlarge", "reserved_1yr")
    assert ri is not None and ri.usd_per_hour == 13.921094 and ri.region == "us-east-1"
    spot = price_for(catalog, "trn1.32xlarge", "spot")
    assert spot is not None and spot.usd_per_hour == 2.43 and "6.14" in spot.notes  # low end, range in notes
    cb = price_for(catalog, "trn1.32xlarge", "capacity_block")
    assert cb is not None and (cb.usd_per_hour, cb.region) == (15.49, "ap-southeast-4")
    b300 = price_for(catalog, "p6-b300.48xlarge")
    assert b300 is not None and (b300.usd_per_hour, b300.region) == (142.416, "us-west-2")


def test_unpriced_stays_unpriced(catalog: cat.Catalog) -> None:
    assert price_for(catalog, "trn2.48xlarge", "on_demand") is None
    assert price_for(catalog, "trn2.48xlarge") is None  # spot exists but is never the default
    assert price_for(catalog, "u-p6e-gb200x72") is None
    assert price_for(catalog, "p5e.48xlarge") is None  # Capacity Blocks only: never a default


def test_default_is_user_then_on_demand_only(catalog: cat.Catalog) -> None:
    assert cat.prices.DEFAULT_PREFERENCE == ("user", "on_demand")
    for ident in ("p5e.48xlarge", "trn1.32xlarge", "p4d.24xlarge", "p5.48xlarge"):
        chosen = price_for(catalog, ident)
        assert chosen is None or chosen.option == "on_demand", ident
    cb = price_for(catalog, "p5e.48xlarge", "capacity_block")  # still there when asked for
    assert cb is not None and (cb.usd_per_hour, cb.region) == (43.26, "us-east-2")
    assert price_for(catalog, "p5e.48xlarge", region="us-east-2") is None


def test_include_announced(catalog: cat.Catalog) -> None:
    assert "trainium4" not in load_catalog(include_announced=False).chips


# --- names and overrides ----------------------------------------------------------------------------


def test_misspelt_names_get_suggestions(catalog: cat.Catalog) -> None:
    with pytest.raises(UnknownNameError) as err:
        get_instance(catalog, "p5.48xlarg")
    assert "p5.48xlarge" in err.value.suggestions and "To fix" in str(err.value)
    with pytest.raises(UnknownNameError) as chip_err:
        get_chip(catalog, "trainium")
    assert chip_err.value.suggestions
    with pytest.raises(UnknownNameError):
        price_for(catalog, "trn2.48xl")
    assert get_chip(catalog, "h100").vendor == "nvidia"


@pytest.mark.parametrize(
    "bad",
    [
        "p5.48xlarge",  # no '='
        "p5.48xlarge=",  # no price
        "=40",  # no instance
        "p5.48xlarge=forty",  # not a number
        "p5.48xlarge=-3",  # negative
        "p5.48xlarge=0",  # zero
        "p5.48xlarge=nan",
        "p5.48xlarge=inf",
    ],
)
def test_bad_price_overrides(bad: str) -> None:
    with pytest.raises(InputError, match="To fix"):
        cat.parse_price_overrides([bad])


def test_price_override_unknown_instance() -> None:
    with pytest.raises(UnknownNameError) as err:
        cat.parse_price_overrides(["p5.48xlarg=40"])
    assert "p5.48xlarge" in err.value.suggestions


def test_price_override_wins() -> None:
    overrides = cat.parse_price_overrides(["p5.48xlarge=40.5", " trn2.48xlarge = 30 "])
    assert overrides == {"p5.48xlarge": 40.5, "trn2.48xlarge": 30.0}
    assert cat.parse_price_overrides(["p5.48xlarge=40.5"], load_catalog()) == {"p5.48xlarge": 40.5}
    catalog = load_catalog(overrides=overrides)
    p = price_for(catalog, "trn2.48xlarge")
    assert p is not None and (p.usd_per_hour, p.option, p.region, p.source) == (
        30.0,
        "user",
        "user",
        "user override",
    )
    assert {(p.option, p.usd_per_hour) for p in catalog.prices if p.instance == "p5.48xlarge"} >= {
        ("on_demand", 55.04),
        ("user", 40.5),
    }  # the list price is kept, but the user's applies
    assert price_for(load_catalog(), "trn2.48xlarge") is None  # the cached default is untouched


@pytest.mark.parametrize(
    ("option", "region"),
    [
        (None, None),
        (None, "us-east-1"),
        ("on_demand", None),
        ("on_demand", "us-east-1"),
        ("spot", "us-east-1"),
        ("capacity_block", None),
        ("reserved_1yr", "us-east-2"),
    ],
)
def test_user_price_applies_whatever_option_or_region(
    option: PurchaseOption | None, region: str | None
) -> None:
    catalog = load_catalog(overrides=cat.parse_price_overrides(["p5.48xlarge=1"]))
    p = price_for(catalog, "p5.48xlarge", option, region)
    assert p is not None and (p.usd_per_hour, p.option, p.region) == (1.0, "user", "user")


def test_user_price_from_a_file_applies_whatever_region(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("trn1.32xlarge: 9.5\n")
    catalog = load_catalog(prices_path=path)
    p = price_for(catalog, "trn1.32xlarge", "on_demand", "ap-southeast-4")
    assert p is not None and (p.usd_per_hour, p.option) == (9.5, "user")


@pytest.mark.parametrize("option", ["ondemand", "reserved", "", "USER"])
def test_unknown_option_is_an_error(catalog: cat.Catalog, option: str) -> None:
    with pytest.raises(InputError) as err:
        price_for(catalog, "p5.48xlarge", option)  # type: ignore[arg-type]
    assert err.value.fix is not None
    assert all(valid in err.value.fix for valid in PURCHASE_OPTIONS), err.value.fix


@pytest.mark.parametrize("region", ["eu-west-1", "us-east1", "", "US-EAST-1"])
def test_region_without_prices_is_an_error(catalog: cat.Catalog, region: str) -> None:
    with pytest.raises(InputError) as err:
        price_for(catalog, "p5.48xlarge", "on_demand", region)
    assert err.value.fix is not None
    for valid in ("us-east-1", "us-east-2", "us-west-2", "ap-southeast-4"):
        assert valid in err.value.fix, err.value.fix
    assert "\n" not in str(err.value)


def test_region_with_prices_but_not_for_this_instance_is_unpriced(catalog: cat.Catalog) -> None:
    # p5.48xlarge has no public price in eu-central-1 (the January 2026 data lists none there).
    assert price_for(catalog, "p5.48xlarge", "on_demand", "eu-central-1") is None


def test_user_prices_file_replaces_and_adds(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(
        "instance,region,option,usd_per_hour,source,as_of,notes\n"
        "p5.48xlarge,us-east-1,on_demand,50.0,our EDP rate card,2026-05-01,\n"
        "trn2.48xlarge,us-east-2,on_demand,35.76,our quote,2026-05-01,negotiated\n"
    )
    catalog = load_catalog(prices_path=path)
    p5 = price_for(catalog, "p5.48xlarge")
    assert p5 is not None and (p5.usd_per_hour, p5.source) == (50.0, "our EDP rate card")
    same = ("p5.48xlarge", "us-east-1", "on_demand")
    assert len([p for p in catalog.prices if (p.instance, p.region, p.option) == same]) == 1
    trn2 = price_for(catalog, "trn2.48xlarge")
    assert trn2 is not None and trn2.usd_per_hour == 35.76 and trn2.notes == "negotiated"
    assert len(catalog.prices) == len(load_catalog().prices) + 1


def test_user_prices_yaml(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("p5.48xlarge: 44.0\ntrn2.48xlarge: 31\n")
    catalog = load_catalog(prices_path=path)
    p = price_for(catalog, "trn2.48xlarge")
    assert p is not None and (p.usd_per_hour, p.option) == (31.0, "user")
    path.write_text("p5.48xlarge: -1\n")
    with pytest.raises(DataFileError, match="positive"):
        load_catalog(prices_path=path)


def test_user_prices_file_with_unknown_instance(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(
        "instance,region,option,usd_per_hour,source,as_of\np5.48xlarg,us-east-1,on_demand,50,quote,2026-05-01\n"
    )
    with pytest.raises(DataFileError, match=r"line 2.*p5\.48xlarg.*Did you mean 'p5\.48xlarge'"):
        load_catalog(prices_path=path)


# --- malformed data files name the file, line and field ---------------------------------------------


def test_malformed_chip_row_names_line_and_field(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    lines = (data / "chips.csv").read_text().splitlines()
    lines[3] = lines[3].replace(",neuron-v2,available,", ",neuron-v2,maybe,", 1)  # line 4: trainium1
    (data / "chips.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFileError) as err:
        load_catalog(data_dir=data)
    assert "chips.csv, line 4, field 'status'" in str(err.value)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda s: s.replace(",989.4,989.4,", ",fast,989.4,", 1), "tflops_bf16"),
        (lambda s: s.replace("source,as_of,notes", "source,as_of,notes,tdp_w", 1), "unknown column 'tdp_w'"),
        (
            lambda s: re.sub(r",published,[^,]*,2026-08-21,", ",published,,2026-08-21,", s, count=1),
            "line 2, field 'source'",
        ),
    ],
)
def test_malformed_chips_file(tmp_path: Path, edit: Callable[[str], str], expected: str) -> None:
    data = _copy_data(tmp_path)
    path = data / "chips.csv"
    path.write_text(edit(path.read_text()))
    with pytest.raises(DataFileError, match=expected):
        load_catalog(data_dir=data)


def test_instance_with_unknown_chip(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    path = data / "instances.csv"
    path.write_text(path.read_text().replace("p5.48xlarge,h100,", "p5.48xlarge,h1000,", 1))
    with pytest.raises(DataFileError, match=r"instances\.csv, line \d+: unknown chip 'h1000'.*'h100'"):
        load_catalog(data_dir=data)


def test_duplicate_price_key(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    path = data / "prices.csv"
    path.write_text(path.read_text() + "p5.48xlarge,us-east-1,on_demand,1.0,x,2026-01-01,\n")
    with pytest.raises(DataFileError, match=r"second on_demand price for p5\.48xlarge"):
        load_catalog(data_dir=data)


# --- AWS Price List offer files ----------------------------------------------------------------------


def _keys(prices: list[Price]) -> set[tuple[str, str, str, float]]:
    return {(p.instance, p.region, p.option, p.usd_per_hour) for p in prices}


def test_offer_import_picks_exactly_the_right_skus() -> None:
    prices = cat.import_offer_file(OFFER)
    # Dropped: Windows, Dedicated, UnusedCapacityReservation, AllocatedCapacityReservation, a
    # non-BoxUsage usagetype, SQL Web, BYOL, RHEL, m5.large (unknown), Dedicated Host, storage;
    # for inf2.xlarge only the 1yr standard No Upfront term is kept, and trn1's Partial Upfront is not.
    assert _keys(prices) == {
        ("p5.48xlarge", "us-east-1", "on_demand", 55.04),
        ("inf2.xlarge", "us-east-1", "on_demand", 0.7582),
        ("inf2.xlarge", "us-east-1", "reserved_1yr", 0.47767),
        ("trn1.32xlarge", "us-east-2", "on_demand", 21.5),
    }
    assert all(p.as_of == "2026-01-21" and "offer_sample.json" in p.source for p in prices)


def test_offer_import_streams_in_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _keys(cat.import_offer_file(OFFER))
    monkeypatch.setattr(_offer._Stream, "CHUNK", 7)  # values now straddle many reads
    assert _keys(cat.import_offer_file(OFFER)) == whole


def test_offer_import_round_trips_through_a_prices_file(tmp_path: Path) -> None:
    out = tmp_path / "imported.csv"
    cat.write_prices(cat.import_offer_file(OFFER), out)
    catalog = load_catalog(prices_path=out)
    trn1 = price_for(catalog, "trn1.32xlarge", region="us-east-2")
    assert trn1 is not None and trn1.usd_per_hour == 21.5


def _prices_sample() -> list[Price]:
    return [p for p in load_catalog().prices if p.instance == "p5.48xlarge"]


def test_write_prices_replaces_the_file(tmp_path: Path) -> None:
    out = tmp_path / "prices.csv"
    out.write_text("old\n")
    cat.write_prices(_prices_sample(), out)
    assert [p.name for p in tmp_path.iterdir()] == ["prices.csv"]
    assert price_for(load_catalog(prices_path=out), "p5.48xlarge", "spot") is not None


def test_write_prices_is_atomic(tmp_path: Path) -> None:
    out = tmp_path / "prices.csv"
    out.write_text("the previous prices\n")

    def failing() -> Iterator[Price]:
        yield from _prices_sample()
        raise OSError(28, "No space left on device")

    with pytest.raises(DataFileError) as err:
        cat.write_prices(failing(), out)
    assert out.read_text() == "the previous prices\n"  # untouched, not half-written
    assert [p.name for p in tmp_path.iterdir()] == ["prices.csv"]  # no temporary file left behind
    message = str(err.value)
    assert "\n" not in message and "No space left on device" in message and "To fix" in message


def test_write_prices_cleans_up_when_the_replace_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "prices.csv"

    def refuse(src: object, dst: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(DataFileError, match=r"Permission denied.*To fix"):
        cat.write_prices(_prices_sample(), out)
    assert list(tmp_path.iterdir()) == []


def test_write_prices_into_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"Cannot write .*To fix") as err:
        cat.write_prices(_prices_sample(), tmp_path / "nowhere" / "prices.csv")
    assert "\n" not in str(err.value)


def test_offer_import_rejects_broken_files(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.json"
    truncated.write_text(OFFER.read_text()[:5000])
    with pytest.raises(DataFileError, match="not valid JSON"):
        cat.import_offer_file(truncated)
    other = tmp_path / "s3.json"
    other.write_text(json.dumps({"offerCode": "AmazonS3", "products": {}, "terms": {}}))
    with pytest.raises(DataFileError, match="not AmazonEC2"):
        cat.import_offer_file(other)
    with pytest.raises(DataFileError, match="Cannot read"):
        cat.import_offer_file(tmp_path / "missing.json")


def test_reserved_effective_hourly_includes_upfront(tmp_path: Path) -> None:
    offer = json.loads(OFFER.read_text())
    term = next(iter(offer["terms"]["Reserved"]["FIXTRN132USE2001"].values()))
    term["termAttributes"]["PurchaseOption"] = "No Upfront"  # pretend, to check the formula
    path = tmp_path / "offer.json"
    path.write_text(json.dumps(offer))
    ri = [
        p for p in cat.import_offer_file(path) if p.option == "reserved_1yr" and p.instance == "trn1.32xlarge"
    ]
    assert len(ri) == 1 and math.isclose(ri[0].usd_per_hour, 6.0 + 58000 / 8760)


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_instances_json() -> None:
    from silica.cli.app import app

    result = CliRunner().invoke(app, ["catalog", "instances", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)["instances"]
    assert listed == plain(cat.instance_rows(load_catalog()))  # the library's rows, serialised
    rows = {r["instance"]["id"]: r for r in listed}
    assert set(rows) == set(load_catalog().instances)  # EC2 types, UltraServers, reference systems
    assert rows["p5.48xlarge"]["instance"]["chip"] == rows["p5.48xlarge"]["chip"]["id"] == "h100"
    assert {(p["option"], p["usd_per_hour"]) for p in rows["p5.48xlarge"]["prices"]} >= {("on_demand", 55.04)}
    assert rows["p5.48xlarge"]["price"]["option"] == "on_demand"
    assert rows["trn2u.48xlarge"]["prices"] == [] and rows["trn2u.48xlarge"]["price"] is None
    assert rows["p5e.48xlarge"]["price"] is None  # its Capacity Block rate is listed, not applied
    assert [p["option"] for p in rows["p5e.48xlarge"]["prices"]] == ["spot", "capacity_block"]


def test_cli_instances_json_with_a_user_price() -> None:
    from silica.cli.app import app

    args = ["catalog", "instances", "--family", "p5", "--price", "p5.48xlarge=1", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = {r["instance"]["id"]: r for r in json.loads(result.stdout)["instances"]}
    assert set(rows) >= {"p5.4xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"}
    assert all(i.startswith("p5") for i in rows)
    assert (rows["p5.48xlarge"]["price"]["option"], rows["p5.48xlarge"]["price"]["usd_per_hour"]) == (
        "user",
        1.0,
    )


def test_instance_rows(catalog: cat.Catalog) -> None:
    rows = cat.instance_rows(catalog, "trn2")
    assert {r.instance.id for r in rows} >= {"trn2.48xlarge", "trn2.3xlarge"}
    for row in rows:
        assert row.chip is catalog.chips[row.instance.chip]
        assert row.prices == tuple(p for p in catalog.prices if p.instance == row.instance.id)
        assert row.price == price_for(catalog, row.instance.id)
    trn2 = next(r for r in rows if r.instance.id == "trn2.48xlarge")
    assert trn2.price is None and [p.option for p in trn2.prices] == ["spot"]
    assert trn2.hbm_gib_total == pytest.approx(16 * 96.0)
    assert len(cat.instance_rows(catalog)) == len(catalog.instances)
    hopper = {r.instance.id for r in cat.instance_rows(catalog, "Hopper")}
    assert "p5.48xlarge" in hopper and all(
        catalog.chips[catalog.instances[i].chip].family == "hopper" for i in hopper
    )
    with pytest.raises(UnknownNameError, match="hopper"):
        cat.instance_rows(catalog, "hoper")


def test_chip_rows(catalog: cat.Catalog) -> None:
    assert cat.chip_rows(catalog) == list(catalog.chips.values())
    assert [c.id for c in cat.chip_rows(catalog, "hopper")] == ["h100", "h200", "gh200"]
    with pytest.raises(UnknownNameError, match="hopper"):
        cat.chip_rows(catalog, "hoper")


def test_cli_chips_family() -> None:
    from silica.cli.app import app

    result = CliRunner().invoke(app, ["catalog", "chips", "--family", "hopper"])
    assert result.exit_code == 0, result.output
    assert "h100" in result.stdout and "gh200" in result.stdout and "trainium" not in result.stdout
    as_json = CliRunner().invoke(app, ["catalog", "chips", "--family", "hopper", "--json"])
    assert [c["id"] for c in json.loads(as_json.stdout)["chips"]] == ["h100", "h200", "gh200"]


def test_cli_errors_are_one_line() -> None:
    from silica.cli.app import app

    result = CliRunner().invoke(app, ["catalog", "instances", "--price", "p5.48xlarge=-1"])
    assert result.exit_code == 2 and "To fix" in result.output
    result = CliRunner().invoke(app, ["catalog", "instances", "--family", "hoper"])
    assert result.exit_code == 2 and "hopper" in result.output


def test_cli_import_prices(tmp_path: Path) -> None:
    from silica.cli.app import app

    out = tmp_path / "prices.csv"
    result = CliRunner().invoke(app, ["catalog", "import-prices", str(OFFER), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Wrote 4 prices" in result.stdout
    with out.open(newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 4
