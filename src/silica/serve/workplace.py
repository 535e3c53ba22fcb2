"""The pages a team works in beside compare and advise: estimate (one deployment with its time and
memory breakdown), catalog (chips, instances and every price with its source and date), jobs
(progress, cancel) and the history's record and diff views.

Each page calls one library function through `silica.api` (settings reach it through the plan
context, as for the CLI) and shows what it returned; `?format=csv` returns the same result's rows as
CSV. A bad value is shown next to its field, under the field's label, with a 400.
"""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, Request
from pydantic import ValidationError
from starlette.responses import HTMLResponse, RedirectResponse, Response

from silica import api
from silica.catalog.schema import PURCHASE_OPTIONS
from silica.cost import HOURS_PER_MONTH
from silica.errors import InputError, SilicaError
from silica.jsonable import plain
from silica.options import form_value, options_for, price_lines
from silica.options import option as declared
from silica.serve import actions
from silica.serve._csv import csv_response
from silica.serve._html import FORM_FIELDS, choices, esc, form_fields, num, page, table
from silica.serve.problems import ProblemError, error_status
from silica.serve.routes import EstimateRequest

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

# name, label, kind (int | float | text), hint, from the one declaration of plan options
# (`silica.options`, through _html.FORM_FIELDS): the labels are what an error names.
_ESTIMATE_FIELDS = form_fields(*(o.name for o in options_for("form", "estimate") if o.name in FORM_FIELDS))
_SELECTS = tuple(o.name for o in options_for("form", "estimate") if o.kind == "choice" and o.name != "task")
_LABELS = {o.name: o.label for o in options_for("form", "estimate")}


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status)


def _error_box(message: str) -> str:
    return f'<div class="error" role="alert"><strong>Cannot do that:</strong> {esc(message)}</div>'


def _csv_link(request: Request, label: str = "Download CSV") -> str:
    query = request.url.query
    joined = f"{query}&format=csv" if query else "format=csv"
    return f'<p class="small"><a href="{esc(request.url.path)}?{esc(joined)}">{esc(label)}</a></p>'


# ---------------------------------------------------------------------------------------------- estimate


