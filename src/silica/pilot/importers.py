"""`silica pilot import`: load-test reports users already have, as rows of the benchmarks schema.

Formats, each recognised by its own keys (see tests/data/pilot/SOURCES.md for the example files):
- guidellm `benchmarks.json` (guidellm 0.8: `benchmarks[].metrics.*_ms.successful`),
- `vllm bench serve --save-result` JSON (`median_ttft_ms`, `output_throughput`, `max_concurrency`),
- NVIDIA genai-perf `profile_export_genai_perf.json` (`time_to_first_token.p50`, `input_config`),
- NVIDIA AIPerf `profile_export_aiperf.json` (the same metric blocks, with `aiperf_version`),
- the NxD Inference `benchmark_report.json` (`context_encoding_model.latency_ms_p50`, ...).
Rows carry engine, version and hardware from the file where it says, else from the options.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silica.errors import DataFileError, InputError

__all__ = ["COLUMNS", "Imported", "import_report", "rows_to_csv"]

COLUMNS = (
    "id", "run", "source", "source_ref", "chip", "chips", "instance", "task", "model", "weight_dtype",
    "compute_dtype", "batch", "micro_batch", "input_len", "output_len", "seq_len", "tp", "pp", "cp", "ep",
    "metric", "value", "engine", "engine_version",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Imported:
    format: str
    engine: str | None
    engine_version: str | None
    rows: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class _Context:
    path: Path
    instance: str | None
    chip: str | None
    engine: str | None
    engine_version: str | None
    model: str | None
    batch: int | None
    input_len: int | None
    output_len: int | None
    tp: int | None


def _row(ctx: _Context, fmt: str, run: str, metric: str, value: float, **shape: Any) -> dict[str, Any]:
    if metric.endswith("_ms"):  # a latency: its declared range (silica.limits), named as in the report
        from silica.limits import check

        value = check("latency_ms", value, f"{ctx.path.name}: {run} {metric}")
    row: dict[str, Any] = dict.fromkeys(COLUMNS, "")
    chips = _chips(ctx.instance)
    row.update(
        run=run,
        source=f"{fmt} report imported by silica pilot import",
        source_ref=str(ctx.path.name),
        chip=ctx.chip or _chip(ctx.instance) or "",
        chips=chips if chips is not None else "",
        instance=ctx.instance or "",
        task="inference",
        model=shape.pop("model", None) or ctx.model or "",
        weight_dtype="bf16",
        compute_dtype="bf16",
        batch=shape.pop("batch", None) or ctx.batch or "",
        input_len=shape.pop("input_len", None) or ctx.input_len or "",
        output_len=shape.pop("output_len", None) or ctx.output_len or "",
        tp=shape.pop("tp", None) or ctx.tp or "",
        metric=metric,
        value=float(value),
        engine=shape.pop("engine", None) or ctx.engine or "",
        engine_version=shape.pop("engine_version", None) or ctx.engine_version or "",
    )
    return row


def _chip(instance: str | None) -> str | None:
    if not instance:
        return None
    from silica.catalog import get_instance, load_catalog

    return str(get_instance(load_catalog(), instance).chip)


def _chips(instance: str | None) -> int | None:
    if not instance:
        return None
    from silica.catalog import get_instance, load_catalog

    return int(get_instance(load_catalog(), instance).chips)


def _num(value: Any, name: str = "") -> float | None:
    """A measured number, or None where the report has none (absent, zero: no successful request).

    A negative or infinite one is no measurement: refused with the report's own key, instead of being
    dropped as if absent (a negative TTFT silently removed the row)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if value < 0 or not math.isfinite(value):
        raise ValueError(f"{name or 'a measurement'} is {value:g}, which no run can measure")
    if value > 0 and name.endswith("_ms"):  # a latency: its declared range (silica.limits)
        from silica.limits import check

        return check("latency_ms", value, name)
    return float(value) if value > 0 else None


def _guidellm(raw: dict[str, Any], ctx: _Context) -> Imported:
    (raw.get("metadata") or {}).get("guidellm_version")
    backend = ((raw.get("config") or {}).get("spec") or {}).get("backend") or {}
    rows: list[dict[str, Any]] = []
    for i, b in enumerate(raw["benchmarks"]):
        m = b["metrics"]
        strategy = (b.get("config") or {}).get("strategy") or {}

        def stat(name: str, key: str = "median", m: dict[str, Any] = m) -> float | None:
            return _num(((m.get(name) or {}).get("successful") or {}).get(key), name)

        batch = strategy.get("streams") or strategy.get("max_concurrency")
        rate = strategy.get("rate")
        if not batch:  # a rate run (constant, poisson): the concurrency it measured
            flight = stat("request_concurrency", "mean")
            batch = max(1, round(flight)) if flight else None

        shape = {
            "batch": batch,
            "input_len": round(stat("prompt_token_count", "mean") or 0) or None,
            "output_len": round(stat("output_token_count", "mean") or 0) or None,
            "model": ctx.model or backend.get("model"),
        }
        at = f"rate={rate:g}" if isinstance(rate, int | float) and not strategy.get("streams") else batch
        run = f"guidellm-{i}-{strategy.get('type_', 'run')}@{at}"
        # guidellm's time_per_output_token_ms is request latency / output tokens, TTFT included; its
        # inter_token_latency_ms is (latency - TTFT) / (tokens - 1), the TPOT of the benchmarks schema.
        for metric, name, key in (
            ("ttft_ms", "time_to_first_token_ms", "median"),
            ("tpot_ms", "inter_token_latency_ms", "median"),
            ("output_tok_s", "output_tokens_per_second", "mean"),
        ):
            value = stat(name, key)
            if value is not None:
                rows.append(_row(ctx, "guidellm", run, metric, value, **shape))
    return Imported("guidellm", ctx.engine, ctx.engine_version or None, tuple(rows))


