"""Score `scan_code` against the corpus of real repositories in tests/scan/corpus/ (issue 16).

Each corpus entry holds `repo/` (a trimmed copy of a public repository, or a generated fixture where the
licence forbids a copy) and `expected.yaml`, written by reading the code: the rules a Neuron engineer
would flag in each file, the task, and the effort range they would give. A finding counts when its rule
is flagged in that file with an impact other than "info" on some target; precision and recall are over
(entry, file, rule) triples.

    python -m tests.scan.corpus_eval      # prints the per-rule table and each entry's effort

Issue 30: each expected.yaml names its `set` ("rules": the rules may be written from it; "held-out": labelled
and committed before the scanner ran on it, never used to write rules), and each file has a kind (Python,
configs, scripts, containers, kernels) so that precision and recall can be reported per set and per kind
(benchmarks/scan_corpus_accuracy.py). Findings of the rules in `ALWAYS_COUNTED` count even though their impact
is "info": an existing Neuron path is something the scan must find, not something to port.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from silica.scan import ScanReport, scan_code

CORPUS = Path(__file__).resolve().parent / "corpus"
_SET_LINE = re.compile(r"^set:\s*['\"]?([\w-]+)", re.MULTILINE)


def _set_order(name: str) -> tuple[int, int, str]:
    """rules first, then held-out, held-out-2, ... in their number's order (held-out-10 after held-out-9)."""
    if name == "rules":
        return (0, 0, name)
    tail = name.rsplit("-", 1)[-1]
    return (1, int(tail) if tail.isdigit() else 1, name)


def corpus_sets() -> tuple[str, ...]:
    """Every `set` named in the corpus's expected.yaml files (an entry without one is "rules"): a set added
    later (held-out-7) is scored without editing this module."""
    found = {"rules"}
    for path in CORPUS.glob("*/expected.yaml"):
        m = _SET_LINE.search(path.read_text(encoding="utf-8"))
        found.add(m.group(1) if m else "rules")
    return tuple(sorted(found, key=_set_order))


SETS = corpus_sets()
# Issue 30: a held-out set, once scanned and looked at, joins the sets the rules are written from (third round:
# held-out to held-out-3; fourth round: held-out-4 too; fifth round: held-out-5 too; sixth round: held-out-6 too;
# seventh round: held-out-7 too; eighth round: held-out-8 too). Any other set in the corpus (the next one, labelled
# by another engineer during the eighth round and merged after its rules) is one no rule was written from.
WRITTEN_FROM = (
    "rules",
    "held-out",
    "held-out-2",
    "held-out-3",
    "held-out-4",
    "held-out-5",
    "held-out-6",
    "held-out-7",
    "held-out-8",
)
NOT_WRITTEN_FROM = tuple(s for s in SETS if s not in WRITTEN_FROM)
KINDS = ("python", "configs", "scripts", "containers", "kernels")
ALWAYS_COUNTED = frozenset({"neuron-path"})


def file_kind(path: str) -> str:
    """The kind of file a finding sits in, for the per-kind figures."""
    name = path.rsplit("/", 1)[-1]
    low = name.lower()
    if low.endswith(".py"):
        return "python"
    if low.startswith(("dockerfile", "containerfile")) or low.endswith((".dockerfile", ".def", ".sif.def")):
        return "containers"
    if low.endswith((".sh", ".bash", ".slurm", ".sbatch")) or low.startswith("makefile"):
        return "scripts"
    if low.endswith((".cu", ".cuh")):
        return "kernels"
    return "configs"  # YAML, JSON, TOML, cfg, requirements and other dependency lists


@dataclass(frozen=True)
class Entry:
    name: str
    expected: dict[str, Any]
    report: ScanReport

    @property
    def split(self) -> str:
        return str(self.expected.get("set", "rules"))

    @property
    def wanted(self) -> set[tuple[str, str]]:
        return {(file, rule) for file, rules in self.expected["findings"].items() for rule in rules}

    @property
    def found(self) -> set[tuple[str, str]]:
        return {
            (f.file, f.rule)
            for f in self.report.findings
            if f.file is not None
            and (f.rule in ALWAYS_COUNTED or any(i != "info" for i in f.impact.values()))
        }


def entries(only: str | None = "rules") -> list[Entry]:
    """Scan the corpus entries of one set ("rules", "held-out") or of all (None)."""
    out = []
    for folder in sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file()):
        expected = yaml.safe_load((folder / "expected.yaml").read_text(encoding="utf-8"))
        if only is not None and expected.get("set", "rules") != only:
            continue
        report = scan_code(folder / "repo", task=expected["task"])
        out.append(Entry(folder.name, expected, report))
    return out


def per_rule(items: list[Entry]) -> dict[str, tuple[int, int, int]]:
    """rule -> (true positives, false positives, false negatives)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for e in items:
        wanted, found = e.wanted, e.found
        for _, rule in wanted & found:
            counts[rule][0] += 1
        for _, rule in found - wanted:
            counts[rule][1] += 1
        for _, rule in wanted - found:
            counts[rule][2] += 1
    return {r: (c[0], c[1], c[2]) for r, c in sorted(counts.items())}


def per_kind(items: list[Entry]) -> dict[str, tuple[int, int, int]]:
    """file kind -> (true positives, false positives, false negatives)."""
    counts: dict[str, list[int]] = {k: [0, 0, 0] for k in KINDS}
    for e in items:
        wanted, found = e.wanted, e.found
        for i, pairs in enumerate((wanted & found, found - wanted, wanted - found)):
            for file, _ in pairs:
                counts[file_kind(file)][i] += 1
    return {k: (c[0], c[1], c[2]) for k, c in counts.items()}


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.0%}" if b else "-"


def table(items: list[Entry]) -> str:
    rows = [
        "| rule | expected | found | TP | FP | FN | precision | recall |",
        "|---|---|---|---|---|---|---|---|",
    ]
    total = [0, 0, 0]
    for rule, (tp, fp, fn) in per_rule(items).items():
        total = [total[0] + tp, total[1] + fp, total[2] + fn]
        rows.append(
            f"| {rule} | {tp + fn} | {tp + fp} | {tp} | {fp} | {fn} | {_ratio(tp, tp + fp)} | {_ratio(tp, tp + fn)} |"
        )
    tp, fp, fn = total
    rows.append(
        f"| **all** | {tp + fn} | {tp + fp} | {tp} | {fp} | {fn} | {_ratio(tp, tp + fp)} | {_ratio(tp, tp + fn)} |"
    )
    rows.append("")
    rows.append("| repository | task | effort (weeks) | expected range | work items (cheapest open target) |")
    rows.append("|---|---|---|---|---|")
    for e in items:
        low, high = e.expected["effort_weeks"]
        open_ = [t for t in e.report.target_verdicts.values() if t.verdict != "blocked"]
        v = min(open_ or e.report.target_verdicts.values(), key=lambda t: t.effort_weeks)
        work = ", ".join(f"{w.item} {w.weeks:g}" for w in v.work_items)
        rows.append(
            f"| {e.expected['repository']} | {e.expected['task']} | {e.report.effort_weeks:g} | {low:g}-{high:g} | {work} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(table(entries("rules")))
