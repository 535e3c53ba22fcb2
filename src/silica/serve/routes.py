"""The HTTP API, `/api/v1/...`: each endpoint parses its input, calls one library function (through
`silica.api`, the notebook API) and returns the result's `to_dict()`, the document `--json` prints.

Pure questions (estimate, compare, catalog, models, claims) depend only on their input and the bundled
data, which a process never reloads, so their serialised answers are cached by request.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from silica import api
from silica.errors import InputError
from silica.jsonable import plain
from silica.options import PLAN_OPTIONS, check_option, option
from silica.serve import actions
from silica.serve.problems import ProblemError

__all__ = ["router"]

router = APIRouter(prefix="/api/v1")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _field(name: str) -> Any:
    """The pydantic field of a declared plan option (`silica.options`): its default, limits, length
    and description; choices are checked by `_choices` and listed in the schema when it is built."""
    o = option(name)
    kw: dict[str, Any] = {"description": o.help}
    if o.kind in ("int", "float"):
        kw["gt" if o.low_open else "ge"] = o.low
        if o.high is not None:
            kw["le"] = o.high
        if o.kind == "float":
            kw["allow_inf_nan"] = False
    if o.max_length is not None:
        kw["max_length"] = o.max_length
    if o.choices is not None:
        choices = o.choices

        def _enum(schema: dict[str, Any]) -> None:
            schema["enum"] = [*choices(), *([None] if o.default is None else [])]

        kw["json_schema_extra"] = _enum
    return Field(... if o.required else o.default, **kw)


_CHOICES = tuple(o.name for o in PLAN_OPTIONS if o.kind == "choice" and "http" in o.doors)


class WorkloadFields(_Strict):
    """The plan options both endpoints take (`silica.options`): workload, prices, engine, systems."""

    task: Literal["inference", "training"] = _field("task")
    input_len: int | None = _field("input_len")
    output_len: int | None = _field("output_len")
    batch: int | None = _field("batch")
    ttft_slo_ms: float | None = _field("ttft_slo_ms")
    tpot_slo_ms: float | None = _field("tpot_slo_ms")
    rate_req_per_s: float | None = _field("rate_req_per_s")
    tokens_per_month: float | None = _field("tokens_per_month")
    compute_dtype: str | None = _field("compute_dtype")
    weight_dtype: str | None = _field("weight_dtype")
    seq_len: int | None = _field("seq_len")
    tokens: float | None = _field("tokens")
    global_batch: int | None = _field("global_batch")
    micro_batch: int | None = _field("micro_batch")
    virtual_stages: int | None = _field("virtual_stages")
    deadline_days: float | None = _field("deadline_days")
    prices: dict[str, float] | None = _field("prices")
    option: str | None = _field("option")
    region: str | None = _field("region")
    engine: str | None = _field("engine")
    systems: str | None = _field("systems")
    pue: float | None = _field("pue")
    usd_per_mwh: float | None = _field("usd_per_mwh")

    @field_validator(*_CHOICES, check_fields=False)
    @classmethod
    def _choices(cls, value: Any, info: ValidationInfo) -> Any:
        """A choice the library's own list holds (the purchase options, dtypes, engines, ...)."""
        try:
            return check_option(str(info.field_name), value)
        except InputError as err:
            raise ValueError(f"{err.problem.split(': ', 1)[-1]} {err.fix}") from None

    def plan_kwargs(self) -> dict[str, Any]:
        """The `silica.api` keywords these fields make: only the given ones, only the task's own."""
        skip = {"systems", *(o.name for o in PLAN_OPTIONS if o.task not in (None, self.task))}
        return {k: v for k, v in self.model_dump(exclude=skip).items() if v is not None}


class EstimateRequest(WorkloadFields):
    model: str = _field("model")
    on: str = _field("on")
    tp: int | None = _field("tp")
    pp: int | None = _field("pp")
    ep: int | None = _field("ep")
    cp: int | None = _field("cp")


class CompareRequest(WorkloadFields):
    model: str = _field("model")
    instances: list[str] | None = _field("instances")
    include_announced: bool = _field("include_announced")
    rank: str = _field("rank")


class _Cache:
    """Serialised answers by request, newest kept. A hit is answered on the event loop at once; a miss
    is computed in a worker thread, once, however many clients ask the same question meanwhile."""

    def __init__(self, size: int = 512) -> None:
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._pending: dict[str, asyncio.Future[bytes]] = {}
        self._size = size

    async def get(self, key: str, make: Callable[[], Any]) -> Response:
        body = self._items.get(key)
        if body is not None:
            self._items.move_to_end(key)
            return Response(body, media_type="application/json")
        pending = self._pending.get(key)
        if pending is not None:
            return Response(await asyncio.shield(pending), media_type="application/json")
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            body = await run_in_threadpool(lambda: json.dumps(plain(make())).encode())
        except BaseException as err:
            future.set_exception(err)
            future.exception()  # retrieved: waiting clients re-raise it, nobody else needs to
            raise
        finally:
            del self._pending[key]
        future.set_result(body)
        self._items[key] = body
        while len(self._items) > self._size:
            self._items.popitem(last=False)
        return Response(body, media_type="application/json")


