"""`silica pilot import` on one real report of each tool (see tests/data/pilot/SOURCES.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tests.pilot.conftest import DATA, run

from silica.pilot.importers import COLUMNS, import_report
from silica.validate.benchmarks import read_benchmarks


def test_guidellm_report_generated_by_guidellm() -> None:
    raw = json.loads((DATA / "guidellm_benchmarks.json").read_text())
    metrics = raw["benchmarks"][0]["metrics"]
    found = import_report(
        DATA / "guidellm_benchmarks.json", instance="g6e.xlarge", engine="transformers-serve"
    )
    assert found.format == "guidellm"
    by = {r["metric"]: r for r in found.rows}
    assert by["ttft_ms"]["value"] == metrics["time_to_first_token_ms"]["successful"]["median"]
    assert by["tpot_ms"]["value"] == metrics["time_per_output_token_ms"]["successful"]["median"]
    assert by["output_tok_s"]["value"] == metrics["output_tokens_per_second"]["successful"]["mean"]
    assert by["ttft_ms"]["batch"] == 2  # concurrent@2
    assert by["ttft_ms"]["output_len"] == 16 and by["ttft_ms"]["input_len"] == 47
    assert by["ttft_ms"]["chip"] == "l40s" and by["ttft_ms"]["chips"] == 1
    assert by["ttft_ms"]["engine"] == "transformers-serve"


def test_vllm_bench_serve_result() -> None:
    found = import_report(DATA / "vllm_bench_serve.json", chip="h100", engine_version="unknown")
    by = {r["metric"]: r for r in found.rows}
    assert found.engine == "vllm"
    assert by["ttft_ms"]["value"] == pytest.approx(98.94429985433817)
    assert by["tpot_ms"]["value"] == pytest.approx(34.45028747967261)
    assert by["output_tok_s"]["value"] == pytest.approx(124.58542994370372)
    assert by["tpot_ms"]["input_len"] == round(39800 / 199) and by["tpot_ms"]["output_len"] == round(
        25472 / 199
    )
    assert by["tpot_ms"]["model"] == "./Qwen2.5-VL-3B-Instruct"


def test_nxdi_report_needs_its_shapes_and_reads_them(tmp_path: Path) -> None:
    code, _, err = run("pilot", "import", str(DATA / "nxdi_benchmark_report.json"))
    assert code == 2 and "--batch" in err and err.count("\n") == 1
    out = tmp_path / "rows.csv"
    code, _stdout, err = run(
        "pilot",
        "import",
        str(DATA / "nxdi_benchmark_report.json"),
        "--instance",
        "trn2.48xlarge",
        "--model",
        "llama-2-7b",
        "--batch",
        "2",
        "--input-len",
        "32",
        "--output-len",
        "32",
        "--tp",
        "96",
        "--engine-version",
        "sdk-2.28",
        "--out",
        str(out),
    )
    assert code == 0, err
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [r["metric"] for r in rows] == ["ttft_ms", "tpot_ms"]
    assert [float(r["value"]) for r in rows] == [132.42, 7.84]
    assert (
        rows[0]["chip"] == "trainium2"
        and rows[0]["engine"] == "nxdi"
        and rows[0]["engine_version"] == "sdk-2.28"
    )
    assert list(rows[0]) == list(COLUMNS)
    # The rows are in the benchmarks schema: Silica's own reader takes them.
    assert len(read_benchmarks(out)) == 2


def test_bad_files_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run("pilot", "import", str(bad))
    assert code == 2 and "is not JSON" in err and err.count("\n") == 1
    bad.write_text(json.dumps({"hello": 1}))
    code, _, err = run("pilot", "import", str(bad))
    assert code == 2 and "not a report Silica knows" in err
    code, _, err = run("pilot", "import", str(tmp_path / "missing.json"))
    assert code == 2 and "Cannot read" in err


@pytest.mark.parametrize(
    "args",
    [("pilot", "compare"), ("calibrate", "--from-pilot"), ("calibrate", "--from-monitor")],
)
def test_a_binary_results_file_is_one_line_not_an_internal_error(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A file that is not UTF-8 text was an internal error (exit 70) before; it is bad input."""
    binary = tmp_path / "result.json"
    binary.write_bytes(b"\x00\xff\xfe binary")
    code, _, err = run(*args, str(binary))
    assert code == 2, err
    assert "not UTF-8 text" in err and err.count("\n") == 1
