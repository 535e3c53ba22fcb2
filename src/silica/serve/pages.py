"""The web app: compare calculator, advise, claims, history. Server-rendered HTML over the same
library calls as the API; forms work without JavaScript (silica.js only loads a chosen file into the
edit box). A bad value re-renders the form with the library's one-line message and a 4xx status.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Request, UploadFile
from pydantic import ValidationError
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from silica import api
from silica.errors import InputError, SilicaError
from silica.jsonable import plain
from silica.options import form_value, option, options_for, price_lines
from silica.serve import actions
from silica.serve._html import FORM_FIELDS, bar_band_chart, choices, esc, form_fields, num, page, table
from silica.serve.problems import ProblemError, error_status
from silica.serve.routes import CompareRequest

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

# The compare form's typed-in fields and selects, from the one declaration (`silica.options`).
_FIELDS = form_fields(*(o.name for o in options_for("form", "compare") if o.name in FORM_FIELDS))
_SELECTS = tuple(o.name for o in options_for("form", "compare") if o.kind == "choice" and o.name != "task")


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status)


def _error_box(message: str) -> str:
    return f'<div class="error" role="alert"><strong>Cannot do that:</strong> {esc(message)}</div>'


def _status_of(err: Exception) -> int:
    if isinstance(err, SilicaError):
        return error_status(err)[0]
    if isinstance(err, ProblemError):
        return err.status
    return 400


@router.get("/", response_class=HTMLResponse)
def home() -> HTMLResponse:
    body = (
        '<p>Plan, price and prove AI workloads on AWS Trainium, AWS Inferentia and NVIDIA GPUs.</p><ul class="cards">'
        '<li><a href="/estimate">Estimate</a>: one deployment, its time and memory broken down.</li>'
        '<li><a href="/compare">Compare</a>: every instance type ranked by cost for a model and a load.</li>'
        '<li><a href="/catalog">Catalog</a>: chips, instances and prices with their sources and dates.</li>'
        '<li><a href="/advise">Advise</a>: verdicts with payback for your inventory of workloads.</li>'
        '<li><a href="/claims">Claims</a>: vendor claims re-derived with Silica\'s own model.</li>'
        '<li><a href="/jobs">Jobs</a>: long work (sweeps, calibration fits), its progress; cancel.</li>'
        '<li><a href="/history">History</a>: what this team\'s Silica has kept; search, compare two runs.</li></ul>'
        '<p>Scripts and notebooks: the <a href="/api/v1/openapi.json">HTTP API</a> returns the same '
        "documents as <code>silica ... --json</code>.</p>"
    )
    return _html(page("Silica", body))


def _compare_values(params: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {"model": params.get("model", ""), "task": params.get("task") or "inference"}
    try:
        for name, *_ in _FIELDS:
            value = form_value(name, params.get(name, ""))
            if value is not None:
                values[name] = value
        prices = price_lines(params.get("prices", ""))
    except InputError as err:
        raise ProblemError(400, err.problem, err.fix or "correct the field.") from None
    for name in _SELECTS:
        if params.get(name):
            values[name] = params[name]
    if prices:
        values["prices"] = prices
    if params.get("systems", "").strip():
        values["systems"] = params["systems"]
    return values


def _form(params: dict[str, str]) -> str:
    models = api.models().records()
    chosen = params.get("model") or "llama-3.1-8b"
    opts = "".join(
        f'<option value="{esc(m["id"])}"{" selected" if m["id"] == chosen else ""}>{esc(m["id"])}</option>'
        for m in models
    )
    task = params.get("task") or "inference"
    tasks = "".join(
        f'<option value="{t}"{" selected" if t == task else ""}>{t}</option>'
        for t in ("inference", "training")
    )
    defaults = {"input_len": "1024", "output_len": "256"}
    fields = "".join(
        f'<div class="field"><label for="f-{n}">{esc(label)}</label>'
        f'<input id="f-{n}" name="{n}" inputmode="decimal" value="{esc(params.get(n, defaults.get(n, "")))}" '
        f'aria-describedby="h-{n}"><small id="h-{n}">{esc(hint)}</small></div>'
        for n, label, _, hint in _FIELDS
    )
    selects = "".join(
        f'<div class="field"><label for="f-{n}">{esc(option(n).label)}</label>'
        f'<select id="f-{n}" name="{n}">'
        + "".join(
            f'<option value="{esc(v)}"{" selected" if v == params.get(n, option(n).default or "") else ""}>'
            f"{esc(t)}</option>"
            for v, t in choices(n)
        )
        + "</select></div>"
        for n in _SELECTS
    )
    return (
        '<form method="get" action="/compare" class="grid" aria-label="Compare">'
        f'<div class="field"><label for="f-model">Model</label><select id="f-model" name="model">{opts}</select></div>'
        f'<div class="field"><label for="f-task">Task</label><select id="f-task" name="task">{tasks}</select></div>'
        f"{fields}{selects}"
        f'<div class="field wide"><label for="f-prices">{esc(option("prices").label)}</label>'
        f'<textarea id="f-prices" name="prices" rows="2">{esc(params.get("prices", ""))}</textarea></div>'
        f"{_systems_box(params)}"
        '<div class="actions"><button type="submit">Rank instance types</button></div></form>'
    )


def _systems_box(params: dict[str, str]) -> str:
    """The user's systems, pasted: the YAML `--systems` reads (the form is a GET, so a page of
    results can be linked; a systems file is a few lines)."""
    return (
        f'<div class="field wide"><label for="f-systems">{esc(option("systems").label)}</label>'
        f'<textarea id="f-systems" name="systems" rows="3" spellcheck="false" '
        'placeholder="systems:&#10;  - id: my-h100-pod&#10;    chip: h100&#10;    chips: 8">'
        f"{esc(params.get('systems', ''))}</textarea>"
        "<small>Optional: systems to rank with the catalog (the format of <code>--systems</code>).</small></div>"
    )


def _ranked(result: dict[str, Any]) -> str:
    """The ranking as the library returned it: the cost that ranks the rows comes first in the table
    (so a phone shows it without scrolling) and is what the chart plots, in the same order; options
    whose p10-p90 band overlaps the leader's are marked as ties."""
    training = result.get("task") == "training"
    by = (result.get("ranking") or {}).get("by", "usd_per_1m_output_tokens")
    loaded = by == "usd_per_month"
    units = {
        "usd_per_run": "USD per training run",
        "usd_per_month": "USD a month at this load",
        "usd_per_1m_output_tokens": "USD per 1M output tokens",
        "usd_per_1m_input_tokens": "USD per 1M prompt tokens",
    }
    unit = units.get(by, by)
    short = {"usd_per_run": "$/run", "usd_per_month": "$/month", "usd_per_1m_input_tokens": "$/1M prompt"}
    spec = ",.3f" if by.startswith("usd_per_1m") else ",.0f"
    ranked = {r["rank"]: r for r in result.get("ranked", [])}
    rows: list[list[str]] = []
    mw_bars: list[dict[str, Any]] = []  # output tokens/s per MW, in the table's order
    for rank, r in enumerate(result.get("results", []), 1):
        cost = ranked.get(rank)
        band = "-"
        if cost is not None and cost.get("low") is not None:
            band = f"{num(cost['low'], spec)}-{num(cost.get('high'), spec)}"
        if not r.get("feasible"):
            note = "cannot run: " + "; ".join(r.get("reasons") or [])
        elif r.get("usd_per_hour") is None and r.get("breakeven_usd_per_hour"):
            note = f"unpriced; costs the same as #1 at ${r['breakeven_usd_per_hour']:,.2f}/h"
        elif r.get("usd_per_hour") is None:
            note = "unpriced"
        elif cost is not None and cost.get("tie"):
            note = "tie with #1"
        else:
            note = ""
        experts = f" ep{r['ep']}" if (r.get("ep") or 1) > 1 else ""
        layout = f"tp{r.get('tp')} pp{r.get('pp')}{experts} x{r.get('dp')}" if r.get("feasible") else "-"
        perf = (
            [num(r.get("tokens_per_s_per_chip"), ",.0f"), num(r.get("train_days"), ",.1f")]
            if training
            else [
                num(r.get("ttft_ms"), ",.1f"),
                num(r.get("tpot_ms"), ",.2f"),
                num(r.get("output_tokens_per_s"), ",.0f"),
            ]
        )
        extra = (
            [num(r.get("usd_per_1m_output_tokens"), ",.3f"), num(r.get("instances_for_load"), ",d")]
            if loaded
            else []
        )
        rows.append(
            [str(rank), esc(r.get("instance")), num(None if cost is None else cost["value"], spec), band,
             esc(r.get("count")), esc(r.get("chip")), esc(layout), *perf, num(r.get("usd_per_hour")), *extra,
             *_energy_cells(r.get("energy") or {}, training), esc(note)]
        )  # fmt: skip
        energy = r.get("energy") or {}
        if r.get("feasible") and energy.get("output_tokens_per_s_per_mw") is not None and len(mw_bars) < 12:
            mw_bars.append(
                {
                    "rank": rank,
                    "count": r.get("count"),
                    "instance": r.get("instance"),
                    "value": energy["output_tokens_per_s_per_mw"],
                    "low": energy.get("output_tokens_per_s_per_mw_low"),
                    "high": energy.get("output_tokens_per_s_per_mw_high"),
                }
            )
    head = ["#", "instance", short.get(by, "$/1M out"), "p10-p90", "n", "chip", "layout"]
    head += ["tok/s/chip", "days"] if training else ["TTFT ms", "TPOT ms", "out tok/s"]
    head += ["$/h", *(["$/1M out", "instances"] if loaded else [])]
    head += [*(ENERGY_HEAD_TRAINING if training else ENERGY_HEAD), "note"]
    n_perf = 2 if training else 3
    n_energy = len(ENERGY_HEAD_TRAINING if training else ENERGY_HEAD)
    numeric = [0, 2, 3, 4, *range(7, 7 + n_perf + 1 + 2 * loaded + n_energy)]
    bars = list(ranked.values())[:12]
    ties = sum(1 for b in bars if b.get("tie"))
    title = f"First {len(bars)} in rank order: {unit}, p10-p90 bands" + (
        f"; {ties} tie with #1" if ties else ""
    )
    charts = "".join(bar_band_chart(bars, title=title, unit=unit, compact=c) for c in (False, True))
    mw_title = "Output tok/s per MW of IT power, in the table's order, p10-p90 bands"
    mw_charts = "".join(
        bar_band_chart(mw_bars, title=mw_title, unit="tok/s/MW", money=False, compact=c, key="mw")
        for c in (False, True)
    )
    caption = f"{result.get('model')}: {result.get('task')}, every instance type ranked by {unit}"
    mw_figure = (
        f'<figure class="chart-box" role="group" aria-label="Tokens per MW chart">{mw_charts}</figure>'
        if mw_bars
        else ""
    )
    return (
        f'<section class="ranked" aria-label="Results"><h2>Ranked</h2>'
        f'<figure class="chart-box" role="group" aria-label="Chart">{charts}<figcaption class="small">'
        'Bars in the table\'s order; whiskers are p10-p90 bands. A pale bar, "tie with #1", overlaps the '
        "leader's band: within the model's validation error the two cannot be told apart.</figcaption></figure>"
        f"{mw_figure}"
        f"{table(head, rows, numeric=numeric, caption=caption)}</section>"
    )


