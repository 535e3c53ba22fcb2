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
            r"line 6, field workloads\.0\.load: The request rate .* contradicts load\.tokens_per_month",
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
        (
            "    task: inference\n",
            "    task: inference\n    engine: vlm\n",
            r"workloads\.0\.engine: unknown engine",
        ),
        (
            "    task: training\n",
            "    task: training\n    engine: vllm\n",
            r"workloads\.1\.engine: vllm does not",
        ),
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


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "is not UTF-8 text"),
        (b"workloads:\n  - name: \x00x\n", "is not UTF-8 text: it holds NUL bytes"),
        (b"workloads: !!python/object:os.system x\n", "line 1: cannot read this value"),
        (b"team: {engineer_usd_per_week: !!int abc}\n", "line 1: cannot read this value"),
    ],
)
def test_unreadable_bytes_and_tags_are_a_data_file_error(tmp_path: Path, content: bytes, phrase: str) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_bytes(content)
    with pytest.raises(DataFileError, match=phrase) as info:
        load_inventory(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("count: 2}", "count: 2, monthly_usd: .inf}", r"line 8, field workloads\.0\.current\.monthly_usd"),
        ("count: 2}", "count: 2, usd_per_hour: .nan}", r"line 8, field workloads\.0\.current\.usd_per_hour"),
        ("{tokens_per_month: 5.0e10,", "{tokens_per_month: .inf,", r"workloads\.0\.load\.tokens_per_month"),
        ("ttft_ms: 1000", "ttft_ms: .inf", r"workloads\.0\.slo\.ttft_ms"),
        ("deadline_days: 60", "deadline_days: .inf", r"workloads\.1\.load\.deadline_days"),
        ("{engineer_usd_per_week: 5000}", "{engineer_usd_per_week: .inf}", r"team\.engineer_usd_per_week"),
    ],
)
def test_non_finite_numbers_are_refused(
    write_inventory: Callable[[str], Path], old: str, new: str, where: str
) -> None:
    assert old in GOOD
    with pytest.raises(DataFileError, match=where + r": Input should be a finite number"):
        load_inventory(write_inventory(GOOD.replace(old, new, 1)))


def test_contradiction_fix_names_the_yaml_fields_and_output_tokens(
    write_inventory: Callable[[str], Path],
) -> None:
    path = write_inventory(GOOD.replace("input_len: 1024", "input_len: 1024, requests_per_s: 1000", 1))
    with pytest.raises(DataFileError) as info:
        load_inventory(path)
    err = info.value
    assert err.fix is not None
    assert "load.requests_per_s" in err.fix and "load.tokens_per_month" in err.fix
    assert "OUTPUT tokens" in err.fix
    assert "--rate" not in str(err) and "--tokens-per-month" not in str(err)
    missing = write_inventory(GOOD.replace("{tokens_per_month: 5.0e10, ", "{"), "missing.yaml")
    with pytest.raises(DataFileError, match=r"tokens_per_month \(output tokens a month\) or requests_per_s"):
        load_inventory(missing)


def test_binary_or_non_finite_scan_file_is_a_data_file_error(
    write_inventory: Callable[[str], Path], tmp_path: Path
) -> None:
    path = write_inventory(GOOD.replace("count: 64}", "count: 64}\n    constraints: {scan: scan.json}"))
    (tmp_path / "scan.json").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(DataFileError, match=r"constraints\.scan: Scan file .* is not UTF-8 text"):
        load_inventory(path)
    (tmp_path / "scan.json").write_text(
        '{"target_verdicts": {"inferentia2": "ready"}, "effort_weeks": Infinity, "targets": []}'
    )
    with pytest.raises(DataFileError, match="Infinity is not a number JSON allows"):
        load_inventory(path)
    (tmp_path / "scan.json").write_text(
        '{"target_verdicts": {"inferentia2": "ready"}, "effort_weeks": 1, "targets": [], "ops": 3}'
    )
    assert load_inventory(path).workloads[1].constraints.scan is not None


def test_binary_prices_file_is_a_data_file_error(
    write_inventory: Callable[[str], Path], tmp_path: Path
) -> None:
    (tmp_path / "prices.csv").write_bytes(b"\xff\xfe\x00\x01binary")
    path = write_inventory("pricing: {prices: prices.csv}\n" + GOOD.lstrip("\n"))
    with pytest.raises(
        DataFileError, match=r"line 1, field pricing\.prices: .*prices\.csv is not UTF-8 text"
    ):
        load_inventory(path)


def test_a_workload_names_its_engine(write_inventory: Callable[[str], Path]) -> None:
    inv = load_inventory(
        write_inventory(GOOD.replace("    task: inference\n", "    task: inference\n    engine: VLLM\n"))
    )
    assert [w.engine for w in inv.workloads] == ["vllm", None]
