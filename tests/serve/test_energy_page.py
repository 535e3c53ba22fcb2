"""Energy on the compare page: W, J/token, tok/s/MW and kgCO2e/1M columns, and a tokens-per-MW chart
whose bars follow the table's order (silica.serve.pages, no server)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi")

from silica import api
from silica.serve.pages import ENERGY_HEAD, _ranked


def test_compare_page_has_energy_columns_and_a_tokens_per_mw_chart_in_table_order() -> None:
    result = api.compare("llama-3.1-8b", input_len=1024, output_len=256).to_dict()
    html = _ranked(result)
    for head in ENERGY_HEAD:
        assert f">{head}</th>" in html
    mw = html[
        html.index('aria-labelledby="mw-chart-title"') : html.index("</svg>", html.index("mw-chart-title"))
    ]
    bars = [b for b in re.findall(r'text-anchor="end">([^<]+)</text>', mw) if "tok/s/MW" not in b]
    known = [
        f"{r['count']} x {r['instance']}"
        for r in result["results"]
        if r.get("feasible") and (r.get("energy") or {}).get("output_tokens_per_s_per_mw") is not None
    ]
    assert bars and bars == known[: len(bars)]  # same order as the table, unknown power left out
    first = next(r for r in result["results"] if (r.get("energy") or {}).get("output_tokens_per_s_per_mw"))
    assert f">{first['energy']['output_tokens_per_s_per_mw']:,.0f}<" in html
    unknown = [r for r in result["results"] if r.get("feasible") and not (r.get("energy") or {}).get("known")]
    assert unknown  # Inferentia's power is published nowhere: its cells are dashes
    assert f"{unknown[0]['energy']['known']}" == "False"


def test_training_compare_page_has_training_energy_columns() -> None:
    result = api.compare("llama-3.1-8b", task="training", seq_len=4096, tokens=1e10).to_dict()
    html = _ranked(result)
    assert ">J/train tok</th>" in html and ">MWh/run</th>" in html
