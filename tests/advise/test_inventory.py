"""Bad inventories fail with one message that names the file, the line and the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from silica.advise import load_inventory
from silica.errors import DataFileError, InputError

GOOD = """
team: {engineer_usd_per_week: 5000}
workloads:
  - name: chat
    model: llama-3.1-8b
    task: inference
    load: {tokens_per_month: 5.0e10, input_len: 1024, output_len: 256}
    slo: {ttft_ms: 1000, tpot_ms: 50}
    current: {instance: p5.48xlarge, count: 2}
  - name: pretrain
    model: llama-3.1-70b
    task: training
    load: {tokens: 2.0e12, seq_len: 8192, deadline_days: 60}
    current: {instance: p5.48xlarge, count: 64}
"""


def test_the_issue_example_loads(write_inventory: Callable[[str], Path]) -> None:
    inv = load_inventory(write_inventory(GOOD))
    assert [w.name for w in inv.workloads] == ["chat", "pretrain"]
    chat, pretrain = inv.workloads
    assert chat.line == 3 and pretrain.line == 9
    assert chat.current.usd_per_hour == pytest.approx(55.04)  # from the catalog
    assert inv.engineer_usd_per_week == 5000


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("model: llama-3.1-8b", "model: llama-3.1-8bb", r"line 4, field workloads\.0\.model: Unknown model"),
        (
            "instance: p5.48xlarge, count: 2",
            "instance: p5.48xl, count: 2",
            r"line 8, field workloads\.0\.current\.instance: Unknown instance",
        ),
        (
            "    current: {instance: p5.48xlarge, count: 64}\n",
            "",
            r"line 9, field workloads\.1\.current: missing",
        ),
        (
            "input_len: 1024",
            "input_len: 1024, requests_per_s: 1000",
            r"line 6, field workloads\.0\.load: The request rate .* contradicts tokens per month",
        ),
        (
            "count: 2}",
            "count: 2, monthly_usd: -5}",
            r"line 8, field workloads\.0\.current\.monthly_usd: Input should be greater than 0",
        ),
        (
            "{engineer_usd_per_week: 5000}",
            "{engineer_usd_per_week: -5000}",
            r"line 1, field team\.engineer_usd_per_week",
        ),
        (
            "slo: {ttft_ms: 1000, tpot_ms: 50}",
            "slo: {ttft_ms: 1000, tpot: 50}",
            r"line 7, field workloads\.0\.slo\.tpot: unknown field\. To fix: use one of: ttft_ms, tpot_ms",
        ),
        (
            "task: training",
            "task: train",
            r"line 11, field workloads\.1\.task: Input should be 'inference' or 'training'",
        ),
        (
            "name: pretrain",
            "name: chat",
            r"line 9, field workloads\.1\.name: 'chat' is used twice \(first on line 3\)",
        ),
        ("seq_len: 8192, ", "", r"line 12, field workloads\.1\.load\.seq_len: missing"),
        ("{tokens_per_month: 5.0e10, ", "{", r"line 6, field workloads\.0\.load: an inference load needs"),
        ("load: {tokens: 2.0e12", "load: {tokens: -2.0e12", r"line 12, field workloads\.1\.load\.tokens"),
    ],
)
def test_errors_name_file_line_and_field(
    write_inventory: Callable[[str], Path], old: str, new: str, where: str
) -> None:
    assert old in GOOD
    path = write_inventory(GOOD.replace(old, new, 1))
    with pytest.raises(InputError, match=where) as info:
        load_inventory(path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message


def test_unpriced_current_instance_needs_a_bill(write_inventory: Callable[[str], Path]) -> None:
    path = write_inventory(
        GOOD.replace("instance: p5.48xlarge, count: 2", "instance: trn2.48xlarge, count: 2")
    )
    with pytest.raises(DataFileError, match=r"line 8, .*trn2\.48xlarge has no public price.*monthly_usd"):
        load_inventory(path)
    ok = write_inventory(
        GOOD.replace(
            "instance: p5.48xlarge, count: 2", "instance: trn2.48xlarge, count: 2, monthly_usd: 60000"
        ),
        "ok.yaml",
    )
    assert load_inventory(ok).workloads[0].current.monthly_usd == 60000


def test_yaml_syntax_error_names_its_line(write_inventory: Callable[[str], Path]) -> None:
    path = write_inventory(GOOD.replace("task: training", "task: [training"))
    with pytest.raises(DataFileError, match=r"line 1[1-3]: not valid YAML"):
        load_inventory(path)


def test_missing_scan_file_names_the_scan_field(write_inventory: Callable[[str], Path]) -> None:
    path = write_inventory(GOOD.replace("count: 64}", "count: 64}\n    constraints: {scan: nowhere.json}"))
    with pytest.raises(
        DataFileError, match=r"line 14, field workloads\.1\.constraints\.scan: Cannot read scan file"
    ):
        load_inventory(path)


def test_bad_scan_content_is_refused(write_inventory: Callable[[str], Path], tmp_path: Path) -> None:
    (tmp_path / "scan.json").write_text('{"target_verdicts": {"inferentia2": "maybe"}, "effort_weeks": 1}')
    path = write_inventory(GOOD.replace("count: 64}", "count: 64}\n    constraints: {scan: scan.json}"))
    with pytest.raises(DataFileError, match="target_verdicts has 'inferentia2': 'maybe'"):
        load_inventory(path)


def test_empty_and_non_mapping_files(write_inventory: Callable[[str], Path]) -> None:
    with pytest.raises(DataFileError, match="an inventory is a mapping"):
        load_inventory(write_inventory("- just\n- a list\n"))
    with pytest.raises(DataFileError, match="workloads: missing"):
        load_inventory(write_inventory("team: {engineer_usd_per_week: 1}\n", name="e.yaml"))
