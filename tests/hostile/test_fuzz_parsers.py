"""Property-based fuzzing of every parser of a user's file: any input ends in a result or one SilicaError.

Each parser gets arbitrary bytes (binary, broken UTF-8, NUL) and structured near-misses (real formats
with random values: NaN, huge and negative numbers, wrong types, deep nesting, unknown keys). The
property is the CLI's contract one level down: the loader returns, or raises a `SilicaError` whose text
is one line; never another exception (which the CLI would report as an internal error).

Budget (examples per parser, `max_examples` below), chosen to keep the module near 60 s on two cores:
config.json 200+150, inventory YAML 120+80, fleet YAML 120+80, benchmark CSV 200+150, trace CSVs
150+150, price CSV/YAML 150+150, calibration JSON 200+150, offer/get-products/SkyPilot imports 150+150,
describe-instance-types 100, telemetry 100, systems YAML 100.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from silica.errors import SilicaError

set_hypothesis_home_dir(tempfile.mkdtemp(prefix="silica-hypothesis-"))  # nothing under the repo


def fuzz(examples: int) -> settings:
    """The budget of one parser; no example database (tests write only to temporary folders)."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _check(parse: Callable[[Path], Any], data: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            parse(path)
        except SilicaError as err:
            assert "\n" not in str(err).strip(), str(err)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


def _yaml_bytes(value: Any) -> bytes:
    return yaml.safe_dump(value, allow_unicode=True).encode()


def _mutate(base: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = dict(base)
    out[key] = value
    return out


# --- config.json -----------------------------------------------------------------------------------------
LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}


def _load_config(path: Path) -> None:
    from silica.models import load_model

    load_model(str(path))


@fuzz(200)
@given(st.binary(max_size=300))
def test_config_json_bytes(data: bytes) -> None:
    _check(_load_config, data, "config.json")


@fuzz(150)
@given(st.sampled_from(sorted(LLAMA)), values, st.integers(0, 3000))
def test_config_json_near_misses(key: str, value: Any, depth: int) -> None:
    _check(_load_config, _json_bytes(_mutate(LLAMA, key, value)), "config.json")
    _check(_load_config, _json_bytes({**LLAMA, "extra": json.loads(_deep(1 + depth % 200))}), "config.json")


# --- inventory and fleet YAML --------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
INVENTORY = yaml.safe_load((ROOT / "examples" / "inventory.yaml").read_text())
from tests.hostile.conftest import BENCH, SMALL_FLEET  # noqa: E402

FLEET = yaml.safe_load(SMALL_FLEET)


def _inventory(path: Path) -> None:
    from silica.advise import load_inventory

    load_inventory(path)


def _fleet(path: Path) -> None:
    from silica.fleet import load_fleet_file

    load_fleet_file(path)


@fuzz(120)
@given(st.binary(max_size=300))
def test_inventory_and_fleet_bytes(data: bytes) -> None:
    _check(_inventory, data, "inv.yaml")
    _check(_fleet, data, "fleet.yaml")


def _workload_paths(doc: dict[str, Any]) -> st.SearchStrategy[tuple[str, ...]]:
    keys = [(k,) for k in doc] + [("workloads", k) for k in doc["workloads"][0]] if "workloads" in doc else []
    return st.sampled_from(keys or [(k,) for k in doc])


@fuzz(80)
@given(st.data(), values)
def test_inventory_near_misses(data: st.DataObject, value: Any) -> None:
    doc = json.loads(json.dumps(INVENTORY))
    where = data.draw(_workload_paths(doc))
    if len(where) == 2:
        doc["workloads"][0][where[1]] = value
    else:
        doc[where[0]] = value
    _check(_inventory, _yaml_bytes(doc), "inv.yaml")


def test_a_key_with_a_newline_is_named_on_one_line() -> None:
    """Found by the fuzz test above: an unknown key holding a newline split the error in two."""
    from silica.errors import DataFileError

    doc = json.loads(json.dumps(INVENTORY))
    doc["pricing"] = {"\n": None}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inv.yaml"
        path.write_bytes(_yaml_bytes(doc))
        with pytest.raises(DataFileError) as err:
            _inventory(path)
    assert "\n" not in str(err.value) and "'\\n'" in str(err.value), str(err.value)


@fuzz(80)
@given(st.sampled_from(["hours", "step_minutes", "region", "inference", "pools", "policy", "name"]), values)
def test_fleet_near_misses(key: str, value: Any) -> None:
    _check(_fleet, _yaml_bytes(_mutate(FLEET, key, value)), "fleet.yaml")


# --- benchmark CSV and traces --------------------------------------------------------------------------
HEADER, ROW = BENCH.splitlines()
cells = st.one_of(
    st.sampled_from(["", "0", "-1", "nan", "inf", "1e308", "1e400", "1.5", "abc", '"', "\x00", "9" * 30]),
    st.text(max_size=10),
)


def _benchmarks(path: Path) -> None:
    from silica.validate import read_benchmarks

    read_benchmarks(path)


@fuzz(200)
@given(st.binary(max_size=400))
def test_benchmark_csv_bytes(data: bytes) -> None:
    _check(_benchmarks, data, "rows.csv")


