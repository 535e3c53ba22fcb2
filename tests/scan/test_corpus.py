"""Issue 16: the scan on eight real public repositories, judged against hand-written expected findings.

`corpus_eval` scans each tests/scan/corpus/<name>/repo for the task its expected.yaml names and compares
(file, rule) pairs with what a Neuron engineer flagged by reading the code. The table it prints is the
closing note's per-rule table (`python -m tests.scan.corpus_eval`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tests.scan.corpus_eval import NOT_WRITTEN_FROM, SETS, WRITTEN_FROM, Entry, entries, per_rule, table

ROOT = Path(__file__).resolve().parents[2]
ACCURACY = ROOT / "benchmarks" / "scan_corpus_accuracy.py"


@pytest.fixture(scope="module")
def corpus() -> list[Entry]:
    return entries()


def test_corpus_has_eight_real_repositories_with_provenance(corpus: list[Entry]) -> None:
    assert len(corpus) >= 8
    for e in corpus:
        assert len(e.expected["commit"]) == 40, e.name
        assert e.expected["task"] in ("inference", "training")
        assert e.expected["findings"], e.name
        root = Path(e.report.subject)
        if e.expected["copy"].startswith("trimmed"):  # a copy keeps its licence next to it
            assert (root / "LICENSE").is_file(), e.name
        for file in e.expected["findings"]:  # every expected file exists in the copy
            assert (root / file).is_file(), (e.name, file)


def test_precision_and_recall_at_least_ninety_percent(corpus: list[Entry]) -> None:
    counts = per_rule(corpus)
    tp = sum(c[0] for c in counts.values())
    fp = sum(c[1] for c in counts.values())
    fn = sum(c[2] for c in counts.values())
    print("\n" + table(corpus))
    assert tp / (tp + fp) >= 0.9, table(corpus)
    assert tp / (tp + fn) >= 0.9, table(corpus)


def test_repository_efforts_inside_their_expected_ranges(corpus: list[Entry]) -> None:
    """Issue 30: with 14 repositories in the rules set, at least 85% fall inside the range a Neuron engineer
    gave and none is off by more than half its range's bound (the misses are listed in docs/scan_corpus.md)."""
    inside = 0
    for e in corpus:
        low, high = e.expected["effort_weeks"]
        inside += low <= e.report.effort_weeks <= high
        assert low / 2 <= e.report.effort_weeks <= high * 1.6, (e.name, e.report.effort_weeks, (low, high))
    assert inside / len(corpus) >= 0.85, inside


def test_model_parallel_repositories_cost_more_than_a_single_gpu_script(corpus: list[Entry]) -> None:
    """fairscale (Llama) and Megatron-core are sized above nanoGPT, and the difference is the parallel layers."""
    by_name = {e.name: e for e in corpus}
    small = by_name["nanogpt"].report
    small_items = {w.item for w in small.target_verdicts["trainium2"].work_items}
    assert "replace-parallel-layers" not in small_items
    for name in ("llama-fairscale", "megatron-lm"):
        big = by_name[name].report
        assert big.effort_weeks > small.effort_weeks, name
        items = {w.item: w for w in big.target_verdicts["trainium2"].work_items}
        layers = items["replace-parallel-layers"]
        assert layers.weeks >= 4.0 and layers.rules, (name, layers)
        assert {"fairscale-model-parallel", "megatron-core"} & set(layers.rules)


def test_training_task_blocks_inferentia2_and_adds_the_loss_parity_run(corpus: list[Entry]) -> None:
    nano = next(e for e in corpus if e.name == "nanogpt").report
    assert nano.task == "training"
    assert nano.verdict("inferentia2") == "blocked"
    assert "does not train" in nano.target_verdicts["inferentia2"].blockers[0]
    assert nano.verdict("trainium2") == "needs-work"
    numerics = next(w for w in nano.target_verdicts["trainium2"].work_items if w.item == "validate-numerics")
    assert "task:training" in numerics.rules


@pytest.fixture(scope="module")
def held_out() -> dict[str, list[Entry]]:
    return {s: entries(s) for s in SETS if s != "rules"}


