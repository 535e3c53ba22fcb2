"""The decision rules as data: thresholds and rules read from `data/decision_rules.yaml`.

Keeping them as data means every number the advisor uses can be shown with its source, and a user who
disagrees with a threshold changes it (`--set max_payback_months=6`) instead of the code. The code only
implements what each rule id means (see `silica.advise.decide`); a test checks the two stay in step.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from silica.errors import DataFileError, InputError

__all__ = ["RULES_FILE", "Rule", "Rules", "Threshold", "load_rules", "parse_settings"]

RULES_FILE = Path(__file__).resolve().parent.parent / "data" / "decision_rules.yaml"
Effect = Literal["disqualify", "exclude", "stay", "note", "cost"]
_EFFECTS = ("disqualify", "exclude", "stay", "note", "cost")
ARCHITECTURES = "standard_architectures"
_SHARES = ("serving_utilisation", "training_goodput")  # a fleet never runs above its modelled peak


@dataclass(frozen=True)
class Threshold:
    name: str
    value: float
    unit: str
    source: str
    note: str = ""
    overridden_by: str | None = None  # where the user's value came from, when it is not the default


@dataclass(frozen=True)
class Rule:
    id: str
    effect: Effect
    applies_to: tuple[str, ...]
    says: str
    source: str
    uses: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rules:
    """Thresholds by name, rules by id, and the architectures that count as standard on Neuron."""

    thresholds: dict[str, Threshold]
    rules: dict[str, Rule]
    standard_architectures: frozenset[str]
    architectures_source: str
    as_of: str
    overrides: dict[str, str] = field(default_factory=dict)  # name -> origin

    def __getitem__(self, name: str) -> float:
        return self.thresholds[name].value

    def rule(self, rule_id: str) -> Rule:
        return self.rules[rule_id]

    def cite(self, rule_id: str) -> str:
        """`[rule-id]` plus its source, for a reason line."""
        return f"[{rule_id}] source: {self.rules[rule_id].source}"

    def with_overrides(self, values: Mapping[str, Any], origin: Mapping[str, str] | str) -> Rules:
        """A copy with some thresholds replaced; an unknown name or a bad value is an `InputError`."""
        thresholds = dict(self.thresholds)
        arch, arch_source = self.standard_architectures, self.architectures_source
        overrides = dict(self.overrides)
        for name, value in values.items():
            where = origin if isinstance(origin, str) else origin.get(name, "override")
            if name == ARCHITECTURES:
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise InputError(
                        f"{where}: {name} must be a list of model_type names.", "e.g. [llama, qwen2]."
                    )
                arch, arch_source = frozenset(value), f"user override ({where})"
            elif name in thresholds:
                thresholds[name] = replace(
                    thresholds[name], value=_number(name, value, where), overridden_by=where
                )
            else:
                raise InputError(
                    f"{where}: unknown decision threshold {name!r}.",
                    f"use one of {', '.join(sorted([*thresholds, ARCHITECTURES]))}.",
                )
            overrides[name] = where
        return replace(
            self,
            thresholds=thresholds,
            standard_architectures=arch,
            architectures_source=arch_source,
            overrides=overrides,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "as_of": self.as_of,
            "thresholds": {
                n: {"value": t.value, "unit": t.unit, "source": t.source, "overridden_by": t.overridden_by}
                for n, t in self.thresholds.items()
            },
            ARCHITECTURES: {
                "value": sorted(self.standard_architectures),
                "source": self.architectures_source,
            },
            "rules": [
                {
                    "id": r.id,
                    "effect": r.effect,
                    "applies_to": list(r.applies_to),
                    "says": r.says,
                    "source": r.source,
                    "uses": list(r.uses),
                }
                for r in self.rules.values()
            ],
        }


def _number(name: str, value: Any, where: str) -> float:
    if isinstance(value, str):  # YAML 1.1 reads 1.0e9 (no sign after e) as text
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where}: {name} must be a number, got {value!r}.", f"e.g. {name}=12.")
    if value < 0:
        raise InputError(f"{where}: {name} must not be negative, got {value}.", "correct the sign.")
    if name.endswith("_fraction") and value > 1:
        raise InputError(f"{where}: {name} is a fraction in [0, 1], got {value}.", f"e.g. {name}=0.5.")
    if name in _SHARES and not 0 < value <= 1:
        raise InputError(f"{where}: {name} is a share in (0, 1], got {value}.", f"e.g. {name}=0.7.")
    if name.endswith("_months"):  # a period divides savings: zero is a division by zero, not a rule
        from silica.limits import check

        check("months", value, f"{where}: {name}")
    return float(value)


def load_rules(path: Path | None = None) -> Rules:
    """The bundled rules (cached), or a user's own rules file in the same format."""
    return _load(path or RULES_FILE)


