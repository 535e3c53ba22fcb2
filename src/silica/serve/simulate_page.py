"""The web app's simulate page: one deployment under Poisson load, its tails at the offered rate and
its latency-vs-rate charts (`silica simulate` in a form). It shows what `simulate.curve.simulate_load`
returns, drawn by the reports' chart code (`report.simulate.latency_figures`); a GET form, so a result
can be linked. A bad value re-renders the form with the library's one line and a 4xx status.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, Response

from silica import api
from silica.errors import InputError, SilicaError
from silica.serve._html import esc, num, page, table
from silica.serve.problems import error_status

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

# name -> (label, default, kind, hint)
_NUMBERS: dict[str, tuple[str, str, type, str]] = {
    "rate": ("Request rate (req/s)", "2", float, "Poisson arrivals per second."),
    "input_len": ("Input tokens", "1024", int, "Prompt tokens per request."),
    "output_len": ("Output tokens", "256", int, "Generated tokens per request."),
    "requests": ("Requests", "1000", int, "Requests simulated (at most 5,000 here)."),
}


# Fields that are plan options (silica.options) are read as that option; `requests` is the page's own.
_DECLARED = {"rate": "rate_req_per_s", "input_len": "input_len", "output_len": "output_len"}


def _select(name: str, label: str, values: list[str], chosen: str) -> str:
    opts = "".join(
        f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>' for v in values
    )
    return f'<div class="field"><label for="f-{name}">{label}</label><select id="f-{name}" name="{name}">{opts}</select></div>'


def _form(params: dict[str, str]) -> str:
    models = [str(m["id"]) for m in api.models().records()]
    rows = api.instances().to_dict()["instances"]
    instances = sorted({str(r["instance"]["id"]) for r in rows if r["instance"].get("kind") == "instance"})
    fields = "".join(
        f'<div class="field"><label for="f-{n}">{esc(label)}</label>'
        f'<input id="f-{n}" name="{n}" inputmode="decimal" value="{esc(params.get(n, default))}" '
        f'aria-describedby="h-{n}"><small id="h-{n}">{esc(hint)}</small></div>'
        for n, (label, default, _, hint) in _NUMBERS.items()
    )
    return (
        '<form method="get" action="/simulate" class="grid" aria-label="Simulate">'
        + _select("model", "Model", models, params.get("model") or "llama-3.1-8b")
        + _select("on", "Instance type", instances, params.get("on") or "g6e.xlarge")
        + fields
        + '<div class="actions"><button type="submit">Simulate</button></div></form>'
    )


def _values(params: dict[str, str]) -> dict[str, Any]:
    """The form's numbers read as every form reads them (`options.form_value`: `,` and `_` allowed,
    one line naming the field when not a number); ranges are the library's (`simulate_load`)."""
    from silica.options import form_value

    out: dict[str, Any] = {}
    for name, (label, default, kind, _) in _NUMBERS.items():
        declared = _DECLARED.get(name)
        raw = params.get(name) or default
        if declared is not None:
            out[name] = form_value(declared, raw)
            continue
        text = raw.replace(",", "").replace("_", "").strip()
        try:
            out[name] = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise InputError(f"{label}: {text[:40]!r} is not {what}.", f"give {label} as {what}.") from None
    return out


def _result(result: Any, curve: Any) -> str:
    from silica.report.simulate import latency_figures

    rows = [
        [esc(name), *(num(v, ",.1f") for v in (p.p50, p.p90, p.p99, p.mean))]
        for name, p in (
            ("TTFT", result.ttft),
            ("time between tokens", result.tbt),
            ("end to end", result.e2e),
            ("queue", result.queue),
        )
    ]
    facts = (
        f"<p>{esc(result.deployment)}: {result.completed:,} of {result.requests:,} requests, "
        f"{result.throughput_req_s:.2f} req/s served, busy {100 * result.utilisation:.0f}%, "
        f"KV cache peak {100 * result.kv_peak:.0f}%, {result.preemptions} preemptions.</p>"
    )
    head = f"At {result.request_rate:.2f} requests per second (ms)"
    return (
        f'<section aria-label="Simulation">{facts}'
        + table(["ms", "p50", "p90", "p99", "mean"], rows, numeric=range(1, 5), caption=head)
        + '<div class="latency-vs-rate">'
        + "".join(latency_figures(curve))
        + "</div></section>"
    )


@router.get("/simulate", response_class=HTMLResponse)
def simulate_page(request: Request) -> Response:
    from silica.simulate.curve import MAX_WEB_REQUESTS, simulate_load

    params = dict(request.query_params.items())
    title = "Simulate a deployment under load"
    if not params.get("model"):
        return HTMLResponse(page(title, _form(params), "/simulate"))
    try:
        result, curve = simulate_load(
            params["model"],
            params.get("on") or "g6e.xlarge",
            **_values(params),
            max_requests=MAX_WEB_REQUESTS,
        )
    except SilicaError as err:
        box = f'<div class="error" role="alert"><strong>Cannot do that:</strong> {esc(str(err))}</div>'
        return HTMLResponse(page(title, box + _form(params), "/simulate"), error_status(err)[0])
    return HTMLResponse(page(title, _form(params) + _result(result, curve), "/simulate"))
