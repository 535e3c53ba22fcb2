"""Silica for notebooks and scripts: the functions `silica serve` calls, with results that tabulate.

    import silica.api as si
    cmp = si.compare("llama-3.1-8b", input_len=1024, output_len=256, tpot_slo_ms=50)
    cmp.to_frame()          # one row per instance type, in rank order (pandas DataFrame)
    cmp.data                # the library's own result object (a `Comparison`)
    cmp.to_dict()           # exactly what `silica compare --json` and `POST /api/v1/compare` return

Every function is a thin call into the library (`silica.plan`, `silica.catalog`, `silica.advise`,
`silica.fleet`, `silica.store`); the wrapper `Result` only serialises. Its rows are the result's main
list (ranked estimates, workloads, claims, chips, ...) with nested mappings flattened into dotted
columns, so a result whose fields change still tabulates. pandas is optional: only `to_frame()`
needs it. Models are bundled registry ids or `ModelSpec`s (a server must never read arbitrary paths);
use `silica.models.load_model(path)` first for a local config.json.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from silica.errors import InputError, UnknownNameError
from silica.jsonable import plain

__all__ = [
    "Result",
    "advise",
    "chips",
    "claims",
    "compare",
    "estimate",
    "fleet_simulate",
    "history",
    "instances",
    "models",
    "records",
]

# The list inside a result that holds its rows, in the order they are looked for.
_ROW_KEYS = ("results", "claims", "workloads", "chips", "instances", "models", "records", "runs")
_MAX_HTML_ROWS = 60


def records(payload: Any) -> list[dict[str, Any]]:
    """The rows of a serialised result: its main list, each row's nested mappings as dotted columns."""
    data = plain(payload)
    rows: list[Any] = [data]
    if isinstance(data, list):
        rows = data
    elif isinstance(data, dict):
        for key in _ROW_KEYS:
            if isinstance(data.get(key), list):
                rows = data[key]
                break
    return [_flatten(r) if isinstance(r, dict) else {"value": r} for r in rows]


def _flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


class Result:
    """A library result with the three views a notebook wants: the object, its JSON, its rows."""

    def __init__(self, data: Any, title: str = "") -> None:
        self.data = data
        self.title = title

    def to_dict(self) -> Any:
        """The JSON-ready result: the same document the CLI's `--json` and the HTTP API return."""
        return plain(self.data)

    def records(self) -> list[dict[str, Any]]:
        """One flat dict per row (ranked estimates, workloads, claims, ...)."""
        return records(self.data)

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame (pandas is optional; install it to use this)."""
        try:
            import pandas as pd
        except ImportError:
            raise InputError(
                "to_frame() needs pandas, which is not installed.", "pip install pandas, or use .records()."
            ) from None
        return pd.DataFrame.from_records(self.records())

    def __len__(self) -> int:
        return len(self.records())

    def __repr__(self) -> str:
        return f"<silica Result {self.title or type(self.data).__name__}: {len(self)} rows>"

    def _repr_html_(self) -> str:
        """Jupyter renders this: the rows as an HTML table (first rows, scalar columns)."""
        rows = self.records()
        columns = [c for c in dict.fromkeys(k for r in rows for k in r) if not _is_list_column(rows, c)]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns) + "</tr>"
            for r in rows[:_MAX_HTML_ROWS]
        )
        more = (
            f"<p>{len(rows) - _MAX_HTML_ROWS} more rows: use .to_frame().</p>"
            if len(rows) > _MAX_HTML_ROWS
            else ""
        )
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _is_list_column(rows: Sequence[Mapping[str, Any]], column: str) -> bool:
    return any(isinstance(r.get(column), list) for r in rows)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def _model(model: Any) -> Any:
    """A bundled model id (never a path: the same functions run behind an HTTP server) or a ModelSpec."""
    from silica.models import ModelSpec, list_models, load_model

    if isinstance(model, ModelSpec):
        return model
    from silica.models.registry import unknown_model

    known = list_models()
    if not isinstance(model, str):
        raise InputError(
            f"A model is a bundled model id, not {type(model).__name__}.", "pass e.g. 'llama-3.1-8b'."
        )
    if model not in known:
        if "/" in model or "\\" in model or model.endswith(".json"):
            raise UnknownNameError(
                "model", model, known, "pass a bundled model id (`silica models`); paths are not read here."
            )
        raise unknown_model(model)  # the registry's own message, word for word what the CLI prints
    return load_model(model)


def _context(
    prices: Mapping[str, float] | None,
    option: str | None,
    region: str | None,
    engine: str | None,
    systems: str | Path | None = None,
) -> Any:
    """The plan context for one call: these arguments over the user's settings (`silica.context`)."""
    from silica.context import plan_context

    price = [f"{k}={v}" for k, v in prices.items()] if prices else None
    return plan_context(
        region=region, option=option, price=price, engine=engine, systems=systems, given_as="argument"
    )


def _workload(task: str, kw: Mapping[str, Any]) -> Any:
    from silica.workload import InferenceWorkload, TrainingWorkload

    if task == "inference":
        given = _only(kw, {*InferenceWorkload.__dataclass_fields__} - {"task"}, "inference")
        missing = [k for k in ("input_len", "output_len") if k not in given]
        if missing:  # the dataclass would raise a TypeError, which is no message for a notebook user
            raise InputError(
                f"An inference workload needs {' and '.join(missing)}.",
                "pass e.g. input_len=1024, output_len=256.",
            )
        return InferenceWorkload(**given)
    if task == "training":
        allowed = set(TrainingWorkload.__dataclass_fields__) - {"task"}
        if kw.get("seq_len") is None:
            raise InputError("Training needs a sequence length.", "pass seq_len, e.g. seq_len=8192.")
        return TrainingWorkload(**_only(kw, allowed, "training"))
    raise InputError(f"Unknown task {task!r}.", "use task='inference' or task='training'.")