def _little(raw: dict[str, Any], output_len: float | None) -> int | None:
    """Requests in flight on average in a rate run (Little's law): completed per second x mean latency."""
    per_s = _num(raw.get("request_throughput"), "request_throughput")
    e2e = _num(raw.get("mean_e2el_ms"), "mean_e2el_ms")
    if e2e is None and output_len:
        ttft, tpot = (
            _num(raw.get("mean_ttft_ms"), "mean_ttft_ms"),
            _num(raw.get("mean_tpot_ms"), "mean_tpot_ms"),
        )
        e2e = ttft + tpot * (output_len - 1) if ttft is not None and tpot is not None else None
    if per_s is None or e2e is None:
        return None
    return max(1, round(per_s * e2e / 1e3))


def _vllm_bench(raw: dict[str, Any], ctx: _Context) -> Imported:
    """A `--max-concurrency` run has its batch; a `--request-rate` run gets the concurrency it measured
    (Little's law) and keeps its rate in the run name, so `validate` can use it."""
    done = int(raw.get("completed") or 0)
    out_len = raw["total_output_tokens"] / done if done and raw.get("total_output_tokens") else None
    shape = {
        "batch": raw.get("max_concurrency") or _little(raw, out_len),
        "input_len": round(raw["total_input_tokens"] / done)
        if done and raw.get("total_input_tokens")
        else None,
        "output_len": round(raw["total_output_tokens"] / done)
        if done and raw.get("total_output_tokens")
        else None,
        "model": ctx.model or raw.get("model_id"),
        "engine": ctx.engine or "vllm",
    }
    rate = raw.get("request_rate")
    at = raw.get("max_concurrency") or (f"rate={rate:g}" if isinstance(rate, int | float) else rate)
    run = f"vllm-bench-{raw.get('date', '')}@{at}"
    rows = [
        _row(ctx, "vllm bench serve", run, metric, v, **shape)
        for metric, key in (
            ("ttft_ms", "median_ttft_ms"),
            ("tpot_ms", "median_tpot_ms"),
            ("output_tok_s", "output_throughput"),
        )
        if (v := _num(raw.get(key), key)) is not None
    ]
    return Imported("vllm bench serve", ctx.engine or "vllm", ctx.engine_version, tuple(rows))


_TRITON_BACKENDS = {"tensorrtllm": "trtllm", "vllm": "vllm"}  # genai-perf `--backend` -> Silica engine


def _stat(raw: dict[str, Any], name: str, key: str, unit: str | None = None) -> float | None:
    """One statistic of a genai-perf / AIPerf metric block (`{"unit": "ms", "avg": .., "p50": ..}`)."""
    block = raw.get(name)
    if block is None:
        return None
    if not isinstance(block, dict):
        raise ValueError(f"{name} is {type(block).__name__}, not an object of statistics")
    if unit is not None and block.get("unit", unit) != unit:
        raise ValueError(f"{name} is in {block.get('unit')!r}, not {unit!r}")
    return _num(block.get(key), name)


def _nvidia_rows(
    raw: dict[str, Any], ctx: _Context, fmt: str, batch: Any, model: Any, engine: Any
) -> list[dict[str, Any]]:
    """TTFT and ITL medians (ms), output tokens/s: the same names in genai-perf and its successor AIPerf.

    Their `inter_token_latency` is per request (request latency - TTFT) / (output tokens - 1), the
    TPOT of the benchmarks schema; lengths are the mean ISL/OSL over the run, as for the other formats.
    """
    shape = {
        "batch": batch if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0 else None,
        "input_len": round(_stat(raw, "input_sequence_length", "avg") or 0) or None,
        "output_len": round(_stat(raw, "output_sequence_length", "avg") or 0) or None,
        "model": ctx.model or (model if isinstance(model, str) else None),
        "engine": ctx.engine or engine,
    }
    run = f"{fmt}@{shape['batch']}"
    return [
        _row(ctx, fmt, run, metric, v, **shape)
        for metric, name, key, unit in (
            ("ttft_ms", "time_to_first_token", "p50", "ms"),
            ("tpot_ms", "inter_token_latency", "p50", "ms"),
            ("output_tok_s", "output_token_throughput", "avg", "tokens/sec"),
        )
        if (v := _stat(raw, name, key, unit)) is not None
    ]


