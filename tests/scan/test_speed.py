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
    start = time.perf_counter()
    report = scan_code(tmp_path)
    elapsed = time.perf_counter() - start
    assert report.files_scanned == 10_000
    assert elapsed <= 10.0, f"{elapsed:.1f} s"
    assert report.verdict("trainium2") == "needs-work"
    assert {"flash-attn", "xformers", "cuda-source", "torch-cuda"} <= {f.rule for f in report.findings}