def _only(kw: Mapping[str, Any], allowed: set[str], task: str) -> dict[str, Any]:
    given = {k: v for k, v in kw.items() if v is not None}
    extra = sorted(set(given) - allowed)
    if extra:
        raise InputError(
            f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} not a field of the {task} workload.",
            f"use only {', '.join(sorted(allowed))}.",
        )
    return given


def _energy_setting(name: str, value: float | None) -> float | None:
    """An energy setting checked against its declared range (`silica.options`), as the CLI checks it."""
    from silica.options import check_option

    checked: float | None = check_option(name, value, name)
    return checked


def estimate(
    model: Any,
    on: str,
    *,
    task: str = "inference",
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    cp: int | None = None,
    option: str | None = None,
    region: str | None = None,
    prices: Mapping[str, float] | None = None,
    engine: str | None = None,
    systems: str | Path | None = None,
    pue: float | None = None,
    usd_per_mwh: float | None = None,
    **workload: Any,
) -> Result:
    """One deployment (`on` = INSTANCE[xCOUNT] or CHIPxCOUNT): speed, memory and cost, or why not.

    `engine`: the serving or training stack (trtllm, vllm, vllm-neuron, nemo, ...); None: the vendor's
    recommended one. Unset option, region and prices come from the user's settings (`silica config`),
    as on the command line; the result's `settings` says which applied."""
    from silica.catalog import resolve_on
    from silica.plan import estimate as run
    from silica.workload import Deployment

    spec = _model(model)
    wl = _workload(task, workload)
    context = _context(prices, option, region, engine, systems)
    placement = resolve_on(context.catalog, on)
    result = run(
        spec,
        wl,
        Deployment(instance=placement.instance, count=placement.count, tp=tp, pp=pp, ep=ep, cp=cp),
        catalog=placement.catalog,
        context=context,
        pue=_energy_setting("pue", pue),
        usd_per_mwh=_energy_setting("usd_per_mwh", usd_per_mwh),
    )
    return Result(result, f"{spec.id} on {on}")


def compare(
    model: Any,
    *,
    task: str = "inference",
    instances: Sequence[str] | None = None,
    include_announced: bool = False,
    option: str | None = None,
    region: str | None = None,
    prices: Mapping[str, float] | None = None,
    engine: str | None = None,
    systems: str | Path | None = None,
    rank: str = "cost",
    pue: float | None = None,
    usd_per_mwh: float | None = None,
    **workload: Any,
) -> Result:
    """Every instance type ranked by cost (priced, then unpriced, then infeasible with its reason), or by
    `rank` = energy | carbon | tokens-per-mw (serving).

    Unset option, region and prices come from the user's settings, as for `estimate`."""
    from silica.plan import compare as run

    spec = _model(model)
    wl = _workload(task, workload)
    result = run(
        spec,
        wl,
        instances=list(instances) if instances else None,
        include_announced=include_announced,
        context=_context(prices, option, region, engine, systems),
        objective=rank,  # type: ignore[arg-type]  # checked by plan.compare
        pue=_energy_setting("pue", pue),
        usd_per_mwh=_energy_setting("usd_per_mwh", usd_per_mwh),
    )
    return Result(result, f"{spec.id}: {task}, ranked by {rank}")


def chips(family: str | None = None) -> Result:
    """The catalog's chips (specs with source and date)."""
    from silica.catalog import chip_rows

    return Result({"chips": chip_rows(_context(None, None, None, None).catalog, family)}, "chips")


def instances(family: str | None = None) -> Result:
    """The catalog's instances with chips and every price (source and date on each)."""
    from silica.catalog import instance_rows

    return Result({"instances": instance_rows(_context(None, None, None, None).catalog, family)}, "instances")


def models() -> Result:
    """The bundled models: kind, parameters, layers, context, source."""
    from silica.models import list_models, load_model

    return Result({"models": [load_model(m) for m in list_models()]}, "bundled models")


def advise(inventory: Any, *, settings: Sequence[str] = ()) -> Result:
    """Per-workload verdicts with payback for an inventory (a path or a loaded `Inventory`).

    `settings`: decision thresholds (NAME=VALUE). Prices, option and region the inventory does not
    set come from the user's settings, as for `silica advise`."""
    from silica.advise import advise as run
    from silica.advise import load_inventory, parse_settings
    from silica.context import plan_context

    if isinstance(inventory, str | Path):
        inventory = load_inventory(inventory, plan_context())
    return Result(run(inventory, settings=parse_settings(list(settings))), "advice")


def claims(ids: Sequence[str] | None = None) -> Result:
    """The vendors' claims, each re-derived with Silica's own model."""
    from silica.advise import check_claims

    return Result(check_claims(list(ids) if ids else None), "claims")


def fleet_simulate(path: str | Path, policies: Sequence[str] | None = None) -> Result:
    """Simulate a fleet file under its own policies (or the ones named); one row per policy."""
    from silica.context import plan_context
    from silica.fleet import simulate_file

    sim = simulate_file(path, list(policies) if policies else None, catalog=plan_context().catalog)
    return Result(sim, "fleet simulation")


def history(kind: str | None = None, limit: int = 50) -> Result:
    """What the store keeps (SILICA_DB_URL or SQLite in the data directory), newest first."""
    from silica.store import history as run

    if not 1 <= limit <= 100_000:
        raise InputError(f"limit must be 1-100000, got {limit}.", "pass a smaller limit.")
    return Result({"records": run(kind, limit)}, f"history ({kind or 'all kinds'})")