def _genai_perf(raw: dict[str, Any], ctx: _Context) -> Imported:
    """Older genai-perf releases keep their flags flat in `input_config`; 0.0.16 nests them by section."""
    cfg = raw.get("input_config") or {}
    nested = cfg.get("perf_analyzer") or {}
    batch = (nested.get("stimulus") or {}).get("concurrency") or cfg.get("concurrency")
    models = cfg.get("model_names") or cfg.get("model") or []
    backend = (
        (cfg.get("endpoint") or {}).get("backend")
        if isinstance(cfg.get("endpoint"), dict)
        else cfg.get("backend")
    )
    engine = _TRITON_BACKENDS.get(str(backend).lower()) if backend else None
    model = models[0] if isinstance(models, list) and models else None
    rows = _nvidia_rows(raw, ctx, "genai-perf", batch, model, engine)
    return Imported("genai-perf", ctx.engine or engine, ctx.engine_version, tuple(rows))


def _aiperf(raw: dict[str, Any], ctx: _Context) -> Imported:
    """AIPerf (ai-dynamo/aiperf) `profile_export_aiperf.json`: concurrency in `input_config.phases`."""
    cfg = raw.get("input_config") or {}
    phases = [p for p in cfg.get("phases") or () if p.get("kind", "profiling") == "profiling"]
    batch = phases[0].get("concurrency") if phases else None
    items = (cfg.get("models") or {}).get("items") or []
    model = items[0].get("name") if items else None
    rows = _nvidia_rows(raw, ctx, "aiperf", batch, model, None)
    return Imported("aiperf", ctx.engine, ctx.engine_version, tuple(rows))


def _nxdi(raw: dict[str, Any], ctx: _Context) -> Imported:
    missing = [f for f in ("batch", "input_len", "output_len", "tp") if getattr(ctx, f) is None]
    if missing or not (ctx.instance or ctx.chip):
        raise InputError(
            f"{ctx.path} is an NxD Inference benchmark report, which does not record its shapes or hardware.",
            "pass --instance, --batch, --input-len, --output-len and --tp as given to inference_demo.",
        )
    cte, tkg = raw.get("context_encoding_model") or {}, raw.get("token_generation_model") or {}
    run = f"nxdi-{ctx.path.stem}"
    engine = ctx.engine or "nxdi"
    rows = []
    if (v := _num(cte.get("latency_ms_p50"), "context_encoding_model.latency_ms_p50")) is not None:
        rows.append(_row(ctx, "NxD Inference", run, "ttft_ms", v, engine=engine))
    if (v := _num(tkg.get("latency_ms_p50"), "token_generation_model.latency_ms_p50")) is not None:
        rows.append(_row(ctx, "NxD Inference", run, "tpot_ms", v, engine=engine))
    return Imported("NxD Inference benchmark", engine, ctx.engine_version, tuple(rows))


def import_report(
    path: Path,
    *,
    instance: str | None = None,
    chip: str | None = None,
    engine: str | None = None,
    engine_version: str | None = None,
    model: str | None = None,
    batch: int | None = None,
    input_len: int | None = None,
    output_len: int | None = None,
    tp: int | None = None,
) -> Imported:
    """Recognise the report's format by its keys and turn each measured point into schema rows."""
    from silica._files import parse_json, read_text

    hint = "the JSON report the tool wrote"
    raw = parse_json(read_text(path, "load-test report", hint), path, hint)
    ctx = _Context(path, instance, chip, engine, engine_version, model, batch, input_len, output_len, tp)
    if not isinstance(raw, dict):
        raise DataFileError(f"{path} is not a JSON object.", "pass the JSON report the tool wrote.")
    try:
        if isinstance(raw.get("benchmarks"), list) and "guidellm_version" in (raw.get("metadata") or {}):
            found = _guidellm(raw, ctx)
        elif "median_ttft_ms" in raw or "output_throughput" in raw:
            found = _vllm_bench(raw, ctx)
        elif "aiperf_version" in raw:
            found = _aiperf(raw, ctx)
        elif isinstance(raw.get("time_to_first_token"), dict) or isinstance(raw.get("request_latency"), dict):
            found = _genai_perf(raw, ctx)
        elif "context_encoding_model" in raw or "token_generation_model" in raw:
            found = _nxdi(raw, ctx)
        else:
            raise DataFileError(
                f"{path} is not a report Silica knows "
                "(guidellm, vllm bench serve, genai-perf, AIPerf, NxD Inference).",
                "pass one of those tools' JSON reports.",
            )
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise DataFileError(
            f"{path} looks like a known report but is malformed: "
            f"{err if isinstance(err, ValueError) else repr(err)}.",
            "pass the file the tool wrote.",
        ) from err
    if not found.rows:
        raise DataFileError(
            f"{path} ({found.format}) has no successful measurement to import.",
            "check that the run succeeded.",
        )
    rows = tuple({**r, "id": i + 1} for i, r in enumerate(found.rows))
    return Imported(found.format, found.engine, found.engine_version, rows)


def rows_to_csv(rows: tuple[dict[str, Any], ...]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS)
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return out.getvalue()