def _estimate_values(params: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The form's values as the API's fields, and each bad field's message in the user's words."""
    values: dict[str, Any] = {"task": params.get("task") or "inference"}
    errors: dict[str, str] = {}
    for name in ("model", "on"):
        raw = params.get(name, "").strip()
        if raw:
            values[name] = raw
        else:
            errors[name] = f"{_LABELS[name]} is required."
    for name, *_ in _ESTIMATE_FIELDS:
        try:
            value = form_value(name, params.get(name, ""))
        except InputError as err:
            errors[name] = err.problem
            continue
        if value is not None:
            values[name] = value
    for name in _SELECTS:
        if params.get(name):
            values[name] = params[name]
    try:
        prices = price_lines(params.get("prices", ""))
    except InputError as err:
        errors["prices"] = err.problem
    else:
        if prices:
            values["prices"] = prices
    if params.get("systems", "").strip():
        values["systems"] = params["systems"]
    if values["task"] == "training" and "seq_len" not in values and "seq_len" not in errors:
        errors["seq_len"] = "Sequence length is required for training."
    for o in options_for("form", "estimate"):  # the other task's fields left filled in mean nothing here
        if o.task not in (None, values["task"]):
            values.pop(o.name, None)
    if values["task"] == "inference":
        values.pop("seq_len", None)
    return values, errors


def _pydantic_errors(err: ValidationError) -> dict[str, str]:
    """pydantic's errors keyed by field, each said with the field's label."""
    out: dict[str, str] = {}
    for e in err.errors():
        name = str(e["loc"][0]) if e["loc"] else ""
        label = _LABELS.get(name, name)
        msg = str(e["msg"]).removeprefix("Value error, ").replace("Input should be", "must be")
        out.setdefault(name, f"{label}: {msg[:1].lower()}{msg[1:]}.")
    return out


def _select(name: str, choices: list[tuple[str, str]], chosen: str) -> str:
    opts = "".join(
        f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(t)}</option>' for v, t in choices
    )
    return f'<select id="f-{name}" name="{name}"{{invalid}}>{opts}</select>'


def _field(name: str, control: str, hint: str, errors: dict[str, str]) -> str:
    """A labelled control with its hint and, when it is wrong, its message right under it."""
    error = errors.get(name)
    described = f"h-{name}" + (f" e-{name}" if error else "")
    invalid = (
        f' aria-invalid="true" aria-describedby="{described}"'
        if error
        else f' aria-describedby="{described}"'
    )
    message = f'<small id="e-{name}" class="field-error">{esc(error)}</small>' if error else ""
    return (
        f'<div class="field{" bad" if error else ""}"><label for="f-{name}">{esc(_LABELS[name])}</label>'
        f'{control.replace("{invalid}", invalid)}<small id="h-{name}">{esc(hint)}</small>{message}</div>'
    )


def _estimate_form(params: dict[str, str], errors: dict[str, str]) -> str:
    models = [str(m["id"]) for m in api.models().records()]
    instances = [str(r["instance.id"]) for r in api.instances().records()]
    chosen = params.get("model") or "llama-3.1-8b"
    task = params.get("task") or "inference"
    parts = [
        _field("model", _select("model", [(m, m) for m in models], chosen), "a bundled model", errors),
        _field(
            "on",
            f'<input id="f-on" name="on" list="instances" value="{esc(params.get("on", "trn1.32xlarge"))}"'
            ' autocomplete="off"{invalid}>'
            '<datalist id="instances">'
            + "".join(f'<option value="{esc(i)}">' for i in instances)
            + "</datalist>",
            "INSTANCE or INSTANCExCOUNT, e.g. p5.48xlargex2",
            errors,
        ),
        _field(
            "task", _select("task", [("inference", "inference"), ("training", "training")], task), "", errors
        ),
    ]
    defaults = {"input_len": "1024", "output_len": "256"}
    for name, _, kind, hint in _ESTIMATE_FIELDS:
        mode = "" if kind == "text" else ' inputmode="numeric"'
        value = esc(params.get(name, defaults.get(name, "")))
        parts.append(
            _field(
                name, f'<input id="f-{name}" name="{name}"{mode} value="{value}"{{invalid}}>', hint, errors
            )
        )
    for name in _SELECTS:
        chosen_value = params.get(name, declared(name).default or "")
        parts.append(_field(name, _select(name, choices(name), chosen_value), "", errors))
    parts.append(
        _field(
            "prices",
            f'<textarea id="f-prices" name="prices" rows="2"{{invalid}}>{esc(params.get("prices", ""))}</textarea>',
            "e.g. p5.48xlarge=40.5 (empty: the catalog's prices)",
            errors,
        )
    )
    parts.append(
        _field(
            "systems",
            '<textarea id="f-systems" name="systems" rows="3" spellcheck="false"{invalid}>'
            f"{esc(params.get('systems', ''))}</textarea>",
            "optional: the YAML of --systems; name a system in Instance",
            errors,
        )
    )
    return (
        '<form method="get" action="/estimate" class="grid" aria-label="Estimate" novalidate>'
        + "".join(parts)
        + '<div class="actions"><button type="submit">Estimate</button></div></form>'
    )


def _band(result: dict[str, Any], key: str, spec: str) -> str:
    low, high = result.get(f"{key}_low"), result.get(f"{key}_high")
    if low is None or high is None:
        return "-"
    return f"{num(low, spec)}-{num(high, spec)}"


def _estimate_result(r: dict[str, Any]) -> str:
    """The estimate as the library returned it: headline figures with their p10-p90 bands, the time
    per phase split into its parts, memory per chip, cost with its price's source, energy when the
    chip's power is known, and the assumptions."""
    if not r.get("feasible"):
        reasons = "".join(f"<li>{esc(x)}</li>" for x in r.get("reasons") or [])
        return f'<section aria-label="Result"><h2>Cannot run</h2><ul>{reasons}</ul></section>'
    experts = f" ep{r['ep']}" if (r.get("ep") or 1) > 1 else ""
    price = r.get("price") or {}
    rows = [
        [
            "layout",
            esc(f"tp{r.get('tp')} pp{r.get('pp')}{experts} x{r.get('dp')} on {r.get('chips')} chips"),
            "",
        ],
        ["batch", num(r.get("batch"), ",d"), ""],
    ]
    for key, label, spec in (
        ("ttft_ms", "TTFT (ms)", ",.1f"),
        ("tpot_ms", "TPOT (ms)", ",.2f"),
        ("output_tokens_per_s", "output tokens/s", ",.0f"),
        ("tokens_per_s_per_chip", "tokens/s per chip", ",.0f"),
        ("train_days", "training days", ",.1f"),
        ("usd_per_1m_output_tokens", "$ per 1M output tokens", ",.3f"),
        ("usd_per_run", "$ per run", ",.0f"),
    ):
        if r.get(key) is not None:
            rows.append([esc(label), num(r[key], spec), _band(r, key, spec)])
    rows.append(["$ per hour", num(r.get("usd_per_hour")), ""])
    rows.append([f"$ per month ({HOURS_PER_MONTH:g} h)", num(r.get("usd_per_month"), ",.0f"), ""])
    if r.get("usd_per_hour") is None and r.get("breakeven_usd_per_hour"):
        rows.append(["break-even $ per hour", num(r["breakeven_usd_per_hour"]), ""])
    headline = (
        '<div class="fit">'
        + table(["figure", "estimate", "p10-p90"], rows, numeric=[1, 2], caption="Headline")
        + "</div>"
    )
    price_line = (
        f'<p class="small">Price: ${num(price.get("usd_per_hour"))}/h {esc(price.get("option"))} '
        f"{esc(price.get('region'))}, as of {esc(price.get('as_of'))}; source: {esc(price.get('source'))}.</p>"
        if price
        else '<p class="small">No public price for this instance: cost is unknown.</p>'
    )
    phases = r.get("time") or []
    parts = list(dict.fromkeys(k for p in phases for k in (p.get("parts_ms") or {})))
    time_rows = []
    for p in phases:
        total = float(p.get("ms") or 0.0)
        cells = []
        for k in parts:
            v = (p.get("parts_ms") or {}).get(k)
            share = f" ({100 * v / total:.0f}%)" if v is not None and total > 0 else ""
            cells.append(num(v, ",.2f") + share if v is not None else "-")
        time_rows.append([esc(p.get("phase")), num(p.get("ms"), ",.2f"), *cells])
    time_table = table(
        ["phase", "total ms", *[k.replace("_", "-") + " ms" for k in parts]],
        time_rows,
        numeric=list(range(1, 2 + len(parts))),
        caption="Time per phase, split into its parts (share of the phase)",
    )
    mem = r.get("memory_gib") or {}
    used = sum(float(v) for k, v in mem.items() if k != "capacity" and isinstance(v, int | float))
    mem_rows = [[esc(k.replace("_", " ")), num(v, ",.2f")] for k, v in mem.items()]
    if mem.get("capacity") is not None and "total" not in mem:
        mem_rows.append(["left over", num(float(mem["capacity"]) - used, ",.2f")])
    # The library reports memory per unit: one GPU, or one NeuronCore where a chip has several.
    mem_table = (
        '<div class="fit">'
        + table(
            ["memory", "GiB"], mem_rows, numeric=[1], caption="Memory per unit (a GPU, or a NeuronCore), GiB"
        )
        + "</div>"
    )
    energy = r.get("energy") or {}
    if energy.get("known"):
        keys = [
            k
            for k, v in energy.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and not k.endswith(("_low", "_high"))
        ]
        energy_rows = [
            [esc(k.replace("_", " ")), num(energy[k], ",.4g"),
             f"{num(energy.get(k + '_low'), ',.4g')}-{num(energy.get(k + '_high'), ',.4g')}"
             if energy.get(k + "_low") is not None else ""]
            for k in keys
        ]  # fmt: skip
        energy_html = (
            '<div class="fit">'
            + table(["energy", "value", "p10-p90"], energy_rows, numeric=[1, 2], caption="Energy")
            + "</div>"
            + "".join(f'<p class="small">{esc(s)}</p>' for s in energy.get("sources") or [])
        )
    elif energy:
        energy_html = f"<p>Energy: unknown. {esc(energy.get('reason'))}</p>"
    else:
        energy_html = ""
    assumptions = "".join(f"<li>{esc(a)}</li>" for a in r.get("assumptions") or [])
    settings = r.get("settings") or {}
    origins = ", ".join(
        f"{esc(k)} {esc(v.get('value'))} ({esc(v.get('origin'))})"
        for k, v in settings.items()
        if isinstance(v, dict) and v.get("value") is not None
    )
    return (
        f'<section aria-label="Result"><h2>{esc(r.get("model"))} on '
        f"{esc(r.get('count'))} x {esc(r.get('instance'))} ({esc(r.get('chip'))}, {esc(r.get('engine'))})</h2>"
        f"{headline}{price_line}<h2>Time</h2>{time_table if phases else '<p>No time breakdown.</p>'}"
        f"<h2>Memory</h2>{mem_table}"
        f"{'<h2>Energy</h2>' + energy_html if energy_html else ''}"
        f'<h2>Assumptions</h2><ul class="small">{assumptions}</ul>'
        + (f'<p class="small">From your settings: {origins}.</p>' if origins else "")
        + "</section>"
    )


@router.get("/estimate", response_class=HTMLResponse)
def estimate_page(request: Request) -> Response:
    params = {k: v for k, v in request.query_params.items()}
    title = "Estimate one deployment"
    if not params.get("model") and not params.get("on"):
        return _html(page(title, _estimate_form(params, {}), "/estimate"))
    values, errors = _estimate_values(params)
    body: EstimateRequest | None = None
    try:  # every field is checked, so all the wrong ones are said at once
        body = EstimateRequest(**{"model": "", "on": "", **values})
    except ValidationError as err:
        errors = {**_pydantic_errors(err), **errors}
    if errors or body is None:
        summary = _error_box(f"{len(errors)} field{'s' * (len(errors) > 1)} to correct: see below.")
        return _html(page(title, summary + _estimate_form(params, errors), "/estimate"), 400)
    try:
        data = actions.with_systems(body.systems, api.estimate, **body.plan_kwargs())
    except (SilicaError, ProblemError) as err:
        status = error_status(err)[0] if isinstance(err, SilicaError) else err.status
        return _html(page(title, _error_box(str(err)) + _estimate_form(params, {}), "/estimate"), status)
    if params.get("format") == "csv":
        return csv_response(data, "estimate.csv")
    return _html(
        page(title, _estimate_form(params, {}) + _csv_link(request) + _estimate_result(data), "/estimate")
    )


# ----------------------------------------------------------------------------------------------- catalog


def _catalog_form(params: dict[str, str], regions: list[str], families: list[str]) -> str:
    def select(name: str, label: str, choices: list[str], empty: str) -> str:
        chosen = params.get(name, "")
        opts = "".join(
            f'<option value="{esc(c)}"{" selected" if c == chosen else ""}>{esc(c or empty)}</option>'
            for c in ["", *choices]
        )
        return f'<label for="f-{name}">{label}</label><select id="f-{name}" name="{name}">{opts}</select>'

    return (
        '<form method="get" action="/catalog" class="inline" aria-label="Filter">'
        + select("family", "Vendor or family", families, "all")
        + select("region", "Region", regions, "all regions")
        + select("option", "Purchase option", list(PURCHASE_OPTIONS), "all options")
        + '<button type="submit">Show</button></form>'
    )


@router.get("/catalog", response_class=HTMLResponse)
def catalog_page(request: Request) -> Response:
    """Chips and instance prices, filtered by vendor or family, region and purchase option."""
    params = {k: v for k, v in request.query_params.items()}
    all_chips = api.chips().records()
    families = sorted({str(c["vendor"]) for c in all_chips}) + sorted({str(c["family"]) for c in all_chips})
    all_instances = api.instances().to_dict()["instances"]
    regions = sorted({str(p["region"]) for i in all_instances for p in i.get("prices") or []})
    family = params.get("family") or None
    region, option = params.get("region") or None, params.get("option") or None
    title = "Catalog"
    try:
        if region is not None and region not in regions:
            raise ProblemError(
                400, f"Region {region!r} has no prices in the catalog.", "pick one from the list."
            )
        if option is not None and option not in PURCHASE_OPTIONS:
            raise ProblemError(
                400, f"Purchase option {option!r} is not one of {', '.join(PURCHASE_OPTIONS)}.", "pick one."
            )
        chips = api.chips(family).records()
        instances = api.instances(family).to_dict()["instances"]
    except (SilicaError, ProblemError) as err:
        status = err.status if isinstance(err, ProblemError) else error_status(err)[0]
        form = _catalog_form({}, regions, families)
        return _html(page(title, _error_box(str(err)) + form, "/catalog"), status)
    prices = []
    for inst in instances:
        i = inst["instance"]
        found = [
            p
            for p in inst.get("prices") or []
            if (region is None or p["region"] == region) and (option is None or p["option"] == option)
        ]
        for p in found:
            prices.append({"instance": i["id"], "chip": i["chip"], "chips": i["chips"], **p})
        if not found:
            prices.append({"instance": i["id"], "chip": i["chip"], "chips": i["chips"], "usd_per_hour": None,
                           "region": region or "", "option": option or "", "source": "", "as_of": "",
                           "notes": "no public price in the catalog for this filter"})  # fmt: skip
    what = params.get("table")
    if params.get("format") == "csv":
        if what == "chips":
            return csv_response({"chips": chips}, "chips.csv")
        return csv_response(prices, "prices.csv")
    chip_rows = [
        [esc(c["id"]), esc(c["name"]), esc(c["vendor"]), esc(c["family"]), num(c.get("tflops_bf16"), ",.0f"),
         num(c.get("tflops_fp8"), ",.0f"), num(c.get("hbm_gib"), ",.0f"), num(c.get("hbm_tb_per_s"), ",.2f"),
         esc(c.get("status")), esc(c.get("as_of")), f'<span class="src">{esc(c.get("source"))}</span>']
        for c in chips
    ]  # fmt: skip
    price_rows = [
        [esc(p["instance"]), esc(p["chip"]), num(p["chips"], ",d"), esc(p["region"]), esc(p["option"]),
         num(p["usd_per_hour"], ",.3f") if p["usd_per_hour"] is not None else "no public price",
         esc(p["as_of"]), f'<span class="src">{esc(p["source"] or p.get("notes"))}</span>']
        for p in prices
    ]  # fmt: skip
    query = request.url.query
    base = f"/catalog?{esc(query)}&amp;" if query else "/catalog?"
    body = (
        _catalog_form(params, regions, families)
        + '<div class="catalog">'
        + "<h2>Chips</h2>"
        + f'<p class="small"><a href="{base}format=csv&amp;table=chips">Download chips CSV</a></p>'
        + table(
            [
                "chip",
                "name",
                "vendor",
                "family",
                "bf16 TFLOPS",
                "fp8 TFLOPS",
                "HBM GiB",
                "HBM TB/s",
                "status",
                "as of",
                "source",
            ],
            chip_rows,
            numeric=[4, 5, 6, 7],
            caption=f"{len(chip_rows)} chips (dense peak)",
            sortable=True,
        )
        + "<h2>Instances and prices</h2>"
        + f'<p class="small"><a href="{base}format=csv&amp;table=prices">Download prices CSV</a></p>'
        + table(
            ["instance", "chip", "chips", "region", "option", "$/hour", "as of", "source"],
            price_rows,
            numeric=[2, 5],
            caption=f"{len(price_rows)} prices",
            sortable=True,
        )
        + "</div>"
    )
    return _html(page(title, body, "/catalog"))


# -------------------------------------------------------------------------------------------------- jobs


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    return f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.1f} min"


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(request: Request) -> Response:
    """Every job the server remembers, with its progress; queued and running ones can be cancelled."""
    jobs = request.app.state.jobs.list()
    if request.query_params.get("format") == "csv":
        return csv_response([{**j.to_dict(), "result": None} for j in jobs], "jobs.csv")
    now = time.time()
    rows = []
    for j in jobs:
        pct = None if j.progress is None else 100 * j.progress
        bar = (
            f'<progress max="100" value="{pct:.0f}" aria-label="job {esc(j.id)} progress"></progress> {pct:.0f}%'
            if pct is not None
            else "-"
        )
        ran = (j.finished or now) - j.started if j.started else None
        cancel = (
            f'<form method="post" action="/jobs/{esc(j.id)}/cancel" class="inline-form">'
            f'<button type="submit" aria-label="Cancel job {esc(j.id)}">Cancel</button></form>'
            if j.status in ("queued", "running") and not j.cancel_requested
            else ("stopping" if j.status == "running" else "")
        )
        detail = (j.error or {}).get("detail") or j.stage
        rows.append(
            [f'<a href="/api/v1/jobs/{esc(j.id)}">{esc(j.id)}</a>', esc(j.kind), esc(j.name),
             f'<span class="v">{esc(j.status)}</span>', bar, esc(_ago(ran) if ran is not None else "-"),
             esc(_ago(j.timeout_s) if j.timeout_s else "none"), esc(detail), cancel]
        )  # fmt: skip
    head = ["job", "kind", "file", "status", "progress", "ran", "time limit", "doing / why", "action"]
    body = (
        "<p>Long work (fleet sweeps, calibration fits) runs here one job at a time. A cancelled or "
        'overdue job stops at its next progress report. <a href="/jobs">Refresh</a>.</p>'
        + _csv_link(request)
        + (
            table(head, rows, caption="Newest first", sortable=True)
            if rows
            else "<p>No jobs yet. Start one with <code>POST /api/v1/jobs/fleet-sweep</code> or "
            "<code>POST /api/v1/jobs/calibrate</code>.</p>"
        )
    )
    return _html(page("Jobs", body, "/jobs"))


