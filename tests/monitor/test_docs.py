"""docs/monitor.md quotes the replay's report: it must be what `scripts/monitor_docs.py` prints today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_docs_monitor_block_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("monitor_docs", ROOT / "scripts" / "monitor_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = (ROOT / "docs" / "monitor.md").read_text()
    found = module.BLOCK.search(doc)
    assert found, "docs/monitor.md lost its generated block"
    assert found.group(2) == module.report_block(), "run: python scripts/monitor_docs.py --write"


def test_docs_monitor_block_carries_the_tested_findings() -> None:
    doc = (ROOT / "docs" / "monitor.md").read_text()
    block = doc.split("<!-- generated:monitor -->")[1].split("<!-- /generated:monitor -->")[0]
    assert "chat-neuron" in block and "50% slower" in block  # the drift the replay puts in hour two
    assert "advice (right-size): chat-gpu" in block and "saves $" in block


def test_docs_real_vllm_block_is_up_to_date() -> None:
    """The recorded vLLM windows' TTFT judgements quoted in docs/monitor.md are what the script finds."""
    spec = importlib.util.spec_from_file_location("monitor_docs", ROOT / "scripts" / "monitor_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = module.VLLM_BLOCK.search((ROOT / "docs" / "monitor.md").read_text())
    assert found, "docs/monitor.md lost its generated monitor-vllm block"
    assert found.group(2) == module.vllm_block(), "run: python scripts/monitor_docs.py --write"
