"""`silica scan DIR --output sarif` is SARIF 2.1.0, validated against the OASIS schema (tests/scan/schemas)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from silica.cli.app import app
from silica.scan import scan_code
from silica.scan.sarif import to_sarif

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())
CORPUS = Path(__file__).parent / "corpus"
runner = CliRunner()


def _validate(log: dict[str, object]) -> None:
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA).validate(log)


def test_sarif_of_a_real_repository_validates_and_keeps_every_finding() -> None:
    report = scan_code(CORPUS / "nanogpt" / "repo", task="training")
    log = to_sarif(report, version="0.1.0")
    _validate(log)
    run = log["runs"][0]
    results = run["results"]
    assert len(results) == len(report.findings)
    rules = run["tool"]["driver"]["rules"]
    for r in results:  # each result points at its rule and at a file:line of the scanned folder
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert (CORPUS / "nanogpt" / "repo" / loc["artifactLocation"]["uri"]).is_file()
        assert loc["region"]["startLine"] >= 1
    assert {r["level"] for r in results} == {"warning"}
    assert run["properties"]["targetVerdicts"]["inferentia2"] == "blocked"


def test_cli_output_sarif_validates_including_file_level_and_info_findings(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "blob.py").write_bytes(b"\x00\x01 torch")
    # round 8: NVIDIA runtime pins in a dependency list are cuda-wheels; installed in an image they stay a note
    (tmp_path / "Dockerfile").write_text("FROM python:3.11\nRUN pip install nvidia-cublas-cu12\n")
    result = runner.invoke(app, ["scan", str(tmp_path), "--output", "sarif"])
    assert result.exit_code == 0, result.output
    log = json.loads(result.output)
    _validate(log)
    levels = {r["ruleId"]: r["level"] for r in log["runs"][0]["results"]}
    assert levels["cuda-source"] == "warning" and levels["nvidia-wheels"] == "note"
    assert levels["unscanned-source"] == "warning"  # a file the scan could not read needs a review


def test_an_invalid_log_fails_the_schema() -> None:
    """The check can fail: a result without a message is not SARIF."""
    log = to_sarif(scan_code(CORPUS / "accelerate" / "repo", task="training"))
    del log["runs"][0]["results"][0]["message"]
    try:
        _validate(log)
    except jsonschema.ValidationError:
        return
    raise AssertionError("schema accepted a result without a message")
