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
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from silica import api
from silica.catalog.schema import PURCHASE_OPTIONS
from silica.jsonable import plain
from silica.perf.stacks import load_stacks
from silica.serve import actions
from silica.serve.problems import ProblemError

__all__ = ["router"]

router = APIRouter(prefix="/api/v1")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkloadFields(_Strict):
    """Inference shapes and SLOs, or training size; the same names as the library's workload fields."""

    task: Literal["inference", "training"] = "inference"
    input_len: int | None = Field(1024, ge=1, le=10_000_000, description="Prompt tokens per request.")
    output_len: int | None = Field(256, ge=0, le=10_000_000, description="Generated tokens per request.")
    batch: int | None = Field(None, ge=1, le=1_000_000)
    ttft_slo_ms: float | None = Field(None, gt=0)
    tpot_slo_ms: float | None = Field(None, gt=0)
    rate_req_per_s: float | None = Field(None, gt=0)
    tokens_per_month: float | None = Field(None, gt=0)
    compute_dtype: str | None = None
    weight_dtype: str | None = None
    seq_len: int | None = Field(None, ge=1, le=10_000_000)
    tokens: float | None = Field(None, gt=0, description="Training tokens.")
    global_batch: int | None = Field(None, ge=1)
    micro_batch: int | None = Field(None, ge=1)
    deadline_days: float | None = Field(None, gt=0)
    # The purchase options and engines are the library's own lists (catalog/schema.py, data/stacks.yaml):
    # the API can offer nothing the library would refuse, and a new one appears here by itself.
    option: str | None = Field(
        None, description=f"Purchase option: {', '.join(PURCHASE_OPTIONS)} (default: from the settings)."
    )
    region: str | None = Field(None, max_length=40)
    prices: dict[str, float] | None = Field(
        None, description="Your prices, instance -> USD per hour.", max_length=200
    )
    engine: str | None = Field(
        None,
        max_length=40,
        description="Serving or training stack (data/stacks.yaml); default: the vendor's.",
    )
    virtual_stages: int | None = Field(
        None, ge=1, le=64, description="Training: model chunks per stage (--vp)."
    )

    @field_validator("option")
    @classmethod
    def _option(cls, value: str | None) -> str | None:
        if value is not None and value not in PURCHASE_OPTIONS:
            raise ValueError(f"unknown purchase option {value!r}; use one of {', '.join(PURCHASE_OPTIONS)}")
        return value

    @field_validator("engine")
    @classmethod
    def _engine(cls, value: str | None) -> str | None:
        if value is not None and value.partition("@")[0] not in load_stacks():  # NAME@RELEASE too
            raise ValueError(f"unknown engine {value!r}; use one of {', '.join(sorted(load_stacks()))}")
        return value

    def workload(self) -> dict[str, Any]:
        skip = {
            "task",
            "option",
            "region",
            "prices",
            "engine",
            "model",
            "on",
            "tp",
            "pp",
            "ep",
            "instances",
            "include_announced",
        }
        fields = self.model_dump(exclude=skip)
        if self.task == "training":
            fields.pop("input_len"), fields.pop("output_len")
        else:
            for key in ("tokens", "global_batch", "micro_batch", "deadline_days", "virtual_stages"):
                fields.pop(key)
        return fields


class EstimateRequest(WorkloadFields):
    model: str = Field(..., max_length=200, examples=["llama-3.1-8b"])
    on: str = Field(..., max_length=200, examples=["trn1.32xlarge", "p5.48xlargex2", "h100x8"])
    tp: int | None = Field(None, ge=1, le=4096)
    pp: int | None = Field(None, ge=1, le=4096)
    ep: int | None = Field(None, ge=1, le=4096, description="Expert parallelism (mixture-of-experts models).")


class CompareRequest(WorkloadFields):
    model: str = Field(..., max_length=200, examples=["llama-3.1-8b"])
    instances: list[str] | None = Field(None, max_length=200)
    include_announced: bool = False


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
    """One deployment: TTFT, TPOT, throughput, memory and cost, or why it cannot run (`silica estimate`)."""
    key = "estimate:" + body.model_dump_json() + _settings_key()
    return await _cache.get(
        key,
        lambda: api.estimate(
            body.model, body.on, task=body.task, tp=body.tp, pp=body.pp, ep=body.ep, option=body.option,
            region=body.region, prices=body.prices, engine=body.engine, **body.workload(),
        ),
    )  # fmt: skip


@router.post("/compare", tags=["plan"])
async def compare(body: CompareRequest) -> Response:
    """Every instance type ranked by cost; infeasible ones keep their reason (`silica compare`)."""
    key = "compare:" + body.model_dump_json() + _settings_key()
    return await _cache.get(
        key,
        lambda: api.compare(
            body.model, task=body.task, instances=body.instances, include_announced=body.include_announced,
            option=body.option, region=body.region, prices=body.prices, engine=body.engine, **body.workload(),
        ),
    )  # fmt: skip


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
