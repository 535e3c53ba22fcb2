"""docs/pilot.md quotes kit layouts: they must be what `scripts/pilot_docs.py` prints today."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quoted_kits_match_the_script() -> None:
    spec = importlib.util.spec_from_file_location("pilot_docs", ROOT / "scripts" / "pilot_docs.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = (ROOT / "docs" / "pilot.md").read_text()
    block = re.search(r"<!-- pilot-kits:begin -->\n```\n(.*?)\n```\n<!-- pilot-kits:end -->", doc, re.S)
    assert block, "docs/pilot.md lost its quoted kit block"
    assert block.group(1) == mod.kit_block()
    table = re.search(r"<!-- pilot-vllm:begin -->\n(.*?)\n<!-- pilot-vllm:end -->", doc, re.S)
    assert table, "docs/pilot.md lost its recorded vLLM table"
    assert table.group(1) == mod.vllm_block()
    for name, body in (("pilot-ttft", mod.ttft_block()), ("pilot-fit", f"```\n{mod.fit_block()}\n```")):
        found = re.search(rf"<!-- {name}:begin -->\n(.*?)\n<!-- {name}:end -->", doc, re.S)
        assert found, f"docs/pilot.md lost its {name} block"
        assert found.group(1) == body
    for shot in ("img/pilot-report-desktop.png", "img/pilot-report-400px.png"):
        assert shot in doc and (ROOT / "docs" / shot).stat().st_size > 10_000
