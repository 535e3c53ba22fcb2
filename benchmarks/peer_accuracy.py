"""Silica side by side with peer estimators on the same published measurements.

    pip install aiconfigurator llm-analysis      # the peers; this script installs nothing
    python benchmarks/peer_accuracy.py [CSV ...] [--max-rows N]

With no CSV it reads ../shared/benchmarks/published.csv, the bundled files in
src/silica/data/benchmarks/ and the held-out ones. Each tool predicts every row it can express:

- Silica: every row (`silica.validate.predict_rows`, the path of `silica estimate`).
- aiconfigurator (NVIDIA; ships measured kernel data per GPU and TensorRT-LLM/vLLM/SGLang version,
  works offline): fixed-batch decoder rows (`ttft_ms`, `tpot_ms`, `output_tok_s`) on the GPUs it
  has data for, for its bundled model configs or Silica's bundled Hugging Face config.json, through `aiconfigurator.cli.api.cli_estimate(mode="static")` with the
  TensorRT-LLM backend. It has no Neuron data and no training mode here.
- llm-analysis: fixed-batch decoder rows on A100-SXM-80GB and H100-SXM-80GB (its GPU list), with
  the model described from Silica's bundled config (`llm_analysis.analysis.infer`, default
  efficiencies, as a user would call it).

For each peer it prints the rows it was attempted on (inside its scope: its GPUs, metrics and
dtypes), the rows on which it failed with the reasons (the exception each raised, counted), and the
rows it predicted. Errors are split by whether the row is in Silica's fit (the files
calibration.json was fitted on: Silica is scored in sample there) or outside it (the held-out files
and any other CSV): only the second split compares like with like. A peer that is not installed is
reported as such and left out.
The peers are optional: install them in any environment that also has Silica's dependencies (a
separate virtual environment works; run this script with its interpreter and PYTHONPATH=src).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from silica.models import load_model
from silica.validate import BenchmarkRow, predict_rows, read_benchmarks
from silica.validate.benchmarks import bundled_files

ROOT = Path(__file__).resolve().parents[1]
FIXED_BATCH = {"ttft_ms", "tpot_ms", "output_tok_s"}
# Silica chip id -> aiconfigurator system name (aiconfigurator_core/systems/*.yaml).
AIC_SYSTEMS = {
    "h100": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",
    "gb200": "gb200",
    "gb300": "gb300",
    "a100-80gb": "a100_sxm",
    "l40s": "l40s",
}
# Silica model id -> a model config aiconfigurator bundles (same architecture).
AIC_MODELS = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.3-70b": "meta-llama/Meta-Llama-3.1-70B",  # same shapes as 3.1 70B
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
    "mixtral-8x22b": "mistralai/Mixtral-8x22B-v0.1",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
}
# Model types whose MLP is gated (SwiGLU/GeGLU: three d_model x d_ff matrices).
GATED_MLP = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3"}
LLMA_GPUS = {"a100-80gb": "a100-sxm-80gb", "h100": "h100-sxm-80gb"}
LLMA_DTYPES = {("fp16", "fp16"): "w16a16e16", ("bf16", "bf16"): "w16a16e16", ("fp8", "fp8"): "w8a8e16"}

Predictor = Callable[[BenchmarkRow], float | None]


def _bundled_config_dir(model_id: str, workdir: Path) -> str | None:
    """A directory holding Silica's bundled Hugging Face config.json of the model (peers read it)."""
    source = ROOT / "src" / "silica" / "data" / "models" / f"{model_id}.json"
    if not source.exists():
        return None
    target = workdir / "hf" / model_id
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(source.read_text())
    return str(target)


class OutOfScope(Exception):
    """The peer does not cover this row (its GPUs, metrics, dtypes): not attempted."""


