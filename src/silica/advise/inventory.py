"""The inventory: what a team runs today, read from YAML and checked field by field.

Every error names the file, the line and the field, and says how to fix it: a typo in line 40 of a
60-workload inventory should not cost the user a search. Checking is complete before anything is
computed or stored, so a bad inventory leaves nothing behind. Numbers must be finite (`.inf` and `.nan`
are refused).

An inference load is `requests_per_s` or `tokens_per_month`, and `tokens_per_month` counts OUTPUT
(generated) tokens only: requests_per_s x output_len x 2,628,000 seconds a month. Prompt tokens are
described by `input_len` and are not part of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from silica._yaml import Located, Path_, load_located
from silica.advise.scanfile import ScanSummary, read_scan
from silica.catalog import Catalog, load_catalog, price_for
from silica.catalog.schema import Dtype, PurchaseOption
from silica.context import PlanContext
from silica.errors import SilicaError
from silica.models import load_model
from silica.models.spec import ModelSpec
from silica.workload import InferenceWorkload, TrainingWorkload

__all__ = ["Constraints", "Current", "Inventory", "WorkloadSpec", "load_inventory"]

Task = Literal["inference", "training"]
MAX_WORKLOADS = 1_000  # each workload is a full planner search; a team's inventory has tens


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class _Team(_Strict):
    engineer_usd_per_week: float = Field(gt=0)


class _Pricing(_Strict):
    option: PurchaseOption | None = None
    region: str | None = None
    prices: str | None = None  # a prices file (CSV or YAML), relative to the inventory


class _InferenceLoad(_Strict):
    input_len: int = Field(gt=0)
    output_len: int | None = Field(default=None, ge=0)  # may be omitted (or 1) for an encoder
    tokens_per_month: float | None = Field(default=None, gt=0)  # OUTPUT tokens a month
    requests_per_s: float | None = Field(default=None, gt=0)
    dtype: Dtype = "bf16"
    weight_dtype: Dtype | None = None


class _TrainingLoad(_Strict):
    tokens: float = Field(gt=0)
    seq_len: int = Field(gt=0)
    deadline_days: float | None = Field(default=None, gt=0)
    global_batch: int | None = Field(default=None, gt=0)
    runs_per_month: float | None = Field(default=None, gt=0)
    dtype: Dtype = "bf16"


class _Slo(_Strict):
    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)


class _Current(_Strict):
    instance: str | None = None
    count: int = Field(default=1, ge=1)
    monthly_usd: float | None = Field(default=None, gt=0)
    usd_per_hour: float | None = Field(default=None, gt=0)  # the team's own price for one instance


class _Constraints(_Strict):
    multi_cloud: bool = False
    cuda_only_deps: bool = False
    scan: str | None = None


class _Workload(_Strict):
    name: str = Field(min_length=1)
    model: str = Field(min_length=1)
    task: Task
    load: dict[str, Any]
    slo: _Slo | None = None
    current: _Current
    constraints: _Constraints = _Constraints()


class _Inventory(_Strict):
    team: _Team | None = None
    pricing: _Pricing = _Pricing()
    rules: dict[str, Any] = Field(default_factory=dict)
    workloads: list[_Workload] = Field(min_length=1)


@dataclass(frozen=True)
class Current:
    """Where a workload runs today: an instance fleet, a monthly bill, or both (the bill wins for cost)."""

    instance: str | None
    count: int
    monthly_usd: float | None
    usd_per_hour: float | None  # per instance, from the team or the catalog; None when unknown


@dataclass(frozen=True)
class Constraints:
    multi_cloud: bool
    cuda_only_deps: bool
    scan: ScanSummary | None


@dataclass(frozen=True)
class WorkloadSpec:
    """One validated workload, ready for the planner."""

    name: str
    model: ModelSpec
    task: Task
    workload: InferenceWorkload | TrainingWorkload
    current: Current
    constraints: Constraints
    runs_per_month: float | None  # training only; None: derived from the current deployment
    line: int


@dataclass(frozen=True)
class Inventory:
    path: Path
    engineer_usd_per_week: float | None  # None: the rules' default applies
    option: PurchaseOption | None
    region: str | None
    catalog: Catalog
    rule_overrides: dict[str, Any]
    rule_lines: dict[str, int]
    workloads: tuple[WorkloadSpec, ...]
    raw: dict[str, Any]
    context: PlanContext | None = None  # the user's settings under the inventory's own `pricing:`

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "inventory": self.raw}

    def input_files(self) -> tuple[Path, ...]:
        """Every file this inventory made Silica read: itself, its prices file, each scan file and
        each model given as a path. A report written over any of them would destroy an input."""
        base = self.path.parent
        files = [self.path]
        pricing = self.raw.get("pricing")
        if isinstance(pricing, dict) and isinstance(pricing.get("prices"), str):
            files.append(base / pricing["prices"])
        for w in self.raw.get("workloads") or ():
            if not isinstance(w, dict):
                continue
            constraints = w.get("constraints")
            if isinstance(constraints, dict) and isinstance(constraints.get("scan"), str):
                files.append(base / constraints["scan"])
            model = w.get("model")
            if isinstance(model, str) and Path(model).exists():
                files.append(Path(model))
        return tuple(files)


def load_inventory(path: str | Path, context: PlanContext | None = None) -> Inventory:
    """Read and check an inventory; the first problem found raises `DataFileError` naming its line.

    `context`: the user's settings (`silica.context`). The inventory's own `pricing:` wins over them;
    where it says nothing, the context's prices, option, region and calibration apply.
    """
    doc = load_located(Path(path))
    if not isinstance(doc.value, dict):
        raise doc.error((), "an inventory is a mapping with a `workloads:` list.", _EXAMPLE)
    if "pools" in doc.value and "workloads" not in doc.value:
        raise doc.error(
            (),
            "this looks like a fleet file (it has pools:), not an inventory.",
            "run `silica fleet simulate` on it.",
        )
    workloads = doc.value.get("workloads")
    if isinstance(workloads, list) and len(workloads) > MAX_WORKLOADS:
        raise doc.error(
            ("workloads",),
            f"{len(workloads):,} workloads, over the limit of {MAX_WORKLOADS:,} for one inventory.",
            "split it into several inventories (each is advised in seconds, not hours).",
        )
    top = _validate(doc, (), doc.value, _Inventory)
    if context is not None:  # the inventory's own pricing over the user's settings
        pricing = top.pricing.model_copy(
            update={
                "option": top.pricing.option or context.option,
                "region": top.pricing.region or context.region,
            }
        )
        top = top.model_copy(update={"pricing": pricing})
    catalog = _catalog(doc, top.pricing) if context is None or top.pricing.prices else context.catalog
    names: dict[str, int] = {}
    specs = []
    for i, raw in enumerate(top.workloads):
        where: Path_ = ("workloads", i)
        if raw.name in names:
            raise doc.error(
                (*where, "name"),
                f"{raw.name!r} is used twice (first on line {names[raw.name]}).",
                "rename one.",
            )
        names[raw.name] = doc.line(where)
        specs.append(_workload(doc, where, raw, catalog, top.pricing))
    return Inventory(
        path=doc.path,
        engineer_usd_per_week=top.team.engineer_usd_per_week if top.team else None,
        option=top.pricing.option,
        region=top.pricing.region,
        catalog=catalog,
        rule_overrides=dict(top.rules),
        rule_lines={k: doc.line(("rules", k)) for k in top.rules},
        workloads=tuple(specs),
        raw=doc.value,
        context=context,
    )


_EXAMPLE = "see examples/inventory.yaml for a complete inventory."


def _validate(doc: Located, where: Path_, value: Any, model: type[_Strict]) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as err:
        first = err.errors()[0]
        loc: Path_ = (*where, *(p for p in first["loc"] if isinstance(p, str | int)))
        if first["type"] == "extra_forbidden":
            owner = _owner(model, first["loc"][:-1])
            known = ", ".join(owner.model_fields) if owner else "see the example"
            raise doc.error(loc, "unknown field.", f"use one of: {known}.") from None
        if first["type"] == "missing":
            raise doc.error(loc, "missing.", f"add it; {_EXAMPLE}") from None
        got = first.get("input")
        raise doc.error(loc, f"{first['msg']} (got {got!r}).", f"correct it; {_EXAMPLE}") from None


def _owner(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The schema class that the field at `loc` belongs to, to list its known fields."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None or isinstance(part, int):
            continue
        info = current.model_fields.get(str(part))
        annotation = getattr(info, "annotation", None)
        args = getattr(annotation, "__args__", (annotation,))
        current = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return current


def _catalog(doc: Located, pricing: _Pricing) -> Catalog:
    if pricing.prices is None:
        return load_catalog()
    prices = (doc.path.parent / pricing.prices).resolve()
    try:
        return load_catalog(prices_path=prices)
    except SilicaError as err:
        raise doc.error(("pricing", "prices"), err.problem, err.fix or "check the prices file.") from None
    except UnicodeDecodeError as err:  # the catalog reader lets a binary file through
        raise doc.error(
            ("pricing", "prices"),
            f"{prices} is not UTF-8 text (byte {err.start}).",
            "give a CSV or YAML prices file saved as UTF-8.",
        ) from None


def _workload(
    doc: Located, where: Path_, raw: _Workload, catalog: Catalog, pricing: _Pricing
) -> WorkloadSpec:
    try:
        model = load_model(raw.model)
    except SilicaError as err:
        raise doc.error((*where, "model"), err.problem, err.fix or "use `silica models`.") from None
    workload, runs = _load(doc, where, raw, model)
    current = _current(doc, (*where, "current"), raw.current, catalog, pricing)
    scan = None
    if raw.constraints.scan is not None:
        scan_path = (doc.path.parent / raw.constraints.scan).resolve()
        try:
            scan = read_scan(scan_path)
        except SilicaError as err:
            raise doc.error((*where, "constraints", "scan"), err.problem, err.fix or "") from None
    return WorkloadSpec(
        name=raw.name,
        model=model,
        task=raw.task,
        workload=workload,
        current=current,
        constraints=Constraints(raw.constraints.multi_cloud, raw.constraints.cuda_only_deps, scan),
        runs_per_month=runs,
        line=doc.line(where),
    )


def _output_len(doc: Located, at: Path_, given: int | None, model: ModelSpec) -> int:
    """The output length to plan with. An encoder (a BERT classifier) generates no tokens, so an omitted
    `output_len` or the `output_len: 1` people write for "one label per request" both mean 0; a decoder
    must say how many tokens it generates."""
    if model.kind == "encoder":
        if given in (None, 0, 1):
            return 0
        raise doc.error(
            (*at, "output_len"),
            f"{model.id} is an encoder: it generates no tokens, so output_len {given} cannot be served.",
            "omit load.output_len (or set it to 0 or 1) for an encoder; it is ranked by prompt tokens per dollar.",
        )
    if given is None:
        raise doc.error((*at, "output_len"), "missing.", f"add it (tokens generated per request); {_EXAMPLE}")
    if given == 0:
        raise doc.error(
            (*at, "output_len"),
            f"0: {model.id} is a decoder and every request generates at least one token.",
            "set load.output_len to 1 or more.",
        )
    return given


def _load(
    doc: Located, where: Path_, raw: _Workload, model: ModelSpec
) -> tuple[InferenceWorkload | TrainingWorkload, float | None]:
    at: Path_ = (*where, "load")
    slo = raw.slo or _Slo()
    try:
        if raw.task == "inference":
            load = _validate(doc, at, raw.load, _InferenceLoad)
            if load.tokens_per_month is None and load.requests_per_s is None:
                raise doc.error(
                    at,
                    "an inference load needs tokens_per_month (output tokens a month) or requests_per_s.",
                    f"add one of them; {_EXAMPLE}",
                )
            output_len = _output_len(doc, at, load.output_len, model)
            return (
                InferenceWorkload(
                    input_len=load.input_len,
                    output_len=output_len,
                    ttft_slo_ms=slo.ttft_ms,
                    tpot_slo_ms=slo.tpot_ms,
                    rate_req_per_s=load.requests_per_s,
                    tokens_per_month=load.tokens_per_month,
                    weight_dtype=load.weight_dtype or load.dtype,
                    compute_dtype=load.dtype,
                ),
                None,
            )
        if raw.slo is not None:
            raise doc.error((*where, "slo"), "latency SLOs apply to inference only.", "remove `slo:`.")
        tload = _validate(doc, at, raw.load, _TrainingLoad)
        return (
            TrainingWorkload(
                seq_len=tload.seq_len,
                tokens=tload.tokens,
                global_batch=tload.global_batch,
                deadline_days=tload.deadline_days,
                compute_dtype=tload.dtype,
            ),
            tload.runs_per_month,
        )
    except SilicaError as err:
        if str(doc.path) in err.problem:
            raise
        problem, fix = in_yaml_terms(err.problem), in_yaml_terms(err.fix or _EXAMPLE)
        if "contradicts" in err.problem and "tokens per month" in err.problem:
            fix = (
                "give only one of load.requests_per_s and load.tokens_per_month; tokens_per_month counts "
                "OUTPUT tokens (requests_per_s x output_len x 2,628,000 s a month), not prompt tokens."
            )
        raise doc.error(at, problem, fix) from None


# The workload library speaks in command-line flags; an inventory names its YAML fields instead.
_FLAG_FIELDS = {
    "--rate": "load.requests_per_s",
    "--tokens-per-month": "load.tokens_per_month",
    "--input-len": "load.input_len",
    "--output-len": "load.output_len",
    "--ttft-slo-ms": "slo.ttft_ms",
    "--tpot-slo-ms": "slo.tpot_ms",
    "--seq-len": "load.seq_len",
    "--tokens": "load.tokens",
    "--global-batch": "load.global_batch",
    "--deadline-days": "load.deadline_days",
    "--dtype": "load.dtype",
}
_FLAG = re.compile(r"--[a-z][a-z0-9-]*")


def in_yaml_terms(text: str) -> str:
    """The library's message with its command-line flags replaced by the inventory's field names."""
    out = _FLAG.sub(lambda m: _FLAG_FIELDS.get(m.group(0), m.group(0)), text)
    return out.replace("contradicts tokens per month", "contradicts load.tokens_per_month")


def _current(doc: Located, at: Path_, raw: _Current, catalog: Catalog, pricing: _Pricing) -> Current:
    if raw.instance is None and raw.monthly_usd is None:
        raise doc.error(
            at, "give `instance` (and `count`) or `monthly_usd`.", "e.g. {instance: p5.48xlarge, count: 2}."
        )
    price = raw.usd_per_hour
    if raw.instance is not None:
        try:
            found = price_for(catalog, raw.instance, option=pricing.option, region=pricing.region)
        except SilicaError as err:
            raise doc.error((*at, "instance"), err.problem, err.fix or "") from None
        if price is None and found is not None:
            price = found.usd_per_hour
        if price is None and raw.monthly_usd is None:
            raise doc.error(
                (*at, "instance"),
                f"{raw.instance} has no public price, so today's cost is unknown.",
                "add `monthly_usd:` (what you pay) or `usd_per_hour:` (your price per instance).",
            )
    return Current(raw.instance, raw.count, raw.monthly_usd, price)
