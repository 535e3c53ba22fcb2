"""Every option of a plan (estimate, compare), declared once for every front door.

The command line (`silica estimate/compare`), the notebook API (`silica.api`), the HTTP API
(`POST /api/v1/estimate|compare`) and the web forms (`/estimate`, `/compare`) all offer these
options. Before this table each door declared its own copy and they drifted: the web form offered a
purchase option the library refused, the HTTP API had no engine and no user systems. Now each door
derives its names, defaults, limits, choices and help from `PLAN_OPTIONS`, and
`tests/test_options.py` compares every door against it.

A name is the library's own (the workload field, the `silica.api` keyword, the HTTP field and the form
field); `flag` is how the command line spells it. Limits are the library's (`silica.limits`, which the workload checks), so no
door can accept a value the library would refuse or refuse one it would accept. Choices are read
from the library's own lists when asked (purchase options, dtypes, engines, ranking objectives), so a
new engine in data/stacks.yaml appears at every door by itself.

An option is at every door unless `doors` says otherwise, and then `why` says why: a path is read
only on the user's own machine (a server never reads a path it is sent), and output formatting
belongs to the command line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from silica.errors import InputError
from silica.limits import (
    MAX_BATCH,
    MAX_GLOBAL_BATCH,
    MAX_PARALLEL,
    MAX_RATE,
    MAX_TOKENS,
    MAX_TOKENS_PER_MONTH,
    MAX_VIRTUAL_STAGES,
)

__all__ = [
    "DOORS",
    "PLAN_OPTIONS",
    "Door",
    "PlanOption",
    "check_option",
    "form_value",
    "option",
    "options_for",
    "price_lines",
]

Door = Literal["cli", "api", "http", "form"]
DOORS: tuple[Door, ...] = ("cli", "api", "http", "form")
Kind = Literal["int", "float", "text", "choice", "bool", "prices", "path", "yaml", "list"]
Command = Literal["estimate", "compare"]

# The longest name a text option takes (a model id, an instance, a region, an engine).
MAX_NAME = 200
# A systems file sent over HTTP or pasted into a form: a few dozen systems fit in a few kilobytes.
MAX_SYSTEMS_TEXT = 100_000
MAX_PRICES = 200  # instance prices given at once: there are fewer than 200 instance types


def _purchase_options() -> tuple[str, ...]:
    from silica.catalog.schema import PURCHASE_OPTIONS

    return tuple(PURCHASE_OPTIONS)


def _dtypes() -> tuple[str, ...]:
    from silica.catalog.schema import DTYPES

    return tuple(DTYPES)


def _engines() -> tuple[str, ...]:
    from silica.perf.stacks import load_stacks

    return tuple(sorted(load_stacks()))


def _objectives() -> tuple[str, ...]:
    from silica.plan.compare import OBJECTIVES

    return tuple(OBJECTIVES)


def _tasks() -> tuple[str, ...]:
    return ("inference", "training")


@dataclass(frozen=True, slots=True)
class PlanOption:
    """One option: its name at every door, its kind, default, range or choices, and help.

    `low`/`high` bound a number (`low_open`: the value must be above `low`); `choices` returns the
    library's list of accepted names. `task` limits a workload option to one task (None: both or
    neither). `commands` are the plans that take it; `doors` the front doors that offer it (`why`
    says why one is missing). `label` is what a form shows and what a field-level error names.
    """

    name: str
    kind: Kind
    default: Any
    help: str
    label: str
    flag: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: Callable[[], tuple[str, ...]] | None = None
    max_length: int | None = None
    task: Literal["inference", "training"] | None = None
    commands: tuple[Command, ...] = ("estimate", "compare")
    doors: tuple[Door, ...] = DOORS
    why: str = ""
    required: bool = False
    hint: str = ""  # the form's short hint under the field (default: `help`)
    release: bool = False  # a choice that may carry `@RELEASE` (`vllm@0.2`; perf/stacks.py resolves it)

    def allowed(self) -> tuple[str, ...]:
        """The names a choice option accepts (the library's own list)."""
        return self.choices() if self.choices is not None else ()

    def bounds(self) -> str:
        """The range as a person reads it ("at least 1 and at most 100,000,000")."""
        low = "" if self.low is None else f"{'more than' if self.low_open else 'at least'} {self.low:,g}"
        high = "" if self.high is None else f"at most {self.high:,g}"
        return " and ".join(p for p in (low, high) if p)


def _num(
    name: str,
    kind: Literal["int", "float"],
    default: Any,
    label: str,
    flag: str,
    help: str,
    low: float,
    high: float | None = None,
    *,
    low_open: bool = False,
    task: Literal["inference", "training"] | None = None,
    commands: tuple[Command, ...] = ("estimate", "compare"),
    doors: tuple[Door, ...] = DOORS,
    why: str = "",
    hint: str = "",
) -> PlanOption:
    return PlanOption(
        name, kind, default, help, label, flag, low=low, high=high, low_open=low_open, task=task,
        commands=commands, doors=doors, why=why, hint=hint,
    )  # fmt: skip


_PATH_WHY = "a path is read on the user's own machine only: a server never reads a path it is sent"
_FORMAT_WHY = "output format: the API and HTTP return the result itself, the pages show it"
_SIMULATE_WHY = (
    "sizing by simulation runs the discrete-event simulator per instance type (seconds to minutes): "
    "a command-line job, not a request"
)

PLAN_OPTIONS: tuple[PlanOption, ...] = (
    # What to plan and where.
    PlanOption("model", "text", None, "Registry model id (the CLI also reads a config.json path).",
               "Model", "MODEL", max_length=MAX_NAME, required=True),
    PlanOption("on", "text", None, "INSTANCE[xCOUNT] (trn1.32xlarge, p5.48xlargex4), CHIPxCOUNT "
               "(gb300x72, h100x1024) or a system from --systems.", "Instance", "--on",
               max_length=MAX_NAME, commands=("estimate",), required=True),
    PlanOption("task", "choice", "inference", "inference or training.", "Task", "--task", choices=_tasks),
    # The deployment (estimate) or the candidates (compare).
    _num("tp", "int", None, "Tensor parallel (tp)", "--tp",
         "Tensor parallelism (GPUs or NeuronCores; default: chosen).", 1, MAX_PARALLEL,
         commands=("estimate",), hint="empty: chosen for you"),
    _num("pp", "int", None, "Pipeline parallel (pp)", "--pp",
         "Pipeline stages (default: chosen).", 1, MAX_PARALLEL, commands=("estimate",),
         hint="empty: chosen for you"),
    _num("ep", "int", None, "Expert parallel (ep)", "--ep",
         "Expert parallelism of a mixture-of-experts model (default: chosen). Serving: attention runs "
         "data-parallel over ep = tp ranks, experts spread over them (1: all split by tp).",
         1, MAX_PARALLEL, commands=("estimate",), hint="mixture-of-experts models only"),
    _num("cp", "int", None, "Context parallel (cp)", "--cp",
         "Context parallelism, ranks that split each sequence. Training: default chosen. Inference: "
         "a long prompt's prefill split over cp ranks, decode KV sharded (vllm, sglang, vllm-neuron; "
         "default 1).",
         1, MAX_PARALLEL, commands=("estimate",), hint="long sequences"),
    PlanOption("instances", "list", None, "Only these instance types (repeatable).", "Instances",
               "--instance", max_length=MAX_PRICES, commands=("compare",), doors=("cli", "api", "http"),
               why="the compare page ranks every instance type; its table is the filter"),
    PlanOption("include_announced", "bool", False, "Also rank announced, unreleased chips.",
               "Include announced chips", "--include-announced", commands=("compare",),
               doors=("cli", "api", "http"), why="the compare page ranks what can be bought today"),
    PlanOption("rank", "choice", "cost", "cost, energy (J/output token), carbon (kgCO2e/1M) or "
               "tokens-per-mw.", "Rank by", "--rank", choices=_objectives, commands=("compare",)),
    # The workload.
    _num("input_len", "int", 1024, "Input tokens", "--input-len", "Prompt tokens per request.",
         1, MAX_TOKENS, task="inference", hint="prompt length per request"),
    _num("output_len", "int", 256, "Output tokens", "--output-len", "Generated tokens per request.",
         0, MAX_TOKENS, task="inference", hint="generated per request"),
    _num("batch", "int", None, "Batch", "--batch",
         "Concurrent sequences (default: the best under SLOs and memory).", 1, MAX_BATCH,
         task="inference", hint="requests at once (empty: the largest that fits)"),
    _num("ttft_slo_ms", "float", None, "TTFT SLO (ms)", "--ttft-slo-ms",
         "Time-to-first-token limit, ms.", 0.0, low_open=True, task="inference",
         hint="time to first token limit"),
    _num("tpot_slo_ms", "float", None, "TPOT SLO (ms)", "--tpot-slo-ms",
         "Time-per-output-token limit, ms.", 0.0, low_open=True, task="inference",
         hint="time per output token limit"),
    _num("rate_req_per_s", "float", None, "Requests per second", "--rate",
         "Requests per second (sets the load).", 0.0, MAX_RATE, low_open=True, task="inference",
         hint="load (or tokens per month)"),
    _num("tokens_per_month", "float", None, "Output tokens per month", "--tokens-per-month",
         "Output tokens per month (sets the load).", 0.0, MAX_TOKENS_PER_MONTH, low_open=True,
         task="inference", hint="load (or requests per second)"),
    PlanOption("compute_dtype", "choice", "bf16", "Compute dtype: fp32, tf32, bf16, fp16, fp8, int8 or fp4.",
               "Compute dtype", "--dtype",
               choices=_dtypes),
    PlanOption("weight_dtype", "choice", None, "Weight dtype if narrower than compute: fp32, tf32, bf16, fp16, "
               "fp8, int8 or fp4 (default: the compute dtype).",
               "Weight dtype", "--weight-dtype", choices=_dtypes, task="inference"),
    _num("seq_len", "int", None, "Sequence length", "--seq-len",
         "Inference: compiled max context (Neuron bucket). Training: sequence length (required).",
         1, MAX_TOKENS, hint="training: required"),
    _num("tokens", "float", None, "Training tokens", "--tokens",
         "Training tokens (for time and cost to train).", 0.0, low_open=True, task="training",
         hint="training: tokens per run"),
    _num("global_batch", "int", None, "Global batch", "--global-batch",
         "Training sequences per step (default ~4M tokens).", 1, MAX_GLOBAL_BATCH, task="training",
         hint="training: sequences per step"),
    _num("micro_batch", "int", 1, "Micro batch", "--micro-batch",
         "Training micro-batch per data-parallel rank.", 1, MAX_BATCH, task="training",
         hint="training: per data-parallel rank"),
    _num("virtual_stages", "int", 1, "Virtual pipeline stages (vp)", "--vp",
         "Training: model chunks per pipeline stage (interleaved 1F1B; 1: plain 1F1B).",
         1, MAX_VIRTUAL_STAGES, task="training", hint="training: chunks per stage (1: plain 1F1B)"),
    _num("deadline_days", "float", None, "Deadline (days)", "--deadline-days",
         "Training must finish within this many days.", 0.0, low_open=True, task="training",
         hint="training: must finish within"),
    # Whose prices, which stack, which systems.
    PlanOption("prices", "prices", None, "Your prices: INSTANCE=USD_PER_HOUR (the CLI's --price is "
               "repeatable; the API and HTTP take a mapping, the form one a line).",
               "Your prices (INSTANCE=USD per hour, one a line)", "--price", max_length=MAX_PRICES),
    PlanOption("option", "choice", None, "Purchase option: on_demand, reserved_1yr, spot, capacity_block or "
               "user (default: from your settings).",
               "Purchase option", "--option", choices=_purchase_options),
    PlanOption("region", "text", None, "Price region (default: your settings, else where the catalog "
               "has one).", "Region", "--region", max_length=40,
               hint="e.g. us-east-1 (empty: your settings)"),
    PlanOption("engine", "choice", None, "Serving or training stack (data/stacks.yaml): trtllm, "
               "trtllm-legacy, nim-trtllm, vllm, vllm-legacy, sglang (NVIDIA serving); vllm-neuron, nxdi, "
               "transformers-neuronx, optimum-neuron, torch-neuronx (Neuron); nemo, megatron, "
               "megatron-bridge, neuronx-distributed (training), optionally @RELEASE (vllm@0.2, trtllm@0.12). "
               "Default: the vendor's recommended one.", "Engine", "--engine", choices=_engines, release=True),
    PlanOption("systems", "yaml", None, "Your own systems (YAML: chip, chips per domain, link and "
               "network bandwidth, price), as a file on the CLI and in the notebook API, as text over "
               "HTTP and in the form.", "Your systems (YAML)", "--systems", max_length=MAX_SYSTEMS_TEXT),
    # Energy: the site's power overhead and the price of electricity.
    _num("pue", "float", None, "Site PUE", "--pue",
         "Site PUE (default 1.135, Cloud Carbon Footprint's AWS figure).", 1.0,
         hint="power usage effectiveness (empty: 1.135)"),
    _num("usd_per_mwh", "float", None, "Electricity USD per MWh", "--usd-per-mwh",
         "Electricity price (on-premises): energy USD per 1M tokens.", 0.0,
         hint="on-premises: prices the energy per token"),
    # Sizing by simulation (a discrete-event run per instance type: seconds to minutes).
    _num("ttft_p90_ms", "float", None, "p90 TTFT target (ms)", "--ttft-p90-ms",
         "p90 TTFT target: also size by simulation (with --rate).", 0.0, low_open=True,
         task="inference", doors=("cli",), why=_SIMULATE_WHY),
    _num("tbt_p99_ms", "float", None, "p99 TBT target (ms)", "--tbt-p99-ms",
         "p99 time-between-tokens target for the simulated sizing, ms.", 0.0, low_open=True,
         task="inference", doors=("cli",), why=_SIMULATE_WHY),
    PlanOption("prices_file", "path", None, "Prices file (CSV in the catalog schema, or YAML "
               "{instance: usd}).", "Prices file", "--prices", doors=("cli",), why=_PATH_WHY),
    PlanOption("calibration", "path", None, "Calibration file from `silica calibrate` (default: "
               "bundled).", "Calibration", "--calibration", doors=("cli",), why=_PATH_WHY),
    PlanOption("output", "text", None, "table, json, csv or tsv. Default: table on a terminal, tsv when "
               "piped.", "Output", "--output", commands=("compare",), doors=("cli",), why=_FORMAT_WHY),
    PlanOption("as_json", "bool", False, "Print the library result as JSON.", "JSON", "--json",
               doors=("cli",), why=_FORMAT_WHY),
)  # fmt: skip

_BY_NAME: dict[str, PlanOption] = {o.name: o for o in PLAN_OPTIONS}


def option(name: str) -> PlanOption:
    """The declared option called `name`."""
    return _BY_NAME[name]


def options_for(door: Door, command: Command | None = None) -> tuple[PlanOption, ...]:
    """The options a front door offers (for one command, or for either)."""
    return tuple(o for o in PLAN_OPTIONS if door in o.doors and (command is None or command in o.commands))


def check_option(name: str, value: Any, label: str | None = None) -> Any:
    """`value` if the declared option `name` accepts it, else one `InputError` in the option's words.

    The check every door shares for choices and ranges: the HTTP models and the forms call it, and
    the library's own constructors apply the same limits (they are the same constants).
    """
    o = _BY_NAME[name]
    what = label or o.label
    if value is None:
        return None
    if o.kind == "choice":
        allowed = o.allowed()
        base = value.partition("@")[0] if o.release and isinstance(value, str) else value
        if base not in allowed:
            raise InputError(f"{what}: unknown {o.name} {value!r}.", f"use one of {', '.join(allowed)}.")
        return value
    if o.kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InputError(f"{what} must be a finite number, got {value!r}.", f"give {what} as a number.")
        if o.kind == "int" and not float(value).is_integer():
            raise InputError(f"{what} must be a whole number, got {value!r}.", f"give {what} as one.")
        above = o.low is None or (value > o.low if o.low_open else value >= o.low)
        if not above or (o.high is not None and value > o.high):
            raise InputError(f"{what} = {value:,g} is out of range.", f"give a value {o.bounds()}.")
        return int(value) if o.kind == "int" else float(value)
    if o.max_length is not None and isinstance(value, str | list | Mapping) and len(value) > o.max_length:
        raise InputError(f"{what} is too long ({len(value):,}).", f"give at most {o.max_length:,}.")
    return value


def form_value(name: str, raw: str) -> Any:
    """A form field's text as the option's value (None when empty); numbers may carry `,` or `_`."""
    o = _BY_NAME[name]
    text = raw.strip()
    if o.kind not in ("int", "float"):
        return text or None
    text = text.replace(",", "").replace("_", "")
    if not text:
        return None
    try:
        return int(text) if o.kind == "int" else float(text)
    except ValueError:
        what = "a whole number" if o.kind == "int" else "a number"
        raise InputError(f"{o.label}: {text[:40]!r} is not {what}.", f"give {o.label} as {what}.") from None


def price_lines(text: str) -> dict[str, float]:
    """`INSTANCE=USD_PER_HOUR` lines (or comma-separated) as a mapping: the form's prices box."""
    prices: dict[str, float] = {}
    for line in text.replace(",", "\n").splitlines():
        if line.strip():
            inst, _, usd = line.partition("=")
            try:
                prices[inst.strip()] = float(usd)
            except ValueError:
                raise InputError(
                    f"Price line {line.strip()[:60]!r} is not INSTANCE=USD_PER_HOUR.",
                    "write e.g. trn1.32xlarge=21.5.",
                ) from None
    return prices
