"""`silica pilot plan|run|import|compare`: thin wrappers over `silica.pilot`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from silica.cli._common import handle_errors, print_json

pilot_app = typer.Typer(
    help="Prove the estimate on the real thing: a launch kit, a load test, and measured vs predicted.",
    no_args_is_help=True,
)
_JSON = typer.Option(False, "--json", help="Print the library result as JSON.")
_NO_STORE = typer.Option(False, "--no-store", help="Do not keep the result in the store (`silica history`).")


def _ints(text: str | None, flag: str) -> tuple[int, ...] | None:
    from silica.errors import InputError

    if text is None:
        return None
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise InputError(
            f"{flag} {text!r} is not a comma-separated list of integers.", f"pass e.g. {flag} 1,4,16."
        ) from None
    if not values:
        raise InputError(f"{flag} is empty.", f"pass e.g. {flag} 1,4,16.")
    return values


def _floats(text: str | None, flag: str) -> tuple[float, ...] | None:
    from silica.errors import InputError

    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise InputError(
            f"{flag} {text!r} is not a comma-separated list of numbers.", f"pass e.g. {flag} 0.5,1,2."
        ) from None
    if not values:
        raise InputError(f"{flag} is empty.", f"pass e.g. {flag} 0.5,1,2.")
    return values


def _write(path: Path, text: str) -> None:
    """Through the one writing layer: atomic for a file, in place for `-` or /dev/null, one line on
    failure (the path was checked against every input before the work started)."""
    from silica._files import write_text

    write_text(path, text)


def _csv_beside(out: Path) -> Path | None:
    """The CSV written beside a result JSON; none when the result goes to `-` or a device."""
    from silica._files import file_kind, read_head
    from silica.errors import InputError

    if str(out) == "-" or file_kind(out) not in ("missing", "regular"):
        return None
    beside = out.with_suffix(".csv")
    if beside == out:
        raise InputError(
            f"--out {out} ends in .csv; the CSV beside it would replace it.", "give --out x.json."
        )
    # Replace an earlier run's CSV, never a file of the user's.
    from silica.pilot.runner import CSV_COLUMNS

    # How `pilot run`'s CSV begins, now and before the mode/rate columns came (an older run's CSV).
    heads = (",".join(CSV_COLUMNS[:4]).encode(), b"concurrency,requests,completed,failed,")
    found = read_head(beside, max(map(len, heads))) if file_kind(beside) == "regular" else None
    if found is not None and not any(found.startswith(h) for h in heads):
        raise InputError(
            f"--out {out} writes its CSV to {beside}, which exists and is not a pilot result CSV.",
            "give --out another name, or move that file.",
        )
    return beside


def _kit_files(plan: Path | None) -> tuple[Path, ...]:
    """The files of a kit folder a command reads (directly or through the plan): never an output."""
    from silica.pilot.loadplan import PLAN_FILE, PREDICTION_FILE

    return () if plan is None else (plan / PLAN_FILE, plan / PREDICTION_FILE)


def _store(kind: str, name: str, payload: dict[str, Any]) -> None:
    from silica import store

    rid = store.record(kind, name, payload)
    sys.stderr.write(f"kept as {kind} record {rid} (silica history --id {rid})\n")


@pilot_app.command("plan")
@handle_errors
def plan_cmd(
    model: str = typer.Argument(
        ..., help="Model id (silica models) or a path to a config.json / model folder."
    ),
    on: str = typer.Option(..., "--on", help="Instance type, e.g. inf2.xlarge or g6e.xlarge."),
    out: Path = typer.Option(..., "--out", help="Folder to write the kit into."),
    engine: str | None = typer.Option(
        None, "--engine", help="vllm, sglang, trtllm (NVIDIA); vllm-neuron, nxdi (Neuron)."
    ),
    input_len: int = typer.Option(512, "--input-len", help="Prompt tokens per request."),
    output_len: int = typer.Option(128, "--output-len", help="Generated tokens per request."),
    dtype: str = typer.Option("bf16", "--dtype", help="Weight and compute dtype."),
    ttft_slo_ms: float | None = typer.Option(None, "--ttft-slo-ms", help="TTFT SLO for goodput."),
    tpot_slo_ms: float | None = typer.Option(None, "--tpot-slo-ms", help="TPOT SLO for goodput."),
    concurrency: str | None = typer.Option(
        None, "--concurrency", help="Load steps, e.g. 1,8,32 (default: around the predicted capacity)."
    ),
    requests: int = typer.Option(64, "--requests", min=1, help="Requests per step (with --duration 0)."),
    duration: float = typer.Option(
        60.0, "--duration", min=0, help="Steady window of each step in s (0: run --requests per step)."
    ),
    input_lens: str | None = typer.Option(
        None,
        "--input-lens",
        help="Prompt-length sweep at 1 in flight, e.g. 64,256,2048 (default: input/8 and input/2; 0: none).",
    ),
    hf_model: str | None = typer.Option(
        None, "--hf-model", help="What the engine loads (a Hugging Face repo id or path); default: MODEL."
    ),
    as_json: bool = _JSON,
) -> None:
    """Write a SkyPilot task, a shell script, a Kubernetes manifest, the load plan and the prediction."""
    from silica.context import plan_context
    from silica.pilot.kit import make_kit, write_kit

    kit = make_kit(
        model,
        on,
        calibration=plan_context().calibration,
        engine=engine,
        input_len=input_len,
        output_len=output_len,
        dtype=dtype,
        ttft_slo_ms=ttft_slo_ms,
        tpot_slo_ms=tpot_slo_ms,
        concurrency=_ints(concurrency, "--concurrency"),
        requests_per_step=requests,
        serve_model=hf_model,
        duration_s=duration or None,
        input_lens=_sweep(input_lens),
    )
    written = write_kit(kit, out)
    if as_json:
        print_json(kit)
        return
    dep = kit.plan.deployed
    assert dep is not None  # make_kit always sets it
    typer.echo(
        f"{dep.model} on {dep.instance} with {dep.engine}: tp={dep.tp}, max-num-seqs={dep.max_batch}, "
        f"max-model-len={dep.max_len}, {dep.dtype}; load steps {','.join(map(str, kit.plan.concurrency))}"
        + (
            f"; prompt sweep {','.join(map(str, kit.plan.input_lens))} tokens at {kit.plan.sweep_concurrency} in flight"
            if kit.plan.input_lens
            else ""
        )
    )
    for p in written:
        typer.echo(f"  wrote {p}")


@pilot_app.command("run")
@handle_errors
def run_cmd(
    endpoint: str = typer.Option(
        ..., "--endpoint", help="Base URL of an OpenAI-compatible server, e.g. http://HOST:8000."
    ),
    model: str = typer.Option(..., "--model", help="Model name the server serves (as in /v1/models)."),
    plan: Path | None = typer.Option(
        None, "--plan", help="Kit folder from `silica pilot plan` (default: a small generic plan)."
    ),
    out: Path = typer.Option(
        Path("pilot-result.json"), "--out", help="Result JSON (a CSV is written beside it)."
    ),
    concurrency: str | None = typer.Option(None, "--concurrency", help="Override the plan's load steps."),
    input_lens: str | None = typer.Option(
        None, "--input-lens", help="Override the plan's prompt-length sweep, e.g. 64,256 (0: none)."
    ),
    requests: int | None = typer.Option(None, "--requests", min=1, help="Override requests per step."),
    api: str | None = typer.Option(None, "--api", help="completions (default) or chat."),
    no_ignore_eos: bool = typer.Option(
        False, "--no-ignore-eos", help="Do not send ignore_eos (servers that refuse it)."
    ),
    read_timeout_s: float = typer.Option(
        60.0, "--read-timeout", help="Seconds without a byte before a stream counts as stopped."
    ),
    duration: float | None = typer.Option(
        None, "--duration", help="Run each step for this steady window (s); only its requests count."
    ),
    warmup: float | None = typer.Option(None, "--warmup", help="Seconds of load before the steady window."),
    cooldown: float | None = typer.Option(
        None, "--cooldown", help="Seconds of load after it, so its last requests finish at full load."
    ),
    rate: str | None = typer.Option(
        None, "--rate", help="Open-loop steps in requests/s, e.g. 1,2,4 (needs --duration)."
    ),
    arrival: str | None = typer.Option(None, "--arrival", help="poisson (default) or constant arrivals."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the prompts and arrival times."),
    tokenizer: str | None = typer.Option(
        None, "--tokenizer", help="The model's tokenizer (folder or HF id): prompts exact in tokens."
    ),
    dataset: Path | None = typer.Option(
        None,
        "--dataset",
        help="ShareGPT-style JSON: each request's prompt and answer lengths drawn from its conversations.",
    ),
    metrics_url: str | None = typer.Option(
        None, "--metrics-url", help="The engine's Prometheus metrics (default: ENDPOINT/metrics)."
    ),
    no_metrics: bool = typer.Option(False, "--no-metrics", help="Do not scrape the engine's metrics."),
    dcgm_url: str | None = typer.Option(
        None,
        "--dcgm-url",
        help="DCGM exporter /metrics URL (e.g. http://HOST:9400/metrics): record GPU power and J per token.",
    ),
    no_store: bool = _NO_STORE,
    as_json: bool = _JSON,
) -> None:
    """Drive the endpoint through the load plan with streaming requests; Ctrl-C keeps finished steps."""
    from dataclasses import replace

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from silica._files import check_outputs
    from silica.pilot.loadplan import default_plan, read_plan
    from silica.pilot.power import DcgmMeter
    from silica.pilot.prompts import load_tokenizer
    from silica.pilot.runner import check_endpoint, run_plan, step_label, steps_of

    csv_out = _csv_beside(out)
    # Before the load test (minutes): the result and its CSV must not be a kit file or each other.
    check_outputs(
        [("--out", out), ("--out (CSV beside it)", csv_out)],
        inputs=_kit_files(plan) + ((dataset,) if dataset is not None else ()),
    )
    load = read_plan(plan) if plan is not None else default_plan()  # a bad kit: before the network
    check_endpoint(endpoint)  # one line before any progress bar when nothing answers
    dcgm = DcgmMeter(dcgm_url) if dcgm_url else None
    if dcgm is not None:
        dcgm.check()
    steps = _ints(concurrency, "--concurrency")
    rates = _floats(rate, "--rate")
    sweep = _sweep(input_lens)
    load = replace(
        load,
        concurrency=steps or (() if rates or sweep else load.concurrency),
        rates=rates or (() if steps or sweep else load.rates),
        input_lens=sweep if sweep is not None else (() if steps or rates else load.input_lens),
        requests_per_step=requests or load.requests_per_step,
        api=api or load.api,
        ignore_eos=load.ignore_eos and not no_ignore_eos,
        # --requests alone asks for counted steps; --duration for timed ones
        duration_s=duration if duration is not None else (None if requests else load.duration_s),
        warmup_s=warmup if warmup is not None else load.warmup_s,
        cooldown_s=cooldown if cooldown is not None else load.cooldown_s,
        arrival=arrival or load.arrival,
        seed=seed if seed is not None else load.seed,
    )
    load.__post_init__()
    tok = load_tokenizer(tokenizer) if tokenizer else None
    pairs = None
    if dataset is not None:
        from silica.pilot.kit import LEN_MARGIN
        from silica.pilot.prompts import read_length_pairs

        room = load.deployed.max_len - LEN_MARGIN if load.deployed else None
        pairs, skipped = read_length_pairs(dataset, tok, room)
        load = replace(
            load,
            input_len=max(1, round(sum(n for n, _ in pairs) / len(pairs))),
            output_len=max(1, round(sum(m for _, m in pairs) / len(pairs))),
            dataset=f"{dataset} ({len(pairs)} conversations; {skipped} skipped"
            + (f", longer than {room} tokens or without a reply)" if room else ", without a reply)")
            + ("; lengths in tokens" if tok else "; lengths in words"),
        )
        load.__post_init__()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_stderr(),
        transient=False,
    ) as bar:
        timed = load.duration_s is not None
        span = load.warmup_s + (load.duration_s or 0.0) + load.cooldown_s
        tasks = [
            bar.add_task(step_label(mode, v), total=int(span) if timed else load.requests_per_step)
            for mode, v in steps_of(load)
        ]

        def progress(index: int, done: int, total: int) -> None:
            bar.update(tasks[index], completed=done)

        result = run_plan(
            endpoint,
            model,
            load,
            progress=progress,
            read_timeout_s=read_timeout_s,
            tokenizer=tok,
            metrics_url=None
            if no_metrics
            else (metrics_url or endpoint.rstrip("/").removesuffix("/v1") + "/metrics"),
            dcgm=dcgm,
            lengths=pairs,
        )
    payload = result.to_dict()
    _write(out, json.dumps(payload, indent=2) + "\n")
    if csv_out is not None:
        _write(csv_out, result.to_csv())
    if not no_store:
        _store("pilot", f"run {model}", payload)
    if as_json:
        print_json(payload)
    else:
        typer.echo(result.summary)
        typer.echo(f"wrote {out}" + (f" and {csv_out}" if csv_out is not None else ""))
    if result.stopped and not result.steps:
        raise typer.Exit(2)


def _stderr() -> Any:
    from rich.console import Console

    return Console(stderr=True)


@pilot_app.command("import")
@handle_errors
def import_cmd(
    file: Path = typer.Argument(
        ...,
        help="guidellm report, `vllm bench serve` JSON, genai-perf export or NxD Inference benchmark report.",
    ),
    instance: str | None = typer.Option(
        None, "--instance", help="EC2 instance the run used (when the file does not say)."
    ),
    chip: str | None = typer.Option(None, "--chip", help="Chip id (when the file does not say), e.g. l40s."),
    engine: str | None = typer.Option(None, "--engine", help="Serving engine (when the file does not say)."),
    engine_version: str | None = typer.Option(
        None, "--engine-version", help="Engine version (when the file does not say)."
    ),
    model: str | None = typer.Option(None, "--model", help="Model id (when the file does not say)."),
    batch: int | None = typer.Option(
        None, "--batch", help="Concurrent sequences (when the file does not say)."
    ),
    input_len: int | None = typer.Option(
        None, "--input-len", help="Prompt tokens (when the file does not say)."
    ),
    output_len: int | None = typer.Option(
        None, "--output-len", help="Generated tokens (when the file does not say)."
    ),
    tp: int | None = typer.Option(None, "--tp", help="Tensor parallel degree (when the file does not say)."),
    out: Path | None = typer.Option(
        None, "--out", help="Write the rows as a benchmarks CSV (shared/benchmarks schema)."
    ),
    as_json: bool = _JSON,
) -> None:
    """Read a load-test report into rows of the benchmarks schema, engine, version and hardware filled in."""
    from silica._files import check_outputs
    from silica.pilot.importers import import_report, rows_to_csv

    check_outputs([("--out", out)], inputs=(file,))  # `import x.json --out x.json` would destroy x.json
    found = import_report(
        file,
        instance=instance,
        chip=chip,
        engine=engine,
        engine_version=engine_version,
        model=model,
        batch=batch,
        input_len=input_len,
        output_len=output_len,
        tp=tp,
    )
    if out is not None:
        _write(out, rows_to_csv(found.rows))
    if as_json:
        print_json(found)
        return
    typer.echo(
        f"{file}: {found.format} report, {len(found.rows)} rows ({found.engine} {found.engine_version or ''})".rstrip()
    )
    for r in found.rows[:40]:
        typer.echo(
            f"  run {r['run']}: {r['metric']} = {r['value']:.4g} (batch {r['batch']}, {r['chip'] or '?'})"
        )
    if out is not None:
        typer.echo(f"wrote {out}")


@pilot_app.command("compare")
@handle_errors
def compare_cmd(
    results: Path = typer.Argument(..., help="Result JSON from `silica pilot run`."),
    plan: Path | None = typer.Option(
        None, "--plan", help="Kit folder: compare with its prediction.json (default: estimate now)."
    ),
    html: Path | None = typer.Option(
        None, "--html", help="Write the HTML report with latency-vs-load curves here."
    ),
    no_store: bool = _NO_STORE,
    as_json: bool = _JSON,
) -> None:
    """Measured against predicted per step, with the band, a verdict and what it changes for advise."""
    from silica._files import check_outputs
    from silica.pilot.compare import compare_pilot
    from silica.pilot.loadplan import PREDICTION_FILE, read_json

    check_outputs([("--html", html)], inputs=(results, *_kit_files(plan)))
    result = read_json(results, "pilot result")
    prediction = read_json(plan / PREDICTION_FILE, "prediction") if plan is not None else None
    from silica.context import plan_context

    calibration = plan_context().calibration if prediction is None else None  # the overlay, by name
    cmp = compare_pilot(result, prediction, str(results), calibration)
    if html is not None:
        from silica.cli._common import command_line
        from silica.report.page import Meta
        from silica.report.pilot import pilot_html

        _write(html, pilot_html(cmp, Meta(command_line(), "as in the prediction (see calibration line)")))
    if not no_store:
        _store("pilot", f"compare {cmp.model} {cmp.instance}", cmp.to_dict())
    if as_json:
        print_json(cmp)
        return
    typer.echo(cmp.summary)
    typer.echo(f"  advise: {cmp.advise_effect}")
    typer.echo(f"  calibration: {cmp.calibration}")
    for k in cmp.checks:
        band = f"[{k.low:.4g}, {k.high:.4g}]" if k.low is not None and k.high is not None else "[-]"
        pred = f"{k.predicted:.4g}" if k.predicted is not None else "-"
        typer.echo(
            f"  c={k.concurrency:<4}{f' prompt {k.input_len}' if k.sweep else ''} {k.metric:<20} measured {k.measured:<10.4g} predicted {pred:<10} band {band:<22} {k.verdict}"
            + (f" ({k.why})" if k.why else "")
        )
    for t in cmp.ttft_split:
        share = f" ({t.outside_share:.0%} of the client's)" if t.outside_share is not None else ""
        outside = (
            f", outside the engine {t.outside_engine_ms:.3g} ms{share}"
            if t.outside_engine_ms is not None
            else ""
        )
        typer.echo(
            f"  {t.step}: TTFT mean client {_ms(t.client_mean_ms)}, engine {_ms(t.engine_mean_ms)}; p50 client "
            f"{_ms(t.client_p50_ms)}, engine {_ms(t.engine_p50_ms)}{outside}"
        )
    if html is not None:
        typer.echo(f"wrote {html}")


def _sweep(text: str | None) -> tuple[int, ...] | None:
    """--input-lens: None when not given, () for "0" (no sweep), else the lengths."""
    if text is None:
        return None
    if text.strip() == "0":
        return ()
    return _ints(text, "--input-lens")


def _ms(value: float | None) -> str:
    return f"{value:.3g} ms" if value is not None else "-"


def calibrate_from_pilot(results: Path, out: Path | None) -> None:
    """`silica calibrate --from-pilot RESULTS [--out FILE]`: write or update the user overlay."""
    from silica.pilot.calibrate import fit_from_pilot, write_overlay
    from silica.pilot.loadplan import read_json

    entry = fit_from_pilot(read_json(results, "pilot result"), str(results))
    path = write_overlay(entry, out)
    moved = (
        ", ".join(f"{k} {entry['shipped'][k]:.4g} -> {v:.4g}" for k, v in entry["params"].items())
        or "nothing moved"
    )
    bound = f" (at its bound: {', '.join(entry['at_bound'])})" if entry["at_bound"] else ""
    typer.echo(f"{entry['family']} / {entry['engine']}: {moved}{bound}; wrote {path}")
    for name, why in entry.get("why", {}).items():
        typer.echo(f"  {name}: {why}")
    for metric, (lo, hi) in entry.get("bands", {}).items():
        typer.echo(f"  band {metric}: {lo:.3g}-{hi:.3g}x of the estimate ({entry['band_notes'][metric]})")
    for why in entry["fitted_on"].get("left_out", []):
        typer.echo(f"  left out {why}")
    if fe := entry.get("front_end"):
        lo, hi = fe["spread_ms"]
        p50 = (
            f"; of the p50s median {fe['median_p50_ms']:.3g} ms, {fe['spread_p50_ms'][0]:.3g}-"
            f"{fe['spread_p50_ms'][1]:.3g} ms"
            if "median_p50_ms" in fe
            else ""
        )
        typer.echo(
            f"  front end (client minus engine TTFT) over {len(fe['steps'])} step(s): of the means median "
            f"{fe['median_ms']:.3g} ms, {lo:.3g}-{hi:.3g} ms{p50}; the monitor takes the p50 difference at "
            "the pilot's concurrency nearest each window off the model's TTFT for engine-side histograms"
        )
    typer.echo(
        f"  applies to estimates on {entry['family']} with --engine {entry['engine']} "
        f"(e.g. silica estimate MODEL --on INSTANCE --engine {entry['engine']})"
    )
    if out is not None:
        typer.echo(f"  estimates use it when SILICA_CALIBRATION_OVERLAY={out}")


def calibrate_from_monitor(report: Path, out: Path | None, lengths: str) -> None:
    """`silica calibrate --from-monitor REPORT [--lengths IN:OUT] [--out FILE]`."""
    from silica.errors import InputError
    from silica.pilot.calibrate import write_overlay
    from silica.pilot.from_monitor import fit_from_monitor
    from silica.pilot.loadplan import read_json

    try:
        input_len, output_len = (int(v) for v in lengths.split(":"))
    except ValueError:
        raise InputError(
            f"--lengths {lengths!r} is not PROMPT:OUTPUT tokens.", "pass e.g. --lengths 1024:256."
        ) from None
    for entry in fit_from_monitor(
        read_json(report, "monitor report"), str(report), input_len=input_len, output_len=output_len
    ):
        path = write_overlay(entry, out)
        moved = (
            ", ".join(f"{k} {entry['shipped'][k]:.4g} -> {v:.4g}" for k, v in entry["params"].items())
            or "nothing moved"
        )
        typer.echo(
            f"{entry['family']} / {entry['engine']} ({entry['fitted_on']['windows']} steady windows): {moved}; wrote {path}"
        )
        for why in entry["fitted_on"].get("left_out", []):
            typer.echo(f"  windows left out: {why}")


def register(app: typer.Typer) -> None:
    app.add_typer(pilot_app, name="pilot")