ENERGY_HEAD = ["W/inst.", "J/out tok", "out tok/s/MW", "kgCO2e/1M"]
ENERGY_HEAD_TRAINING = ["W/inst.", "J/train tok", "MWh/run"]


def _energy_cells(energy: dict[str, Any], training: bool) -> list[str]:
    """Power, energy per token, tokens per MW and carbon of one option (plan.energy's figures); an
    unpublished chip power shows as dashes, never a number."""
    watts = num(energy.get("instance_power_w"), ",.0f")
    if training:
        return [
            watts,
            num(energy.get("j_per_training_token"), ",.3g"),
            num(energy.get("mwh_per_run"), ",.1f"),
        ]
    return [
        watts,
        num(energy.get("j_per_output_token"), ",.3g"),
        num(energy.get("output_tokens_per_s_per_mw"), ",.0f"),
        num(energy.get("kg_co2e_per_1m_output_tokens"), ",.3g"),
    ]


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request) -> Response:
    params = {k: v for k, v in request.query_params.items()}
    if not params.get("model"):
        return _html(page("Compare instance types", _form(params), "/compare"))
    try:
        body = CompareRequest(**_compare_values(params))
        result = actions.with_systems(body.systems, api.compare, **body.plan_kwargs())
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        msg = f"{where}: {first['msg']}. To fix: correct {where}."
        return _html(page("Compare instance types", _error_box(msg) + _form(params), "/compare"), 400)
    except (SilicaError, ProblemError) as err:
        return _html(
            page("Compare instance types", _error_box(str(err)) + _form(params), "/compare"), _status_of(err)
        )
    if params.get("format") == "csv":
        from silica.serve._csv import csv_response

        return csv_response(result, "compare.csv")
    query = esc(request.url.query)
    csv_link = f'<p class="small"><a href="/compare?{query}&amp;format=csv">Download CSV</a></p>'
    return _html(page("Compare instance types", _form(params) + csv_link + _ranked(result), "/compare"))