@router.post("/jobs/{job_id}/cancel")
def cancel_job(request: Request, job_id: str) -> Response:
    """Cancel, then back to the jobs page (post-redirect-get: a reload cancels nothing twice)."""
    request.app.state.jobs.cancel(job_id)
    return RedirectResponse("/jobs", status_code=303)


# ----------------------------------------------------------------------------------------------- history


def _record(request: Request, raw: str) -> Any:
    """A stored record by its id, or a 404 HTML page's error when it is missing or not an id."""
    from silica.serve import actions

    try:
        record_id = int(raw)
    except ValueError:
        raise ProblemError(
            404, f"No record {raw[:30]!r}: an id is a number.", "pick one from /history."
        ) from None
    if not 1 <= record_id <= 2**63 - 1:
        raise ProblemError(404, f"No record {record_id}.", "pick one from /history.")
    try:
        return actions.record(request.app.state.settings, record_id)
    except SilicaError as err:
        if "No record" in err.problem:
            raise ProblemError(
                404, f"No record {record_id} in the store.", "pick one from /history."
            ) from None
        raise


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    if isinstance(value, list) and value and any(isinstance(v, dict | list) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(_flat(v, f"{prefix}{i}."))
        return out
    return {prefix.rstrip("."): value}


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 300 else text[:300] + "..."


@router.get("/history/diff", response_class=HTMLResponse)
def history_diff(request: Request, a: str = "", b: str = "") -> Response:
    """Two stored records side by side: every key of their payloads, the changed ones marked."""
    if not a or not b:
        raise ProblemError(400, "Two records are needed.", "tick two records in /history and press Compare.")
    left, right = _record(request, a), _record(request, b)
    fa = _flat(
        {"kind": left.kind, "name": left.name, "created_at": str(left.created_at), **plain(left.payload)}
    )
    fb = _flat(
        {"kind": right.kind, "name": right.name, "created_at": str(right.created_at), **plain(right.payload)}
    )
    keys = list(dict.fromkeys([*fa, *fb]))
    changed = [k for k in keys if fa.get(k, ...) != fb.get(k, ...)]
    if request.query_params.get("format") == "csv":
        rows = [{"key": k, "a": fa.get(k), "b": fb.get(k), "changed": k in changed} for k in keys]
        return csv_response(rows, f"diff-{left.id}-{right.id}.csv")

    def cell(d: dict[str, Any], k: str) -> str:
        return esc(_short(d[k])) if k in d else "<em>absent</em>"

    changed_rows = [
        ['<span class="changed-mark">changed</span> ' + f"<code>{esc(k)}</code>",
         f'<span class="changed">{cell(fa, k)}</span>', f'<span class="changed">{cell(fb, k)}</span>']
        for k in changed
    ]  # fmt: skip
    same = [k for k in keys if k not in changed]
    same_rows = [[f"<code>{esc(k)}</code>", cell(fa, k), cell(fb, k)] for k in same]
    head = ["key", f"#{left.id}", f"#{right.id}"]
    body = (
        f"<p>#{left.id} ({esc(left.kind)} {esc(left.name)}, {esc(left.created_at.strftime('%Y-%m-%d %H:%M'))} UTC) "
        f"against #{right.id} ({esc(right.kind)} {esc(right.name)}, "
        f"{esc(right.created_at.strftime('%Y-%m-%d %H:%M'))} UTC): {len(changed)} of {len(keys)} keys differ.</p>"
        + _csv_link(request)
        + (table(head, changed_rows, caption="Changed keys") if changed_rows else "<p>No key differs.</p>")
        + (
            f"<details><summary>{len(same)} keys the same in both</summary>"
            + table(head, same_rows, caption="Unchanged keys")
            + "</details>"
            if same_rows
            else ""
        )
    )
    return _html(page(f"Records #{left.id} and #{right.id}", body, "/history"))


@router.get("/history/{record_id}", response_class=HTMLResponse)
def history_record_page(request: Request, record_id: str) -> Response:
    """One stored record: when, what, and its payload as JSON."""
    rec = _record(request, record_id)
    if request.query_params.get("format") == "csv":
        return csv_response([_flat(plain(rec.payload))], f"record-{rec.id}.csv")
    body = (
        f"<p>{esc(rec.kind)} <strong>{esc(rec.name)}</strong>, stored "
        f"{esc(rec.created_at.strftime('%Y-%m-%d %H:%M'))} UTC (batch {esc(rec.batch)}). "
        f'<a href="/api/v1/history/{rec.id}">JSON</a> · <a href="/history/{rec.id}?format=csv">CSV</a></p>'
        f'<pre class="json" tabindex="0" aria-label="Payload">{esc(json.dumps(plain(rec.payload), indent=2, default=str))}</pre>'
    )
    return _html(page(f"Record #{rec.id}", body, "/history"))
