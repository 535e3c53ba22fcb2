"""Precision and recall of `scan_code` on the scan corpus, for the rules set and the held-out set apart.

    python benchmarks/scan_corpus_accuracy.py                 # both sets, printed
    python benchmarks/scan_corpus_accuracy.py --set rules     # only the repositories the rules came from
    python benchmarks/scan_corpus_accuracy.py --write docs/scan_corpus.md
    python benchmarks/scan_corpus_accuracy.py --set held-out-6   # one set (any `set` of an expected.yaml)
    python benchmarks/scan_corpus_accuracy.py --set held-out-7 --first-scan
        # a new set's first scan, recorded once in benchmarks/results/scan_corpus_heldout7_first_scan.md

The corpus is tests/scan/corpus/ (its REPOS.md records the split, licences and commits). "rules" entries are
the repositories the scan's rules may be written from; "held-out" entries were labelled by hand and committed
before the scanner first ran on them, and no rule was written from them, so their figures are the honest
out-of-sample measure. A finding counts when its rule is flagged in that file (a (repository, file, rule)
triple) with an impact other than "info" on some target, or is an existing Neuron path. Figures are given
overall, per file kind (Python, configs, scripts, containers, kernels) and per rule, and each repository's
effort and verdict are listed next to the range a Neuron engineer gave it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.scan.corpus_eval holds the scoring; src/ comes from PYTHONPATH

from tests.scan.corpus_eval import (  # noqa: E402
    NOT_WRITTEN_FROM,
    SETS,
    WRITTEN_FROM,
    Entry,
    entries,
    per_kind,
    per_rule,
)


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "-"


def _row(label: str, tp: int, fp: int, fn: int) -> str:
    return f"| {label} | {tp + fn} | {tp + fp} | {tp} | {fp} | {fn} | {_pct(tp, tp + fp)} | {_pct(tp, tp + fn)} |"


_HEAD = ["| | expected | found | TP | FP | FN | precision | recall |", "|---|---|---|---|---|---|---|---|"]


def pooled(by_set: dict[str, list[Entry]]) -> list[str]:
    """This round's split: the sets the rules were written from, pooled, against the sets they were not
    (none until a new held-out set is merged), overall and per file kind (empty when a run scores only some
    sets)."""
    groups = {f"rules written from ({', '.join(WRITTEN_FROM)})": WRITTEN_FROM}
    if NOT_WRITTEN_FROM:
        groups[f"not written from ({', '.join(NOT_WRITTEN_FROM)})"] = NOT_WRITTEN_FROM
    if not all(s in by_set for names in groups.values() for s in names):
        return []
    items = {label: [e for s in names for e in by_set[s]] for label, names in groups.items()}
    title = "Rules written from vs not written from" if NOT_WRITTEN_FROM else "Rules written from"
    out = [f"## {title}", ""]
    if not NOT_WRITTEN_FROM:
        out += [
            "Every set in the corpus has had rules written from it; the next held-out set is scored apart.",
            "",
        ]
    out += _HEAD
    for label, group in items.items():
        counts = per_rule(group)
        out.append(
            _row(
                f"{label}, {len(group)} repositories", *(sum(c[i] for c in counts.values()) for i in range(3))
            )
        )
    for label, group in items.items():
        out += ["", f"## By file kind: {label}", "", *_HEAD]
        for kind, (tp, fp, fn) in per_kind(group).items():
            if tp + fp + fn:
                out.append(_row(kind, tp, fp, fn))
    return [*out, ""]


def report(by_set: dict[str, list[Entry]]) -> str:
    """The Markdown report: this round's split, totals per set, per file kind, per rule, and effort per
    repository."""
    out = [
        *pooled(by_set),
        "## Totals by set",
        "",
        "| set | repositories |" + _HEAD[0][3:],
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, items in by_set.items():
        counts = per_rule(items)
        tp, fp, fn = (sum(c[i] for c in counts.values()) for i in range(3))
        out.append(f"| {name} | {len(items)} " + _row("", tp, fp, fn)[3:])
    for name, items in by_set.items():
        out += ["", f"## By file kind: {name} set", "", *_HEAD]
        for kind, (tp, fp, fn) in per_kind(items).items():
            if tp + fp + fn:
                out.append(_row(kind, tp, fp, fn))
    for name, items in by_set.items():
        out += ["", f"## By rule: {name} set", "", *_HEAD]
        out += [_row(rule, *c) for rule, c in per_rule(items).items()]
    out += [
        "",
        "## Effort per repository",
        "",
        "| repository | set | task | verdict (trn1 / trn2 / inf2) | effort (weeks) | expected range | in range |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, items in by_set.items():
        for e in items:
            low, high = e.expected["effort_weeks"]
            tv = e.report.target_verdicts
            verdicts = " / ".join(
                f"{tv[t].verdict} {tv[t].effort_weeks:g}" for t in ("trainium1", "trainium2", "inferentia2")
            )
            ok = "yes" if low <= e.report.effort_weeks <= high else "no"
            out.append(
                f"| {e.expected['repository']} | {name} | {e.expected['task']} | {verdicts} | "
                f"{e.report.effort_weeks:g} | {low:g}-{high:g} | {ok} |"
            )
    return "\n".join(out) + "\n"


def first_scans() -> str:
    """The out-of-sample figures: each held-out set's totals at its first scan (benchmarks/results/)."""
    out = [
        "## Out of sample: each held-out set at its first scan",
        "",
        "| set | repositories | expected | found | TP | FP | FN | precision | recall | record |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    pooled = [0, 0, 0]
    repos = 0
    paths = RESULTS.glob("scan_corpus_heldout*_first_scan.md")
    for path in sorted(paths, key=lambda p: p.name.replace("heldout_", "heldout1_")):
        rows = [r for r in path.read_text(encoding="utf-8").splitlines() if r.startswith("| held-out")]
        if rows:
            out.append(f"{rows[0]} {path.relative_to(ROOT)} |")
            cells = [c.strip() for c in rows[0].strip("|").split("|")]
            pooled = [a + int(b) for a, b in zip(pooled, cells[4:7], strict=True)]
            repos += int(cells[1])
    tp, fp, fn = pooled
    out.append(f"| all held-out, pooled | {repos} " + _row("", tp, fp, fn)[3:] + " |")
    return "\n".join(out) + "\n"


def work_item_basis() -> str:
    """Every work item of a code scan with its numbers and stated basis (data/neuron/effort.yaml)."""
    from silica.scan import knowledge

    effort = knowledge().effort
    out = [
        "## Work items and their basis",
        "",
        f"Totals are rounded up to {effort.round_to_weeks:g} week. A change counts once per file (rule "
        "`counts: file`) or per finding (`counts: finding`: each Triton kernel); each rule's weeks and each "
        "item's have a knee at their cap, beyond which they count at the item's tail share. A repository that "
        f"ships a Neuron path has its CUDA-path items scaled by {effort.neuron_path_share:g}. A rule found only "
        "in dependency lists, install commands and guarded imports (an optional library nothing switches on) "
        "counts at "
        f"{effort.declared_share:g} of its weeks, and adds nothing once code or a config uses the library; a "
        f"file's second and later Triton kernels count at {effort.same_file_kernel_share:g} of the first's "
        "(they share its design and test harness); for training, the loss-parity run is the numerics check, so "
        "validate-numerics pays no second base (effort.yaml states each assumption).",
        "",
        "| work item | base (weeks) | knee (weeks) | tail share | extra on | basis |",
        "|---|---|---|---|---|---|",
    ]
    for name, item in effort.work_items.items():
        extra = ", ".join(
            f"{t} +{w:g}: {item.target_extra_reasoning.strip()}" for t, w in item.target_extra_weeks.items()
        )
        basis = " ".join(item.reasoning.split())
        out.append(
            f"| {name} | {item.base_weeks:g} | {item.cap_weeks:g} | {item.tail_share:g} | "
            f"{' '.join(extra.split()) or '-'} | {basis} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=SETS, help="score only this set (default: all)")
    parser.add_argument("--write", type=Path, help="also write the report to this Markdown file")
    parser.add_argument(
        "--first-scan",
        action="store_true",
        help="with --set: record this set's first scan in benchmarks/results/ (once; never overwritten)",
    )
    args = parser.parse_args(argv)
    if args.first_scan and not args.set:
        print("error: --first-scan records one set; add --set NAME (e.g. --set held-out-7)", file=sys.stderr)
        return 2
    record = first_scan_path(args.set) if args.first_scan else None
    if record is not None and record.exists():
        print(
            f"error: {_shown(record)} exists: a set's first scan is recorded once; "
            "score it again without --first-scan",
            file=sys.stderr,
        )
        return 2
    by_set = {s: entries(s) for s in ([args.set] if args.set else SETS)}
    text = report(by_set)
    print(text)
    if args.write is not None:
        args.write.write_text(document(by_set), encoding="utf-8")
    if record is not None:
        record.write_text(first_scan_record(args.set, by_set[args.set], text), encoding="utf-8")
        print(f"recorded {_shown(record)}")
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def first_scan_path(name: str) -> Path:
    """Where a set's first scan is kept (tests/scan/test_corpus.py reads it under this name)."""
    return RESULTS / f"scan_corpus_{name.replace('-', '')}_first_scan.md"


def first_scan_record(name: str, items: list[Entry], text: str) -> str:
    """A first-scan record like benchmarks/results/scan_corpus_heldout6_first_scan.md: the date, the commit,
    the protocol, the labels no rule covers, then the report of that set alone."""
    import datetime
    import subprocess

    from silica.scan import knowledge

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    dirty = ""
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        dirty = " (with uncommitted changes)" if status.strip() else ""
    except (OSError, subprocess.CalledProcessError):
        pass
    known = {r.id for r in knowledge().code_rules}
    labels = sorted({rule for e in items for _, rule in e.wanted} - known)
    no_rule = (
        f" Labels with no rule ({', '.join(f'`{r}`' for r in labels)}) count as misses."
        if labels
        else " Every label names a rule the scan has."
    )
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    return (
        f"# First scan of {name} (issue 30), {today}, commit {commit}{dirty}\n\n"
        f"The scanner ran on these {len(items)} repositories for the first time here. Their labels were committed "
        "before the rules of the round that scans them were written, from the other sets only (the git history "
        f"shows the order). These are the out-of-sample figures for the rules as of this commit.{no_rule} "
        f"Produced by `python benchmarks/scan_corpus_accuracy.py --set {name} --first-scan`.\n\n" + text
    )


def document(by_set: dict[str, list[Entry]]) -> str:
    """docs/scan_corpus.md: the first-scan figures, this commit's figures per set, kind and rule, efforts,
    and the basis of every work item."""
    return (
        DOC_HEAD
        + first_scans()
        + "\n# Figures at this commit\n\n"
        + report(by_set)
        + "\n"
        + work_item_basis()
    )


RESULTS = ROOT / "benchmarks" / "results"
DOC_HEAD = """# Code scan accuracy on real repositories

Generated by `python benchmarks/scan_corpus_accuracy.py --write docs/scan_corpus.md`; do not edit by hand.
The corpus, its split into a rules set and a held-out set, licences and commits are in
tests/scan/corpus/REPOS.md. Held-out repositories were labelled and committed before the scanner first ran on
them and no rule was written from them: their figures at that first scan are the out-of-sample measure.
Generic fixes made after a first scan make that set in-sample, which is why a second held-out set exists;
the figures "at this commit" for held-out sets scanned before are therefore in-sample and are shown apart.
Labels are never changed after a set's first scan.

Third round (issue 30): by then the first three held-out sets had been looked at, so they count with the rules
set as the sets the rules are written from; a fourth set (held-out-4: open-r1, mamba, llm-foundry, FastChat,
TinyLlama) was trimmed and labelled by hand, the labels committed before any scan of it, the round's rules written
from the other sets only, and held-out-4 scanned last. The first table below is that split at this commit; the
held-out-4 row of the first-scan table is that round's out-of-sample figure.

Fourth round: held-out-4, scanned and looked at, joined the sets the rules are written from; a fifth set
(held-out-5: ms-swift, peft, nanotron, lm-evaluation-harness, lingua) was trimmed and labelled by hand and the labels
committed before any scan of it and before the round's rules were written; it was scanned last. Its first-scan
row is that round's out-of-sample figure.

Fifth round: held-out-5, scanned and looked at, joined the sets the rules are written from; a sixth set
(held-out-6: OLMo, LLaVA, flash-attention, lmdeploy, direct-preference-optimization), chosen to lean on configs,
launch scripts and containers, was trimmed and labelled by hand and the labels committed before any scan of it and
before the round's rules were written; it was scanned last. Its first-scan row is that round's out-of-sample
figure.

Sixth round: held-out-6, scanned and looked at, joined the sets the rules are written from (rules and the effort
model's classes were written from its misses and false positives); a seventh set (held-out-7: autotrain-advanced,
Qwen, picotron, LoRAX, production-stack, slime, SageAttention, nanochat, NxD Training) was picked, trimmed and
labelled by another engineer in parallel, unseen by the author of this round's rules, and scanned once after the
two branches were merged (`python benchmarks/scan_corpus_accuracy.py --set held-out-7 --first-scan`). Its
first-scan row is that round's out-of-sample figure.

Seventh round: held-out-7, scanned once and looked at, joined the sets the rules are written from. Seven rounds of
out-of-sample recall between 60% and 85% against in-sample figures near 99% showed rules written per case, so this
round's rules were written as classes from held-out-7's misses and false positives: one table of CUDA-only
libraries (distribution names, aliases such as the repository's name, top-level import names) looked up by every
file kind (dependency lists, pip/uv/poetry/conda installs with any options, `git clone` + build, `make build-X`,
image build stages, a local install's extras, checkouts on PYTHONPATH, images named after CUDA engines); GPU
requests in any orchestrator (NVIDIA device-plugin resources, chart GPU keys, GPU instance types, Ray GPU counts,
`docker run --gpus`; Slurm GPU directives are reported without being sized); launchers held in strings or built as
argv lists; nvidia-smi; Python run from shell scripts matched by every Python rule; CUDA wheel indexes; Unsloth;
trainer FP8 switches; imports of a repository's own CUDA extensions; and existing Neuron paths in any spelling and
file kind. Effort classes: an engine run as a prebuilt image is a declaration, a launcher flag for a feature the
repository's Python implements is part of that change, and a repository that already trains on Neuron pays its
training check at the Neuron-path share. An eighth set (held-out-8: starcoder, EasyContext, alpaca_farm,
ColossalAI, text-embeddings-inference, ray-llm, h2ogpt, marlin, awsome-distributed-training) was picked, trimmed and
labelled by another engineer in parallel, unseen by the author of this round's rules, and scanned once after the
two branches were merged (`python benchmarks/scan_corpus_accuracy.py --set held-out-8 --first-scan`).

Eighth round: held-out-8, scanned once and looked at, joined the sets the rules are written from. Configs had been
the weakest file kind in every held-out set (recall 40%, 61%, 53% in the last three), so this round's work is one
generic config reader (silica.scan.config_reader) in place of more line patterns: every key path and scalar value
of a YAML or JSON file is judged by class, at any depth and in any spelling of the key, and counts only when the
value switches the feature on (flash attention and attention-implementation values, bitsandbytes and GPU
quantisers, FSDP strategies, ZeRO stages, apex AMP, CUDA devices and TF32 switches, NVIDIA device-plugin counts,
Ray GPU requests under Ray's blocks, serving engines named after a CUDA-only library); container argv lists are
read as launcher lines, compose GPU reservations as CUDA containers, components switched off (`enabled: false`)
as running nothing, config templates as configs and Cargo crate lists against the same library table. Other
classes: Ray GPU counts in Python, CUDA builds chosen by distribution name (cuda-wheels), ColossalAI (no Neuron
counterpart; the plan moves it to NxD Training), C++ files including CUDA headers, llama.cpp's CUDA build,
pytorch/pytorch and NCCL test bases, FSDP sharding strategies and ring attention on launchers; precision: an
Accelerator built with nothing CUDA-specific, a CUDA switch assigned False and a repository cloning itself are not
findings. Effort: an item reached only by declarations pays no base. A ninth set (held-out-9: EasyR1, nanoVLM,
InternVL, microsoft/LoRA, flash-linear-attention, diffusers, kubeai, BentoVLLM, OpenLLM, litserve, RouteLLM, NxD
Inference) was picked, trimmed and labelled by another engineer in parallel, unseen by the author of this round's
rules, and scanned once after the two branches were merged (`python benchmarks/scan_corpus_accuracy.py --set
held-out-9 --first-scan`); "not written from" below is held-out-9. Part of what each first scan counts as missed is
the labellers' conventions rather than the scanner: labellers of different sets disagree on whether Slurm GPU
directives, node selectors for GPU nodes and CUDA wheel indexes are findings (held-out-9's misses include 5
`slurm-gpu`, 7 `k8s-gpu` and 5 `cuda-torch-index` labels; earlier sets' frozen labels leave such lines unflagged).

"""

if __name__ == "__main__":
    raise SystemExit(main())