def _advise_form() -> str:
    return (
        '<form method="post" action="/advise" enctype="multipart/form-data" class="grid" aria-label="Advise">'
        '<div class="field wide"><label for="f-inventory">Inventory file (YAML)</label>'
        '<input type="file" id="f-inventory" name="inventory" accept=".yaml,.yml,text/yaml" data-edit="f-text"></div>'
        '<div class="field wide"><label for="f-scans">Scan files it names (optional)</label>'
        '<input type="file" id="f-scans" name="scans" multiple accept=".json"></div>'
        '<div class="field wide"><label for="f-text">Or edit the inventory here</label>'
        '<textarea id="f-text" name="text" rows="10" spellcheck="false" '
        'placeholder="workloads:&#10;  - name: chat&#10;    model: llama-3.1-8b&#10;    task: inference"></textarea>'
        "<small>A chosen file is loaded here for editing; the edited text is what is advised.</small></div>"
        '<div class="actions"><button type="submit">Advise</button></div></form>'
    )


@router.get("/advise", response_class=HTMLResponse)
def advise_page() -> HTMLResponse:
    return _html(page("Advise an inventory", _advise_form(), "/advise"))


@router.post("/advise", response_class=HTMLResponse)
async def advise_submit(
    request: Request,
    inventory: Annotated[UploadFile | None, File()] = None,
    text: Annotated[str | None, Form()] = None,
    scans: Annotated[list[UploadFile] | None, File()] = None,
) -> Response:
    try:
        if text and text.strip():
            inventory = None  # the edit box wins: it holds the file's text, maybe edited
        upload = await actions.inventory_upload(request, inventory, text, scans or [])
        run = await actions.in_thread(actions.advise, request.app.state, upload, [], True)
    except (SilicaError, ProblemError) as err:
        return _html(
            page("Advise an inventory", _error_box(str(err)) + _advise_form(), "/advise"), _status_of(err)
        )
    advice = plain(run.advice)
    rows = [
        [esc(w.get("name")), f'<span class="v v-{esc(w.get("verdict"))}">{esc(w.get("verdict"))}</span>',
         num(w.get("current_monthly_usd"), ",.0f"), num(w.get("proposed_monthly_usd"), ",.0f"),
         num(w.get("monthly_savings_usd"), ",.0f"), num(w.get("payback_months"), ",.2f"),
         esc((w.get("reasons") or [""])[0])]
        for w in advice.get("workloads", [])
    ]  # fmt: skip
    head = [
        "workload",
        "verdict",
        "now $/month",
        "proposed $/month",
        "saves $/month",
        "payback months",
        "why",
    ]
    stored = (
        f"Stored {len(run.stored_ids)} records (#{run.stored_ids[0]}-#{run.stored_ids[-1]})."
        if run.stored_ids
        else ""
    )
    body = (
        f'<p class="ok" role="status">Advised {len(rows)} workloads from {esc(upload.name)}. {stored}</p>'
        f'<p><a href="{run.links["html"]}">Open the full report (HTML)</a> · <a href="{run.links["md"]}">Markdown</a></p>'
        + table(head, rows, numeric=[2, 3, 4, 5], caption="Verdicts")
        + "<h2>Advise another</h2>"
        + _advise_form()
    )
    # Post-redirect-get: the result page is kept and the browser is sent to it, so reloading it
    # shows the same page again and stores nothing twice.
    key = request.app.state.reports.add_page(page("Advice", body, "/advise"))
    return RedirectResponse(f"/advise/result/{key}", status_code=303)


