"""Decision rules are data with sources, every rule id is implemented, and users can override thresholds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from silica.advise import advise, load_rules, parse_settings
from silica.advise.decide import IMPLEMENTED_RULES
from silica.advise.rules import RULES_FILE
from silica.errors import DataFileError, InputError

BIG = """
workloads:
  - name: summaries
    model: llama-3.1-8b
    task: inference
    load: {tokens_per_month: 1.0e11, input_len: 512, output_len: 256}
    slo: {ttft_ms: 5000, tpot_ms: 100}
    current: {instance: p5.48xlarge, count: 2}
"""


def test_every_rule_and_threshold_cites_a_source() -> None:
    rules = load_rules()
    assert rules.thresholds and rules.rules
    for t in rules.thresholds.values():
        assert t.source.strip(), t.name
    for r in rules.rules.values():
        assert r.source.strip() and r.says.strip(), r.id
    assert rules.architectures_source.strip()


def test_the_guides_figures_are_the_defaults() -> None:
    rules = load_rules()
    assert rules["small_spend_usd_per_month"] == 10_000
    assert rules["large_spend_usd_per_month"] == 100_000
    assert rules["large_spend_savings_fraction"] == 0.40
    assert rules["trainium_min_chips"] == 100


def test_rule_ids_in_the_data_file_are_exactly_the_implemented_ones() -> None:
    assert set(load_rules().rules) == IMPLEMENTED_RULES


def test_inventory_override_changes_the_verdict(write_inventory: Callable[..., Path]) -> None:
    moves = advise(write_inventory(BIG)).workloads[0]
    assert moves.verdict != "stay"
    path = write_inventory(
        "rules: {small_spend_usd_per_month: 1.0e9}\n" + BIG.lstrip("\n"), name="strict.yaml"
    )
    stays = advise(path).workloads[0]
    assert stays.verdict == "stay"
    assert any("[small-spend]" in r for r in stays.reasons)
    assert (
        advise(path)
        .rules["thresholds"]["small_spend_usd_per_month"]["overridden_by"]
        .endswith("line 1, field rules.small_spend_usd_per_month")
    )


def test_command_line_settings_override_the_inventory(write_inventory: Callable[..., Path]) -> None:
    path = write_inventory("rules: {small_spend_usd_per_month: 1.0e9}\n" + BIG.lstrip("\n"))
    again = advise(path, settings=parse_settings(["small_spend_usd_per_month=10000"])).workloads[0]
    assert again.verdict != "stay"
    architectures = parse_settings(["standard_architectures=[bert]"])
    assert advise(path, settings={**architectures, "small_spend_usd_per_month": 0}).workloads[0].verdict in (
        "stay",
        "nvidia",
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_paybak_months": 6}, "unknown decision threshold 'max_paybak_months'"),
        ({"max_payback_months": -1}, "must not be negative"),
        ({"max_payback_months": "soon"}, "must be a number"),
        ({"serving_utilisation": 1.5}, "share in (0, 1]"),
        ({"min_savings_fraction": 2}, "fraction in [0, 1]"),
    ],
)
def test_bad_overrides_are_rejected(settings: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        load_rules().with_overrides(settings, "--set")


def test_bad_override_in_inventory_names_its_line(write_inventory: Callable[..., Path]) -> None:
    path = write_inventory(
        "team: {engineer_usd_per_week: 5000}\nrules:\n  max_paybak_months: 3\n" + BIG.lstrip("\n")
    )
    with pytest.raises(
        InputError, match=r"line 3, field rules\.max_paybak_months: unknown decision threshold"
    ):
        advise(path)


def test_parse_settings_rejects_malformed_items() -> None:
    assert parse_settings(["max_payback_months=6"]) == {"max_payback_months": 6}
    with pytest.raises(InputError, match="NAME=VALUE"):
        parse_settings(["max_payback_months"])


def test_a_rules_file_without_sources_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(RULES_FILE.read_text())
    data["rules"][0]["source"] = " "
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(DataFileError, match="empty source"):
        load_rules(path)