_cache = _Cache()


def _json(result: Any) -> Response:
    return Response(json.dumps(plain(result)).encode(), media_type="application/json")


@router.get("/health", tags=["server"])
def health(request: Request) -> dict[str, Any]:
    """Liveness, and the kind of store (open without a token, so no path or URL: `history` names it)."""
    display = actions.store_display(request.app.state.settings)
    return {"status": "ok", "database": display.split(":", 1)[0].split("+", 1)[0]}


@router.post("/estimate", tags=["plan"])
async def estimate(body: EstimateRequest) -> Response:
    """One deployment: TTFT, TPOT, throughput, memory and cost, or why it cannot run (`silica estimate`).

    `systems` is a systems file's text (the YAML `--systems` reads): its systems can be named in `on`."""
    key = "estimate:" + body.model_dump_json() + _settings_key()
    kwargs = body.plan_kwargs()
    return await _cache.get(key, lambda: actions.with_systems(body.systems, api.estimate, **kwargs))


@router.post("/compare", tags=["plan"])
async def compare(body: CompareRequest) -> Response:
    """Every instance type ranked by cost; infeasible ones keep their reason (`silica compare`).

    `systems` is a systems file's text (the YAML `--systems` reads): its systems are ranked too."""
    key = "compare:" + body.model_dump_json() + _settings_key()
    kwargs = body.plan_kwargs()
    return await _cache.get(key, lambda: actions.with_systems(body.systems, api.compare, **kwargs))


def _settings_key() -> str:
    """The user's settings as part of a cache key: an answer made under other settings is another answer."""
    from silica.config import config_path, load_settings
    from silica.perf.overlay import overlay_path

    stamps = []
    for path in (config_path(), overlay_path(), load_settings().prices_path):
        try:
            stamps.append(f"{path}:{path.stat().st_mtime_ns}" if path is not None else "")
        except OSError:
            stamps.append("")
    return json.dumps([load_settings().to_dict(), stamps])


_FAMILY = Query(None, max_length=60, description="A chip family (hopper) or instance id prefix (p5).")


@router.get("/catalog/chips", tags=["catalog"])
async def catalog_chips(family: str | None = _FAMILY) -> Response:
    """Chips: dense peak compute, memory, links, each with source and date (`silica catalog chips`)."""
    return await _cache.get(f"chips:{family}", lambda: api.chips(family))


@router.get("/catalog/instances", tags=["catalog"])
async def catalog_instances(family: str | None = _FAMILY) -> Response:
    """Instances with chips and every price, each with source and date (`silica catalog instances`)."""
    return await _cache.get(f"instances:{family}", lambda: api.instances(family))


@router.get("/models", tags=["catalog"])
async def models() -> Response:
    """The bundled models (`silica models`)."""
    return await _cache.get("models", api.models)


@router.get("/scan/{model}", tags=["scan"])
async def scan_registry(model: str) -> Response:
    """Neuron readiness of a bundled model (`silica scan MODEL`; needs the scan extra)."""
    return await _cache.get(f"scan:{model}", lambda: actions.scan_registry(model))


@router.post("/scan", tags=["scan"])
async def scan_upload(request: Request, config: Annotated[UploadFile, File()]) -> Response:
    """Neuron readiness of an uploaded Hugging Face config.json."""
    data = await actions.read_upload(request, config)
    return _json(await actions.in_thread(actions.scan_config, data, config.filename))


_FORMAT = Literal["json", "html", "md"]


@router.post("/advise", tags=["advise"])
async def advise(
    request: Request,
    inventory: Annotated[UploadFile | None, File(description="Inventory YAML.")] = None,
    text: Annotated[str | None, Form(description="Inventory YAML as text (instead of a file).")] = None,
    scans: Annotated[list[UploadFile] | None, File(description="Scan files the inventory names.")] = None,
    settings: Annotated[list[str] | None, Form(alias="set", description="NAME=VALUE overrides.")] = None,
    format: Annotated[_FORMAT, Form()] = "json",
    store: Annotated[bool, Form(description="Keep the results in the store, like the CLI.")] = True,
) -> Response:
    """Per-workload verdicts with payback for an uploaded inventory; the report as JSON, HTML or Markdown."""
    upload = await actions.inventory_upload(request, inventory, text, scans or [])
    run = await actions.in_thread(actions.advise, request.app.state, upload, settings or [], store)
    if format == "html":
        return HTMLResponse(run.html)
    if format == "md":
        return PlainTextResponse(run.markdown, media_type="text/markdown; charset=utf-8")
    return _json({**plain(run.advice), "stored_ids": run.stored_ids, "reports": run.links})


