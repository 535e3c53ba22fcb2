"""docs/simulate.md quotes simulator output: it must be what `scripts/simulate_docs.py` prints today."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("simulate_docs", ROOT / "scripts" / "simulate_docs.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _quoted(mod: ModuleType, name: str) -> str:
    match = mod.pattern(name).search((ROOT / "docs" / "simulate.md").read_text())
    assert match, f"docs/simulate.md lost its {name} block"
    return str(match.group(2))


@pytest.mark.parametrize(
    "name",
    [
        "simulate-rates",
        "simulate-bursts",
        "simulate-validation",
        "simulate-loopback",
        "simulate-loopback-vllm",
        "simulate-loopback-vllm-text",
        "simulate-loopback-vllm-repeats",
        "simulate-loopback-vllm-120",
    ],
)
def test_quoted_tables_match_the_script(name: str) -> None:
    mod = _script()
    assert _quoted(mod, name) == mod.BLOCKS[name]()


@pytest.mark.slow
def test_quoted_sizing_matches_the_script() -> None:
    mod = _script()
    assert _quoted(mod, "simulate-slo") == mod.slo_block()


def test_ttft_chart_matches_the_script() -> None:
    mod = _script()
    assert (ROOT / "docs" / "img" / "simulate-ttft-vs-rate.svg").read_text() == mod.ttft_chart()