@router.get("/advise/result/{key}", response_class=HTMLResponse)
def advise_result(request: Request, key: str) -> HTMLResponse:
    return HTMLResponse(request.app.state.reports.get(key)[0])


@router.get("/reports/{key}.html", response_class=HTMLResponse)
def report_html(request: Request, key: str) -> HTMLResponse:
    return HTMLResponse(request.app.state.reports.get(key)[0])


@router.get("/reports/{key}.md")
def report_md(request: Request, key: str) -> Response:
    return PlainTextResponse(request.app.state.reports.get(key)[1], media_type="text/markdown; charset=utf-8")


@router.get("/claims", response_class=HTMLResponse)
def claims_page() -> HTMLResponse:
    rows = [
        [esc(c.get("id")), esc(c.get("claim")), esc(c.get("made_by")),
         f'<span class="v">{esc(c.get("verdict"))}</span>', esc(c.get("computed")), esc(c.get("reason"))]
        for c in api.claims().records()
    ]  # fmt: skip
    body = (
        '<p>Each vendor claim re-derived with Silica\'s model. <a href="/api/v1/claims?format=html">Full report</a>.</p>'
        + table(
            ["claim", "says", "made by", "verdict", "Silica computes", "why"], rows, caption="Vendor claims"
        )
    )
    return _html(page("Claims", body, "/claims"))