@router.get("/claims", tags=["advise"])
async def claims(
    format: _FORMAT = "json", id: Annotated[list[str] | None, Query(max_length=50)] = None
) -> Response:
    """Vendor claims re-derived with Silica's own model (`silica claims`)."""
    ids = tuple(id or ())
    if format == "json":
        return await _cache.get(f"claims:{ids}", lambda: api.claims(ids))
    from silica.catalog import load_catalog
    from silica.report import Meta, claims_html, claims_markdown, price_facts

    result = (await run_in_threadpool(api.claims, ids)).data
    meta = Meta(f"GET /api/v1/claims?format={format}", price_facts(load_catalog()))
    if format == "html":
        return HTMLResponse(claims_html(result, meta))
    return PlainTextResponse(claims_markdown(result, meta), media_type="text/markdown; charset=utf-8")


@router.post("/fleet/simulate", tags=["fleet"])
async def fleet_simulate(request: Request, fleet: Annotated[UploadFile, File()]) -> Response:
    """Simulate a small uploaded fleet file (`silica fleet simulate`); large ones go to a sweep job."""
    data = await actions.read_upload(request, fleet)
    return _json(await actions.in_thread(actions.fleet_simulate, data, fleet.filename))


@router.post("/jobs/fleet-sweep", status_code=202, tags=["jobs"])
async def job_fleet_sweep(request: Request, fleet: Annotated[UploadFile, File()]) -> dict[str, Any]:
    """Start `silica fleet sweep` on an uploaded fleet file; poll the returned status_url."""
    data = await actions.read_upload(request, fleet)
    return actions.submit_sweep(request.app.state, data, fleet.filename).to_dict()


@router.post("/jobs/calibrate", status_code=202, tags=["jobs"])
async def job_calibrate(request: Request, measurements: Annotated[UploadFile, File()]) -> dict[str, Any]:
    """Start `silica calibrate` on an uploaded measurements CSV; the result is the calibration JSON."""
    data = await actions.read_upload(request, measurements)
    return actions.submit_calibration(request.app.state, data, measurements.filename).to_dict()


@router.get("/jobs", tags=["jobs"])
def jobs(request: Request) -> dict[str, Any]:
    """Every job the server remembers, newest first (results left out; get one job for its result)."""
    jobs: list[Any] = request.app.state.jobs.list()
    return {"jobs": [{**j.to_dict(), "result": None} for j in jobs]}


@router.get("/jobs/{job_id}", tags=["jobs"])
def job(request: Request, job_id: str) -> dict[str, Any]:
    """A job's status; its result once done, its problem once failed."""
    found: dict[str, Any] = request.app.state.jobs.get(job_id).to_dict()
    return found


@router.post("/jobs/{job_id}/cancel", tags=["jobs"])
def job_cancel(request: Request, job_id: str) -> dict[str, Any]:
    """Cancel a job: a queued one never starts, a running one stops at its next progress report."""
    found: dict[str, Any] = request.app.state.jobs.cancel(job_id).to_dict()
    return found


@router.get("/history", tags=["store"])
def history(
    request: Request,
    kind: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> Response:
    """What the store keeps, newest first (`silica history`); pilot and monitor runs are kinds here."""
    return _json(actions.history(request.app.state.settings, kind, limit))


_MAX_RECORD_ID = 2**63 - 1  # SQLite's INTEGER and PostgreSQL's BIGINT


@router.get("/history/{record_id}", tags=["store"])
def history_record(request: Request, record_id: int) -> Response:
    """One stored record in full (`silica history --id N`)."""
    if not 1 <= record_id <= _MAX_RECORD_ID:  # a larger integer overflows the database's (a 500 before)
        raise ProblemError(
            400, f"Record id {record_id} is not an id the store can hold.", "use an id from /api/v1/history."
        )
    return _json(actions.record(request.app.state.settings, record_id))


@router.get("/pilot", tags=["store"])
def pilot(request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> Response:
    """Stored `silica pilot` results, newest first."""
    return _json(actions.history(request.app.state.settings, "pilot", limit))


@router.get("/monitor", tags=["store"])
def monitor(request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> Response:
    """Stored `silica monitor` results, newest first."""
    return _json(actions.history(request.app.state.settings, "monitor", limit))
