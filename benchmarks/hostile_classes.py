"""How many hostile cases of each class pass: runs tests/hostile under pytest and counts by class.

    python benchmarks/hostile_classes.py                 # every file (slow and e2e tiers included)
    python benchmarks/hostile_classes.py --json          # the counts as one JSON line
    python benchmarks/hostile_classes.py tests/hostile/test_server.py   # some files only

The classes are issue 24's: W writing (outputs that must not replace anything), R reading (any
file kind, any bytes, decoder limits), V validation (ranges, contradictions, duplicates, result
sanity), F store faults, K generated kits, S the web server. A parametrised case counts once; a
property test (hypothesis) counts once however many examples it ran, and is reported apart.
Nothing is assumed: the counts are pytest's outcomes, read from its JUnit XML.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "hostile"
CLASSES = {
    "W": "writing: outputs never replace a device, a FIFO or an input",
    "R": "reading: any file kind, any bytes, limits in every decoder",
    "V": "validation: ranges, contradictions, duplicates, result sanity",
    "F": "store faults: a damaged or busy store is one line",
    "K": "kits: shell metacharacters and newlines stay data",
    "S": "server: Host/Origin, form tokens, caps, jobs, slow clients",
}
# Whole files of one class; test_layers.py and test_issue_cases.py are split by test name.
_FILES = {
    "test_outputs": "W",
    "test_bad_files": "R",
    "test_fuzz_parsers": "R",
    "test_bad_args": "V",
    "test_ranges": "V",
    "test_store_contention": "F",
    "test_server": "S",
}
_ISSUE_CASE = [  # test_issue_cases.py: the case id says its class
    (re.compile(r"out-is|html-is|md-is|-out\b|dev-|fifo"), "W"),
    (re.compile(r"store|db-"), "F"),
    (re.compile(r"bomb|big-|binary|deep|many-rows|utf|json|yaml|csv|toml|digits"), "R"),
]


def classify(classname: str, name: str) -> str:
    module = classname.rsplit(".", 1)[-1]
    if module in _FILES:
        return _FILES[module]
    if module == "test_layers":
        found = re.match(r"test_([wrksvf])_", name)
        return found.group(1).upper() if found else "V"
    if module == "test_issue_cases":
        case = name.partition("[")[2]
        for pattern, cls in _ISSUE_CASE:
            if pattern.search(case):
                return cls
        return "V"
    return "V"


def run(files: list[str]) -> dict[str, dict[str, int]]:
    with tempfile.TemporaryDirectory(prefix="silica-hostile-") as tmp:
        report = Path(tmp) / "junit.xml"
        argv = [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "-m", "",
                f"--junitxml={report}", "-o", "junit_family=xunit2"]  # fmt: skip
        subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
        if not report.exists():
            raise SystemExit("error: pytest wrote no report; run it by hand to see why.")
        tree = ET.parse(report)
    counts: dict[str, Counter[str]] = {cls: Counter() for cls in CLASSES}
    for case in tree.iter("testcase"):
        cls = classify(case.get("classname", ""), case.get("name", ""))
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        counts[cls][outcome] += 1
        counts[cls]["cases"] += 1
    return {cls: dict(c) for cls, c in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="test files (default: all of tests/hostile)")
    parser.add_argument("--json", action="store_true", help="print the counts as one JSON line")
    args = parser.parse_args()
    files = args.files or sorted(str(p.relative_to(ROOT)) for p in HOSTILE.glob("test_*.py"))
    counts = run(files)
    if args.json:
        print(json.dumps(counts, sort_keys=True))
        return
    print(f"{'class':<6}{'cases':>7}{'passed':>8}{'failed':>8}{'skipped':>9}  what")
    for cls, what in CLASSES.items():
        c = counts[cls]
        print(f"{cls:<6}{c.get('cases', 0):>7}{c.get('passed', 0):>8}{c.get('failed', 0):>8}"
              f"{c.get('skipped', 0):>9}  {what}")  # fmt: skip
    total = Counter[str]()
    for c in counts.values():
        total.update(c)
    print(f"{'all':<6}{total['cases']:>7}{total['passed']:>8}{total['failed']:>8}{total['skipped']:>9}")


if __name__ == "__main__":
    main()