def _aiconfigurator(workdir: Path) -> Predictor | None:
    try:
        from aiconfigurator.cli.api import cli_estimate
    except ImportError:
        return None
    logging.getLogger("aiconfigurator").setLevel(logging.ERROR)

    def predict(row: BenchmarkRow) -> float | None:
        system = AIC_SYSTEMS.get(row.chip)
        model = AIC_MODELS.get(row.model) or _bundled_config_dir(row.model, workdir)
        if row.metric not in FIXED_BATCH or system is None or model is None or not row.batch:
            raise OutOfScope
        quant = "fp8" if row.compute_dtype == "fp8" else "float16" if row.compute_dtype == "fp16" else None
        if row.compute_dtype not in ("fp8", "fp16", "bf16") or row.weight_dtype != row.compute_dtype:
            raise OutOfScope
        kwargs = {"gemm_quant_mode": quant, "kvcache_quant_mode": quant} if quant == "fp8" else {}
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            r = cli_estimate(
                model,
                system,
                mode="static",
                isl=row.input_len or 1,
                osl=max(row.output_len or 1, 2),
                batch_size=row.batch,
                tp_size=row.tp or 1,
                pp_size=row.pp or 1,
                **kwargs,
            ).get()
        if row.metric == "ttft_ms":
            return float(r["ttft"])
        if row.metric == "tpot_ms":
            return float(r["tpot"])
        replicas = max(row.chips // ((row.tp or 1) * (row.pp or 1)), 1)
        return float(r["tokens/s"]) * replicas

    return predict


def _llm_analysis(workdir: Path) -> Predictor | None:
    try:
        from llm_analysis.analysis import infer
    except ImportError:
        return None
    logging.getLogger("llm_analysis").setLevel(logging.ERROR)

    def config_path(model_id: str) -> Path | None:
        spec = load_model(model_id)
        if spec.kind == "encoder" or spec.n_experts:
            return None  # llm-analysis describes dense decoders only
        path = workdir / f"{model_id}.json"
        width = 1.5 if spec.model_type in GATED_MLP else 1.0
        if not path.exists():
            config = {
                "name": model_id,
                "num_layers": spec.n_layers,
                "n_head": spec.n_heads,
                "hidden_dim": spec.d_model,
                "vocab_size": spec.vocab_size,
                "max_seq_len": spec.max_positions,
                "num_key_value_heads": spec.n_kv_heads,
                # llm-analysis (0.2.x) counts two MLP matrices of hidden_dim x ffn_embed_dim; a gated
                # (SwiGLU) MLP has three of d_ff, so the same parameters and FLOPs are 1.5 d_ff wide.
                # It also needs expansion_ratio (without it every Llama row raised).
                "ffn_embed_dim": int(width * spec.d_ff),
                "expansion_ratio": width * spec.d_ff / spec.d_model,
                "model_type": "llama",
            }
            path.write_text(json.dumps(config))
        return path

    def predict(row: BenchmarkRow) -> float | None:
        gpu, dtype = LLMA_GPUS.get(row.chip), LLMA_DTYPES.get((row.weight_dtype, row.compute_dtype))
        if row.metric not in FIXED_BATCH or gpu is None or dtype is None or not row.batch:
            raise OutOfScope
        path = config_path(row.model)
        if path is None:
            raise OutOfScope
        tp = row.tp or 1
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            r = infer(
                model_name=str(path),
                gpu_name=gpu,
                dtype_name=dtype,
                log_level="ERROR",
                batch_size_per_gpu=row.batch,
                tp_size=tp,
                seq_len=row.input_len or 1,
                num_tokens_to_generate=max(row.output_len or 1, 1),
            )
        if row.metric == "ttft_ms":
            return float(r["prefill_latency"]) * 1e3
        if row.metric == "tpot_ms":
            return float(r["decode_latency"]) * 1e3
        total = float(r["total_latency"])
        replicas = max(row.chips // tp, 1)
        return row.batch * (row.output_len or 1) / total * replicas

    return predict


def _stats(ape: list[float]) -> str:
    if not ape:
        return "no rows"
    a = np.asarray(ape)
    return f"median {np.median(a):.1%}, p90 {np.percentile(a, 90):.1%} ({a.size} rows)"


def _fitted_files() -> set[Path]:
    """The measurement files calibration.json was fitted on (its `generated_by` command)."""
    from silica.perf.calibration import load_calibration

    return {(ROOT / f).resolve() for f in load_calibration().generated_by.split() if f.endswith(".csv")}


def _reason(err: Exception) -> str:
    first = (str(err).strip().splitlines() or [""])[0][:90]
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="*", type=Path)
    parser.add_argument("--max-rows", type=int, default=None, help="Attempt at most N rows per peer.")
    parser.add_argument("--list", action="store_true", help="Print every row the peers predict.")
    parser.add_argument(
        "--silica-loso",
        type=Path,
        default=None,
        help="A .npy of Silica's leave-one-source-out predictions of the fitted rows, in the order "
        "`silica calibrate` reads them (silica.validate.fit.leave_one_source_out): scores Silica out of "
        "sample on the rows of its fit too, as the peers are everywhere.",
    )
    args = parser.parse_args()
    files = args.csv or [
        ROOT.parent / "shared" / "benchmarks" / "published.csv",
        *bundled_files(),
        *bundled_files(holdout=True),
    ]
    fitted = _fitted_files()
    rows: list[BenchmarkRow] = []
    in_fit: set[int] = set()
    for f in files:
        for r in read_benchmarks(f):
            if Path(f).resolve() in fitted:
                in_fit.add(len(rows))
            rows.append(r)
    silica = {id(p.row): p.predicted for p in predict_rows(rows)}
    predicted: dict[str, dict[int, float]] = {"silica": {}}
    for i, row in enumerate(rows):
        value = silica[id(row)]
        if value is not None:
            predicted["silica"][i] = value
    print(
        f"{len(rows)} rows from {len(files)} files; {len(in_fit)} in Silica's fit, {len(rows) - len(in_fit)} outside it"
    )
    with tempfile.TemporaryDirectory() as tmp:
        peers = {"aiconfigurator": _aiconfigurator(Path(tmp)), "llm-analysis": _llm_analysis(Path(tmp))}
        for name, peer in peers.items():
            if peer is None:
                print(f"{name}: not installed (pip install {name}); left out")
                continue
            predicted[name] = {}
            attempted = 0
            failures: Counter[str] = Counter()
            for i, row in enumerate(rows):
                if args.max_rows is not None and attempted >= args.max_rows:
                    break
                try:
                    value = peer(row)
                except OutOfScope:
                    continue
                except Exception as err:  # the peer raised on a row inside its scope: a failure
                    attempted += 1
                    failures[_reason(err)] += 1
                    continue
                attempted += 1
                if value is None or not value > 0:
                    failures["no positive value returned"] += 1
                else:
                    predicted[name][i] = value
            print(
                f"{name}: attempted {attempted} rows, failed {sum(failures.values())}, "
                f"predicted {len(predicted[name])}"
            )
            for reason, n in failures.most_common():
                print(f"    {n:4d} x {reason}")
    if args.silica_loso is not None:
        # The fitted rows come first, in the calibration's order (published.csv, then the bundled files).
        loso = np.load(args.silica_loso)
        fit_rows = sorted(in_fit)
        if len(loso) != len(fit_rows) or fit_rows != list(range(len(fit_rows))):
            print(f"error: {args.silica_loso} has {len(loso)} predictions for {len(fit_rows)} fitted rows")
            return 2
        predicted["silica held out"] = {i: float(v) for i, v in enumerate(loso) if np.isfinite(v) and v > 0}
    for name, values in predicted.items():
        if name.startswith("silica"):
            continue
        if "silica held out" in predicted:
            pair = sorted(set(values) & set(predicted["silica held out"]) & in_fit)
            for who in ("silica held out", name):
                ape = [abs(predicted[who][i] - rows[i].value) / abs(rows[i].value) for i in pair]
                print(f"  {'in fit, source held out':20s} rows both predict, {who:15s}: {_stats(ape)}")
        for label, split in (
            ("in Silica's fit", in_fit),
            ("outside Silica's fit", set(range(len(rows))) - in_fit),
        ):
            pair = sorted(set(values) & set(predicted["silica"]) & split)
            for who in ("silica", name):
                ape = [abs(predicted[who][i] - rows[i].value) / abs(rows[i].value) for i in pair]
                print(f"  {label:20s} rows silica and {name} both predict, {who:15s}: {_stats(ape)}")
    if args.list:
        shown = set().union(*(set(v) for n, v in predicted.items() if not n.startswith("silica")))
        for i in sorted(shown):
            r = rows[i]
            cells = ", ".join(f"{n} {predicted[n][i]:.4g}" for n in predicted if i in predicted[n])
            where = "fit" if i in in_fit else "out"
            print(
                f"  [{where}] {r.model} {r.chips}x{r.chip} tp{r.tp} b{r.batch} {r.input_len}/{r.output_len} "
                f"{r.metric} measured {r.value:g}: {cells}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