def test_held_out_sets_have_provenance_and_variety(held_out: dict[str, list[Entry]]) -> None:
    """Issue 30: at least 20 repositories in all; each held-out entry names its commit, licence and task,
    and the copies keep their licence next to them."""
    assert sum(len(v) for v in held_out.values()) + len(entries("rules")) >= 20
    for items in held_out.values():
        assert len(items) >= 3
        for e in items:
            assert len(e.expected["commit"]) == 40 and e.expected["licence"], e.name
            # the repository's own licence file, under whatever name it ships it (LICENSE, LICENSE.md)
            assert any(Path(e.report.subject).glob("LICENSE*")), e.name
            for file in e.expected["findings"]:
                assert (Path(e.report.subject) / file).is_file(), (e.name, file)


def test_held_out_sets_never_fall_below_their_first_scan(held_out: dict[str, list[Entry]]) -> None:
    """Each held-out set's out-of-sample figures are recorded at its first scan
    (benchmarks/results/scan_corpus_<set>_first_scan.md); later rules may only keep or raise them."""
    for name, items in held_out.items():
        record = ROOT / "benchmarks" / "results" / f"scan_corpus_{name.replace('-', '')}_first_scan.md"
        assert record.is_file(), (
            f"{name} has no first-scan record: python benchmarks/scan_corpus_accuracy.py --set {name} --first-scan"
        )
        row = next(r for r in record.read_text(encoding="utf-8").splitlines() if r.startswith(f"| {name} |"))
        first_p, first_r = (float(c.strip().rstrip("%")) / 100 for c in row.strip("|").split("|")[-2:])
        counts = per_rule(items)
        tp, fp, fn = (sum(c[i] for c in counts.values()) for i in range(3))
        assert tp / (tp + fp) >= first_p - 0.0005 and tp / (tp + fn) >= first_r - 0.0005, (name, tp, fp, fn)


def test_docs_scan_corpus_matches_the_generator(held_out: dict[str, list[Entry]]) -> None:
    """docs/scan_corpus.md is what benchmarks/scan_corpus_accuracy.py writes; regenerate it after a change."""
    spec = importlib.util.spec_from_file_location("scan_corpus_accuracy", ACCURACY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    by_set = {"rules": entries("rules"), **held_out}
    assert (ROOT / "docs" / "scan_corpus.md").read_text(encoding="utf-8") == module.document(by_set), (
        "run: python benchmarks/scan_corpus_accuracy.py --write docs/scan_corpus.md"
    )


def test_written_from_sets_pooled_at_this_commit(held_out: dict[str, list[Entry]]) -> None:
    """Issue 30, eighth round: the 62 repositories the rules were written from (rules to held-out-8, in sample),
    pooled: precision and recall at this commit (93.7% and 98.0% when written; before the round, 93.0% and
    94.0% with held-out-8's first scan counted; configs 88.7% -> 98.9% recall), and the effort inside the range a
    Neuron engineer gave for at least 80% of them (53 of 62 when written, 52 before the round: held-out-8's
    text-embeddings-inference came into range). Out-of-sample figures are the first-scan records, never these."""
    pooled = [e for s in WRITTEN_FROM for e in ({"rules": entries("rules")} | held_out)[s]]
    assert len(pooled) >= 62
    counts = per_rule(pooled)
    tp, fp, fn = (sum(c[i] for c in counts.values()) for i in range(3))
    assert tp / (tp + fp) >= 0.93, (tp, fp)
    assert tp / (tp + fn) >= 0.975, (tp, fn)
    inside = sum(
        e.expected["effort_weeks"][0] <= e.report.effort_weeks <= e.expected["effort_weeks"][1]
        for e in pooled
    )
    assert inside / len(pooled) >= 0.8, inside


def test_sets_come_from_the_expected_files_and_a_first_scan_is_recorded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A set named in an expected.yaml (the next held-out set once merged) is scored without editing the scripts, and
    `--first-scan` writes its record once (benchmarks/results/scan_corpus_<set>_first_scan.md)."""
    assert SETS[0] == "rules" and set(WRITTEN_FROM) <= set(SETS)
    assert set(NOT_WRITTEN_FROM) == set(SETS) - set(WRITTEN_FROM)
    spec = importlib.util.spec_from_file_location("scan_corpus_accuracy", ACCURACY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    assert module.main(["--set", "held-out-6", "--first-scan"]) == 0
    text = (tmp_path / "scan_corpus_heldout6_first_scan.md").read_text(encoding="utf-8")
    assert text.startswith("# First scan of held-out-6 (issue 30), ")
    assert "| held-out-6 | 5 |" in text and "## Effort per repository" in text
    assert module.main(["--set", "held-out-6", "--first-scan"]) == 2  # never overwritten
    assert module.main(["--first-scan"]) == 2  # one set at a time