@functools.lru_cache(maxsize=4)
def _load(path: Path) -> Rules:
    from silica._files import read_text

    text = read_text(path, "rules file", "a decision-rules YAML file")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise DataFileError(f"Rules file {path} is not valid YAML: {err}.", "fix the YAML.") from None
    if not isinstance(data, dict) or set(data) != {"version", "as_of", "thresholds", ARCHITECTURES, "rules"}:
        raise DataFileError(
            f"Rules file {path} must have exactly: version, as_of, thresholds, {ARCHITECTURES}, rules.",
            "start from silica/data/decision_rules.yaml.",
        )
    thresholds = {}
    for name, row in data["thresholds"].items():
        _require(path, f"threshold {name}", row, {"value", "unit", "source"}, {"note"})
        thresholds[name] = Threshold(
            name,
            _number(name, row["value"], str(path)),
            str(row["unit"]),
            str(row["source"]),
            str(row.get("note", "")),
        )
    rules = {}
    for row in data["rules"]:
        _require(
            path, f"rule {row.get('id')}", row, {"id", "effect", "applies_to", "says", "source"}, {"uses"}
        )
        if row["effect"] not in _EFFECTS:
            raise DataFileError(
                f"Rules file {path}: rule {row['id']} has effect {row['effect']!r}.",
                f"use one of {_EFFECTS}.",
            )
        for used in row.get("uses", []):
            if used not in thresholds and used != ARCHITECTURES:
                raise DataFileError(
                    f"Rules file {path}: rule {row['id']} uses unknown {used!r}.",
                    "define it under thresholds.",
                )
        rules[row["id"]] = Rule(
            row["id"],
            row["effect"],
            tuple(row["applies_to"]),
            row["says"],
            row["source"],
            tuple(row.get("uses", [])),
        )
    arch = data[ARCHITECTURES]
    _require(path, ARCHITECTURES, arch, {"value", "source"}, set())
    return Rules(thresholds, rules, frozenset(arch["value"]), str(arch["source"]), str(data["as_of"]))


def _require(path: Path, what: str, row: Any, required: set[str], optional: set[str]) -> None:
    if not isinstance(row, dict):
        raise DataFileError(f"Rules file {path}: {what} must be a mapping.", "see the bundled file.")
    missing, unknown = required - set(row), set(row) - required - optional
    if missing or unknown:
        raise DataFileError(
            f"Rules file {path}: {what} is missing {sorted(missing)} or has unknown {sorted(unknown)}.",
            "every rule and threshold needs a source.",
        )
    if not str(row.get("source", "x")).strip():
        raise DataFileError(f"Rules file {path}: {what} has an empty source.", "say where it comes from.")


def parse_settings(items: list[str]) -> dict[str, Any]:
    """`--set name=value` strings into {name: value}; values are read as YAML scalars or lists."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise InputError(
                f"Bad --set {item!r}.", "write it as NAME=VALUE, e.g. --set max_payback_months=6."
            )
        if name.strip() in out:
            raise InputError(f"--set {name.strip()} is given twice.", "keep one of them.")
        try:
            out[name.strip()] = yaml.safe_load(text)
        except yaml.YAMLError:
            raise InputError(
                f"Bad --set {item!r}: cannot read {text!r}.", "give a number or a [list]."
            ) from None
    return out
