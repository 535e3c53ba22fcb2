"""`silica advise`, `silica claims` and `silica history` through the real CLI (typer's CliRunner)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.advise.conftest import EXAMPLE
from typer.testing import CliRunner

from silica import store
from silica.cli.app import app

runner = CliRunner()


def test_advise_example_writes_json_html_markdown_and_stores(tmp_path: Path) -> None:
    html, md = tmp_path / "advice.html", tmp_path / "advice.md"
    result = runner.invoke(app, ["advise", str(EXAMPLE), "--json", "--html", str(html), "--md", str(md)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    workloads = {w["name"]: w for w in data["workloads"]}
    assert len(workloads) >= 6
    for w in workloads.values():
        for key in (
            "name",
            "verdict",
            "best",
            "current_monthly_usd",
            "monthly_savings_usd",
            "migration_weeks",
            "payback_months",
            "reasons",
        ):
            assert key in w
        assert set(w["best"]) == {"trainium", "inferentia", "nvidia"}
    assert workloads["support-bot"]["verdict"] == "stay"
    assert workloads["doc-summaries"]["verdict"] != "stay"
    assert workloads["doc-summaries-multicloud"]["verdict"] in ("stay", "nvidia")
    assert "<svg" in html.read_text() and "| workload | verdict |" in md.read_text()
    kinds = {r.kind for r in store.history(limit=500)}
    assert {"inventory", "scan", "estimate", "recommendation"} <= kinds
    assert len(store.history("recommendation")) == len(workloads)


def test_advise_table_output_and_no_store(tmp_path: Path) -> None:
    result = runner.invoke(app, ["advise", str(EXAMPLE), "--no-store"])
    assert result.exit_code == 0, result.output
    assert "support-bot" in result.stdout and "stay" in result.stdout
    assert store.history() == []


def test_bad_inventory_exits_2_with_one_line_and_stores_nothing(
    write_inventory: Callable[[str], Path],
) -> None:
    path = write_inventory(
        """
        workloads:
          - name: ok
            model: llama-3.1-8b
            task: inference
            load: {tokens_per_month: 1.0e10, input_len: 512, output_len: 128}
            current: {instance: p5.48xlarge, count: 1}
          - name: broken
            model: llama-9000
            task: inference
            load: {tokens_per_month: 1.0e10, input_len: 512, output_len: 128}
            current: {instance: p5.48xlarge, count: 1}
        """
    )
    html = path.parent / "out.html"
    result = runner.invoke(app, ["advise", str(path), "--html", str(html)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "line 8, field workloads.1.model: Unknown model 'llama-9000'" in lines[0]
    assert "Traceback" not in result.output
    assert not html.exists()
    assert store.history() == []


def test_contradictory_load_and_negative_money_exit_2(write_inventory: Callable[[str], Path]) -> None:
    base = """
        workloads:
          - name: w
            model: llama-3.1-8b
            task: inference
            load: {LOAD}
            current: {CURRENT}
        """
    cases = {
        "contradicts": (
            "{tokens_per_month: 1.0e10, requests_per_s: 500, input_len: 512, output_len: 128}",
            "{instance: p5.48xlarge}",
        ),
        "greater than 0": (
            "{tokens_per_month: 1.0e10, input_len: 512, output_len: 128}",
            "{monthly_usd: -100}",
        ),
        "Unknown instance": (
            "{tokens_per_month: 1.0e10, input_len: 512, output_len: 128}",
            "{instance: p9.huge}",
        ),
    }
    for phrase, (load, current) in cases.items():
        path = write_inventory(base.replace("{LOAD}", load).replace("{CURRENT}", current))
        result = runner.invoke(app, ["advise", str(path)])
        assert result.exit_code == 2, (phrase, result.output)
        assert phrase in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert store.history() == []


def test_bad_setting_exits_2() -> None:
    result = runner.invoke(app, ["advise", str(EXAMPLE), "--set", "max_paybak_months=3"])
    assert result.exit_code == 2
    assert "unknown decision threshold 'max_paybak_months'" in result.stderr


def test_claims_json_html_and_history(tmp_path: Path) -> None:
    html = tmp_path / "claims.html"
    result = runner.invoke(app, ["claims", "--json", "--html", str(html)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    from silica.advise.claims import load_claims

    every = len(load_claims().claims)
    assert len(data["claims"]) == every
    assert all(
        c["verdict"] in ("supported", "partly", "not supported", "cannot check") for c in data["claims"]
    )
    assert "<svg" in html.read_text()
    listed = runner.invoke(app, ["history", "--kind", "claim", "--json"])
    assert listed.exit_code == 0
    assert len(json.loads(listed.stdout)["records"]) == every
    table = runner.invoke(app, ["history", "--limit", "3"])
    assert table.exit_code == 0 and "claim" in table.stdout


def test_claims_unknown_id_and_history_bad_limit_exit_2() -> None:
    assert runner.invoke(app, ["claims", "--id", "nope"]).exit_code == 2
    assert runner.invoke(app, ["history", "--limit", "0"]).exit_code == 2


def test_help_does_not_import_the_database_layer() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from silica.cli.app import app\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0 and 'advise' in r.stdout and 'claims' in r.stdout and 'history' in r.stdout\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'alembic')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_binary_inventory_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_bytes(b"\x00\x01\x02\xff\xfe binary")
    result = runner.invoke(app, ["advise", str(path)])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "is not UTF-8 text" in result.stderr
    assert "Traceback" not in result.output


def test_infinite_bill_exits_2_instead_of_printing_inf(write_inventory: Callable[[str], Path]) -> None:
    path = write_inventory(
        """
        workloads:
          - name: w
            model: llama-3.1-8b
            task: inference
            load: {tokens_per_month: 1.0e10, input_len: 512, output_len: 128}
            current: {instance: p5.48xlarge, count: 1, monthly_usd: .inf}
        """
    )
    result = runner.invoke(app, ["advise", str(path)])
    assert result.exit_code == 2
    assert "field workloads.0.current.monthly_usd: Input should be a finite number" in result.stderr
    assert "$inf" not in result.output and store.history() == []


def test_unwritable_report_path_stores_and_writes_nothing(tmp_path: Path) -> None:
    html, md = tmp_path / "advice.html", tmp_path / "missing" / "advice.md"
    for args in (
        ["--html", "/nonexistent/x.html"],
        ["--html", str(html), "--md", str(md)],
        ["--html", str(tmp_path)],
    ):
        result = runner.invoke(app, ["advise", str(EXAMPLE), *args])
        assert result.exit_code == 2, result.output
        assert len(result.stderr.strip().splitlines()) == 1 and "Cannot write" in result.stderr
        assert "Traceback" not in result.output
        assert store.history() == []
        assert not html.exists() and not Path("/nonexistent/x.html").exists()
    claims = runner.invoke(app, ["claims", "--md", str(md)])
    assert claims.exit_code == 2 and store.history() == []


def test_reports_are_written_atomically_over_an_old_file(tmp_path: Path) -> None:
    html = tmp_path / "advice.html"
    html.write_text("old report")
    result = runner.invoke(app, ["advise", str(EXAMPLE), "--no-store", "--html", str(html)])
    assert result.exit_code == 0, result.output
    assert "<svg" in html.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []  # no temporary file left


def test_same_file_for_both_reports_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    result = runner.invoke(app, ["advise", str(EXAMPLE), "--html", str(out), "--md", str(out)])
    assert result.exit_code == 2 and "both name" in result.stderr
    assert not out.exists() and store.history() == []