@router.get("/history", response_class=HTMLResponse)
def history_page(request: Request, kind: str | None = None, q: str | None = None) -> Response:
    """The store's records, newest first: filter by kind, search the names and summaries, tick two
    to see them side by side (/history/diff)."""
    from silica.store import KINDS
    from silica.store.summary import summarize

    kind, text = kind or None, (q or "").strip()[:100]
    try:
        found = actions.history(request.app.state.settings, kind, 1000 if text else 200)
    except SilicaError as err:
        return _html(page("History", _error_box(str(err)), "/history"), _status_of(err))
    records = [(r, summarize(r.kind, r.payload)) for r in found["records"]]
    if text:
        needle = text.lower()
        records = [(r, s) for r, s in records if needle in f"{r.kind} {r.name} {s}".lower()][:200]
    if request.query_params.get("format") == "csv":
        from silica.serve._csv import csv_response

        found_rows = [{"id": r.id, "created_at": r.created_at.isoformat(), "kind": r.kind, "name": r.name,
                 "batch": r.batch, "summary": s} for r, s in records]  # fmt: skip
        return csv_response(found_rows, "history.csv")
    kinds = "".join(
        f'<option value="{k}"{" selected" if k == kind else ""}>{k or "all kinds"}</option>'
        for k in dict.fromkeys(("", *KINDS, "pilot"))
    )
    form = (
        '<form method="get" action="/history" class="inline" aria-label="Filter">'
        f'<label for="f-kind">Kind</label><select id="f-kind" name="kind">{kinds}</select>'
        f'<label for="f-q">Search</label><input id="f-q" name="q" type="search" value="{esc(text)}">'
        '<button type="submit">Show</button></form>'
    )
    rows = [
        [f'<input type="checkbox" name="pick" value="{r.id}" aria-label="Pick record {r.id}">',
         f'<a href="/history/{r.id}">{r.id}</a>', esc(r.created_at.strftime("%Y-%m-%d %H:%M")),
         esc(r.kind), esc(r.name), esc(s)]
        for r, s in records
    ]  # fmt: skip
    query = esc(request.url.query)
    csv_link = f'<p class="small"><a href="/history?{query}&amp;format=csv">Download CSV</a></p>'
    listing = (
        '<form method="get" action="/history/pick" aria-label="Compare two records">'
        + table(
            ["pick", "id", "time (UTC)", "kind", "name", "summary"],
            rows,
            numeric=[1],
            caption=f"Newest first, {len(rows)} records",
            sortable=True,
        )
        + '<p><button type="submit">Compare the two ticked records</button></p></form>'
    )
    body = form + (
        csv_link + listing
        if rows
        else "<p>No records found. Runs of advise, claims, fleet sweep, pilot and monitor are kept here.</p>"
    )
    return _html(page("History", body, "/history"))


@router.get("/history/pick")
def history_pick(request: Request) -> Response:
    """The ticked records to the diff page (a form cannot name its fields a and b by ticking)."""
    picked = request.query_params.getlist("pick")
    if len(picked) != 2:
        raise ProblemError(
            400, f"{len(picked)} records were ticked; a comparison takes two.", "tick exactly two records."
        )
    from urllib.parse import urlencode

    return RedirectResponse("/history/diff?" + urlencode({"a": picked[0], "b": picked[1]}), status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_page(next: str = "/") -> HTMLResponse:
    body = (
        '<form method="post" action="/login" class="grid" aria-label="Sign in">'
        f'<input type="hidden" name="next" value="{esc(next)}">'
        '<div class="field wide"><label for="f-token">API token</label>'
        '<input type="password" id="f-token" name="token" autocomplete="current-password"></div>'
        '<div class="actions"><button type="submit">Sign in</button></div></form>'
    )
    return _html(page("Sign in", body))


@router.post("/login")
def login(
    request: Request, token: Annotated[str, Form(max_length=512)], next: Annotated[str, Form()] = "/"
) -> Response:
    from silica.serve.app import COOKIE

    if not request.app.state.settings.token_ok(token):
        return _html(
            page("Sign in", _error_box("That token is not valid. To fix: paste a token the server accepts.")),
            401,
        )
    target = next if next.startswith("/") and not next.startswith("//") else "/"
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return response
