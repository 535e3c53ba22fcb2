"""Issue 4's speed target for code scans: 10,000 files in at most 10 s on 2 cores."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from silica.scan import scan_code

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "scan_speed.py"


def test_ten_thousand_file_repository_scans_within_ten_seconds(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("scan_speed", BENCHMARK)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.make_repo(tmp_path, 10_000)
    python = sorted(tmp_path.rglob("*.py"))
    lines = [p.read_text().count("\n") for p in python]
    # a realistic repository, not stubs: 150-250 lines per Python file, most of the files import torch
    assert len(python) >= 8_000 and min(lines) >= 150 and max(lines) <= 250
    assert sum("import torch" in p.read_text() for p in python) >= 6_000
    start = time.perf_counter()
    report = scan_code(tmp_path)
    elapsed = time.perf_counter() - start
    assert report.files_scanned == 10_000
    # The 10 s target itself is measured by benchmarks/scan_speed.py, not asserted here (CI machines
    # are small and noisy); this only guards against a pathological slowdown.
    assert elapsed <= 60.0, f"{elapsed:.1f} s"
    assert report.verdict("trainium2") == "needs-work"
    rules = {f.rule for f in report.findings}
    assert {"flash-attn", "xformers", "cuda-source", "torch-cuda", "data-dependent-control-flow"} <= rules
    assert {"triton-kernel", "nccl", "float64", "complex-math", "dynamic-shape-op"} <= rules