@fuzz(150)
@given(st.lists(st.tuples(st.integers(0, 14), cells), max_size=4))
def test_benchmark_csv_cells(changes: list[tuple[int, str]]) -> None:
    row = ROW.split(",")
    for i, cell in changes:
        row[i] = cell
    _check(_benchmarks, (HEADER + "\n" + ",".join(row) + "\n").encode(), "rows.csv")


def _traces(path: Path) -> None:
    from silica.fleet.traces import load_request_csv, load_servegen

    try:
        load_request_csv(path)
    finally:
        load_servegen(path, "m-small")


@fuzz(150)
@given(st.binary(max_size=300))
def test_trace_csv_bytes(data: bytes) -> None:
    _check(_traces, data, "trace.csv")


@fuzz(150)
@given(st.lists(st.tuples(cells, cells, cells), max_size=5))
def test_trace_csv_cells(rows: list[tuple[str, str, str]]) -> None:
    text = "timestamp,input_tokens,output_tokens\n" + "".join(",".join(r) + "\n" for r in rows)
    _check(_traces, text.encode(), "trace.csv")


# --- prices, calibration, imports ----------------------------------------------------------------------
def _prices(path: Path) -> None:
    from silica.catalog import load_catalog

    load_catalog(prices_path=path)


@fuzz(150)
@given(st.binary(max_size=300), st.sampled_from(["p.csv", "p.yaml"]))
def test_price_file_bytes(data: bytes, name: str) -> None:
    _check(_prices, data, name)


@fuzz(150)
@given(
    st.dictionaries(st.sampled_from(["p5.48xlarge", "trn1.32xlarge", "bogus", ""]), values, max_size=3), cells
)
def test_price_file_near_misses(mapping: dict[str, Any], cell: str) -> None:
    _check(_prices, _yaml_bytes(mapping), "p.yaml")
    from dataclasses import fields

    from silica.catalog.schema import Price

    columns = [f.name for f in fields(Price)]
    header = ",".join(columns)
    row = ",".join(["p5.48xlarge", "us-east-1", "user", cell] + [""] * (len(columns) - 4))
    _check(_prices, f"{header}\n{row}\n".encode(), "p.csv")


def _calibration(path: Path) -> None:
    from silica.perf.calibration import load_calibration

    load_calibration.__wrapped__(path)  # not the cached one: every example is a new file


CALIBRATION = json.loads((ROOT / "src" / "silica" / "data" / "calibration.json").read_text())


@fuzz(200)
@given(st.binary(max_size=300))
def test_calibration_bytes(data: bytes) -> None:
    _check(_calibration, data, "cal.json")


@fuzz(150)
@given(st.sampled_from(sorted(CALIBRATION)), values)
def test_calibration_near_misses(key: str, value: Any) -> None:
    _check(_calibration, _json_bytes(_mutate(CALIBRATION, key, value)), "cal.json")
    family = sorted(CALIBRATION["families"])[0]
    params = _mutate(CALIBRATION["families"][family], sorted(CALIBRATION["families"][family])[0], value)
    _check(_calibration, _json_bytes({**CALIBRATION, "families": {family: params}}), "cal.json")


def _imports(path: Path) -> None:
    from silica.catalog.imports import import_prices

    import_prices(path)


def _check_instances(path: Path) -> None:
    from silica.catalog import load_catalog
    from silica.catalog.imports import check_instance_types

    check_instance_types(path, load_catalog())


@fuzz(150)
@given(st.binary(max_size=300), st.sampled_from(["o.json", "vms.csv"]))
def test_price_import_bytes(data: bytes, name: str) -> None:
    _check(_imports, data, name)


@fuzz(150)
@given(values, st.sampled_from(["offer", "get-products", "skypilot"]))
def test_price_import_shapes(value: Any, kind: str) -> None:
    if kind == "offer":
        doc: Any = {"formatVersion": "v1.0", "offerCode": "AmazonEC2", "products": value, "terms": value}
    elif kind == "get-products":
        doc = {"PriceList": [value, json.dumps(value)], "FormatVersion": "aws_v1"}
    else:
        doc = None
    data = (
        _json_bytes(doc)
        if doc is not None
        else ("InstanceType,Region,Price\np5.48xlarge,us-east-1," + str(value)).encode()
    )
    _check(_imports, data, "in.csv" if doc is None else "in.json")


@fuzz(100)
@given(values)
def test_describe_instance_types_shapes(value: Any) -> None:
    _check(
        _check_instances,
        _json_bytes({"InstanceTypes": [value, {"InstanceType": "p5.48xlarge", "GpuInfo": value}]}),
        "t.json",
    )


def _telemetry(path: Path) -> None:
    from silica.monitor import read_file

    read_file(path)


@fuzz(100)
@given(st.one_of(st.binary(max_size=300), values.map(_json_bytes)))
def test_telemetry(data: bytes) -> None:
    _check(_telemetry, data, "metrics.prom")


def _systems(path: Path) -> None:
    from silica.catalog import load_catalog
    from silica.catalog.systems import load_systems

    load_systems(path, load_catalog())


@fuzz(100)
@given(
    st.one_of(
        st.binary(max_size=300), st.dictionaries(st.text(max_size=8), values, max_size=3).map(_yaml_bytes)
    )
)
def test_systems_yaml(data: bytes) -> None:
    _check(_systems, data, "systems.yaml")
