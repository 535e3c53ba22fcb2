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
    # TPOT is the inter-token latency; time_per_output_token_ms includes TTFT (latency / tokens)
    assert by["tpot_ms"]["value"] == metrics["inter_token_latency_ms"]["successful"]["median"]
    assert by["tpot_ms"]["value"] < metrics["time_per_output_token_ms"]["successful"]["median"]
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
    # A --request-rate run (max_concurrency null) keeps its rate and gets the concurrency it measured:
    # 0.973 req/s x (97.5 ms + 34.4 ms x 127) = 4.35 in flight.
    assert by["tpot_ms"]["batch"] == 4
    assert by["tpot_ms"]["run"].endswith("@rate=1")


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


def test_genai_perf_export_from_a_real_run() -> None:
    """The figures below were read by hand from the file (a genai-perf run pasted into
    triton-inference-server/perf_analyzer issue #298): TTFT p50 172.8093975 ms (its avg is
    184.64, a different figure: the reader takes medians, like the other formats), ITL p50
    2.1787205 ms, output token throughput avg 44190.56002502682 tok/s, concurrency 100 in the flat
    (older genai-perf) `input_config`, backend "tensorrtllm" (Silica's `trtllm`), mean ISL 200.85
    and OSL 2565.855 tokens. The file holds together: request throughput 17.222547659562533 req/s x
    OSL 2565.855 = 44190.56 tok/s, so the throughput row is per output token, not per request.
    """
    path = DATA / "genai_perf_profile_export_genai_perf.json"
    raw = json.loads(path.read_text())
    assert raw["request_throughput"]["avg"] * raw["output_sequence_length"]["avg"] == pytest.approx(
        44190.56002502682
    )
    found = import_report(path, chip="h100", model="llama-3.1-8b", engine_version="trtllm-0.16.0")
    by = {r["metric"]: r for r in found.rows}
    assert found.format == "genai-perf" and found.engine == "trtllm"
    assert by["ttft_ms"]["value"] == 172.8093975
    assert by["tpot_ms"]["value"] == 2.1787205
    assert by["output_tok_s"]["value"] == 44190.56002502682
    for row in found.rows:
        assert (row["batch"], row["input_len"], row["output_len"]) == (100, 201, 2566)
        assert (row["chip"], row["engine"], row["engine_version"]) == ("h100", "trtllm", "trtllm-0.16.0")
        assert row["model"] == "llama-3.1-8b"  # the file names a Triton "ensemble", not the model
    # Without --model the file's own name is kept, so nothing is guessed.
    assert import_report(path, chip="h100").rows[0]["model"] == "ensemble"


def test_aiperf_export_generated_by_aiperf(tmp_path: Path) -> None:
    """Figures read by hand from the AIPerf 0.13.0 export (see SOURCES.md): TTFT p50
    772.3076044999999 ms, ITL p50 21.6984279 ms, output token throughput avg 28.84371622062114 tok/s
    (= request throughput 1.8027322637888212 req/s x 16 output tokens), concurrency 2 in
    `input_config.phases`, ISL 32 and OSL 16 tokens (server-counted). The file does not name the
    hardware or the engine: they come from the options.
    """
    path = DATA / "aiperf_profile_export_aiperf.json"
    raw = json.loads(path.read_text())
    assert raw["request_throughput"]["avg"] * 16 == pytest.approx(raw["output_token_throughput"]["avg"])
    out = tmp_path / "rows.csv"
    code, _, err = run(
        "pilot", "import", str(path), "--instance", "g6e.xlarge", "--engine", "transformers-serve",
        "--engine-version", "5.24.0", "--model", "tiny-llama", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["metric"], float(r["value"])) for r in rows] == [
        ("ttft_ms", 772.3076044999999),
        ("tpot_ms", 21.6984279),
        ("output_tok_s", 28.84371622062114),
    ]
    for r in rows:
        assert (r["batch"], r["input_len"], r["output_len"]) == ("2", "32", "16")
        assert (r["chip"], r["chips"], r["instance"]) == ("l40s", "1", "g6e.xlarge")
        assert (r["engine"], r["engine_version"], r["model"]) == (
            "transformers-serve",
            "5.24.0",
            "tiny-llama",
        )
    assert len(read_benchmarks(out)) == 3
