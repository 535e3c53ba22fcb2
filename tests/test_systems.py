"""Hardware without an EC2 instance type: chip x count in reference domains, and a user's YAML systems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from silica.catalog import chip_system, load_catalog, resolve_on
from silica.cli.app import app
from silica.errors import DataFileError, InputError, UnknownNameError
from silica.validate.benchmarks import BenchmarkRow
from silica.validate.predict import predict_rows

runner = CliRunner()


def test_chip_count_becomes_whole_domains() -> None:
    catalog = load_catalog()
    rack = resolve_on(catalog, "gb300x72")
    assert (rack.instance, rack.count) == ("gb300-nvl72", 1)
    cluster = resolve_on(catalog, "h100x1024")
    assert (cluster.instance, cluster.count) == ("dgx-h100", 128)
    assert cluster.catalog.instances["dgx-h100"].network_gbps == 3200
    # Below one domain: part of a node, with the node's links and the chips asked for.
    part = resolve_on(catalog, "h100x4")
    assert part.count == 1 and part.catalog.instances[part.instance].chips == 4
    # Instance ids still win, including those that end in x<digits>.
    assert resolve_on(catalog, "u-p6e-gb200x72").instance == "u-p6e-gb200x72"
    assert (resolve_on(catalog, "p5.48xlargex3").instance, resolve_on(catalog, "p5.48xlargex3").count) == (
        "p5.48xlarge",
        3,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("h100x12", "not a whole number of dgx-h100 domains"),
        ("gb300", "is a chip: say how many"),
        ("inferentia2x4", "no reference system for inferentia2"),
        ("h100x0", "at least 1"),
    ],
)
def test_bad_chip_counts_say_how_to_fix(text: str, expected: str) -> None:
    with pytest.raises(InputError, match=expected) as err:
        resolve_on(load_catalog(), text)
    assert err.value.fix


def test_unknown_name_suggests() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean"):
        resolve_on(load_catalog(), "gb300x")


def test_reference_systems_are_not_ranked_by_default() -> None:
    from silica.plan.targets import resolve_targets

    ids = {t.instance.id for t in resolve_targets()}
    assert "p5.48xlarge" in ids and not ids & {"dgx-h100", "gb300-nvl72"}


def test_estimate_on_a_gb300_rack_and_an_h100_cluster() -> None:
    for on, chips in (("gb300x72", 72), ("h100x512", 512)):  # 64 nodes as 64 of 80 layers
        r = runner.invoke(
            app,
            ["estimate", "llama-3.1-70b", "--on", on, "--input-len", "1024", "--output-len", "256", "--json"],
        )
        assert r.exit_code == 0, r.output
        result = json.loads(r.stdout)
        assert result["feasible"], result
        assert result["count"] * load_catalog().instances[result["instance"]].chips == chips


def test_validation_rows_on_reference_systems_are_predicted() -> None:
    """A NeMo-style training row on 64 GB300s (no EC2 type) is predicted, not skipped."""
    row = BenchmarkRow(
        id="1",
        run="1",
        source="test",
        chip="gb300",
        chips=64,
        instance="",
        task="training",
        model="llama-3.1-8b",
        weight_dtype="bf16",
        compute_dtype="bf16",
        batch=128,
        micro_batch=1,
        input_len=None,
        output_len=None,
        seq_len=8192,
        tp=1,
        pp=1,
        metric="train_tok_s_per_chip",
        value=30000.0,
    )
    (prediction,) = predict_rows([row])
    assert prediction.skipped is None and prediction.predicted and prediction.predicted > 0


SYSTEMS = """\
systems:
  - id: my-h100-pod
    chip: h100
    chips: 8
    link_gb_per_s: 900
    network_gbps: 1600
    usd_per_hour: 80
"""


def test_user_system_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "systems.yaml"
    path.write_text(SYSTEMS)
    catalog = load_catalog(systems_path=path)
    system = catalog.instances["my-h100-pod"]
    assert (system.chips, system.network_gbps, system.kind) == (8, 1600, "system")
    placement = resolve_on(catalog, "my-h100-podx4")
    assert (placement.instance, placement.count) == ("my-h100-pod", 4)
    r = runner.invoke(
        app,
        ["estimate", "llama-3.1-8b", "--on", "my-h100-podx2", "--systems", str(path), "--json"],
    )
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    assert result["instance"] == "my-h100-pod" and result["usd_per_hour"] == pytest.approx(160)
    # A user's priced system is ranked by compare like an instance type.
    r = runner.invoke(app, ["compare", "llama-3.1-8b", "--systems", str(path), "--json"])
    assert r.exit_code == 0, r.output
    assert "my-h100-pod" in {x["instance"] for x in json.loads(r.stdout)["results"]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "systems:\n  - id: a\n    chip: h100\n    chips: 8\n    network_gbps: -5\n",
            "line 5, field systems.0.network_gbps",
        ),
        (
            "systems:\n  - id: a\n    chip: h1000\n    chips: 8\n",
            "line 3, field systems.0.chip: Unknown chip",
        ),
        ("systems:\n  - id: a\n    chip: h100\n", "line 2, field systems.0: missing field 'chips'"),
        (
            "systems:\n  - id: a\n    chip: h100\n    chips: 8\n    speed: 3\n",
            "line 5, field systems.0.speed: unknown field",
        ),
        ("systems:\n  - id: p5.48xlarge\n    chip: h100\n    chips: 8\n", "already in the catalog"),
        ("systems: [\n", "line 2: not valid YAML"),
        ("chips: []\n", "expected a list under `systems:`"),
    ],
)
def test_bad_systems_files_name_the_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(DataFileError, match=r"bad\.yaml") as err:
        load_catalog(systems_path=path)
    assert expected in str(err.value)
    r = runner.invoke(app, ["estimate", "llama-3.1-8b", "--on", "a", "--systems", str(path)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output


def test_chip_system_of_unknown_hardware_is_none() -> None:
    assert chip_system(load_catalog(), "inferentia2", 12) is None


def test_a_measured_count_between_domains_is_spread_evenly_over_them() -> None:
    """128 GB200s ran as two NVL72 racks of 64 (NeMo's tables): validate predicts them so."""
    from silica.catalog.systems import spread_system

    cat = load_catalog()
    found = spread_system(cat, "gb200", 128)
    assert found is not None
    part, count = found
    assert (part.chips, count) == (64, 2)
    assert spread_system(cat, "gb200", 256) is not None and spread_system(cat, "gb200", 256)[1] == 4
    assert spread_system(cat, "h100", 16) == (cat.instances["dgx-h100"], 2)  # whole domains as they are
    assert spread_system(cat, "gb200", 73) is None  # 73 does not split evenly over two racks
