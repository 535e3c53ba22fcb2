"""The instance types a plan considers, with their chip, calibration and price resolved once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from silica import legality
from silica.catalog import get_instance, is_reference_system, load_catalog, price_for
from silica.catalog.schema import Catalog, Chip, Instance, Price, PurchaseOption
from silica.cost import SECONDS_PER_MONTH, Ranking
from silica.errors import InputError
from silica.models.spec import ModelSpec
from silica.perf.calibration import (
    INHERITED_BAND_WIDENING,
    Calibration,
    FamilyParams,
    clip_band,
    load_calibration,
)
from silica.perf.stacks import Stack, resolve_stack
from silica.results import Band, PriceUsed
from silica.workload import InferenceWorkload, TrainingWorkload

__all__ = [
    "Target",
    "band",
    "check_layout",
    "check_shapes",
    "legal_tp",
    "price_used",
    "ranking",
    "requests_per_s",
    "resolve_targets",
    "tp_choices",
]


@dataclass(frozen=True, slots=True)
class Target:
    instance: Instance
    chip: Chip
    params: FamilyParams
    inherited_from: str | None
    price: Price | None
    calibration: Calibration
    stack: Stack | None = None  # the serving or training stack the estimate assumes
    note: str = ""  # where `params` come from (`Calibration.resolve`)

    @property
    def units_per_instance(self) -> int:
        return self.chip.tp_cores_per_chip * self.instance.chips

    @property
    def is_neuron(self) -> bool:
        return self.chip.vendor == "aws"

    @property
    def engine(self) -> str:
        return self.stack.name if self.stack else ""

    @property
    def calibration_note(self) -> str:
        key = f"{self.chip.family}/{self.engine}"
        overlay = self.calibration.overlay.labels.get(key) if self.calibration.overlay else None
        note = self.note or f"fitted on {self.chip.family} measurements"
        return f"{note}; {overlay}" if overlay else note


def _unit(target: Target) -> str:
    return "NeuronCores" if target.is_neuron else "GPUs"


def legal_tp(model: ModelSpec, target: Target, limit: int | None = None) -> list[int]:
    """Tensor-parallel degrees this instance can run this model at (`legality.legal_tp`)."""
    units = target.units_per_instance if limit is None else limit
    return legality.legal_tp(units, model.n_heads, splits_heads=not target.is_neuron)


def requests_per_s(wl: InferenceWorkload) -> float | None:
    """The request rate a load implies (tokens per month count generated tokens)."""
    if wl.rate_req_per_s is not None:
        return wl.rate_req_per_s
    if wl.tokens_per_month is not None:
        return wl.tokens_per_month / wl.output_len / SECONDS_PER_MONTH
    return None


def ranking(wl: InferenceWorkload | TrainingWorkload) -> Ranking:
    """How deployments for `wl` are ranked: decided here once, carried on the comparison."""
    if isinstance(wl, TrainingWorkload):
        return Ranking(training=True, loaded=False, encoder=False)
    return Ranking(training=False, loaded=requests_per_s(wl) is not None, encoder=wl.output_len == 0)


def check_shapes(model: ModelSpec, wl: InferenceWorkload) -> None:
    """Refuse request shapes the model cannot serve, before any estimate is made."""
    if model.kind == "encoder" and wl.output_len > 0:
        raise InputError(
            f"{model.id} is an encoder: it generates no tokens, so --output-len {wl.output_len} cannot be served.",
            "pass --output-len 0; encoders are ranked by prompt tokens per dollar.",
        )
    if model.kind != "encoder" and wl.output_len == 0:
        raise InputError(
            f"Output length 0: {model.id} is a decoder and every request generates at least one token.",
            "pass --output-len 1 or more.",
        )
    if wl.output_len == 0 and wl.tokens_per_month is not None:
        raise InputError(
            "Tokens per month counts generated tokens, and this workload generates none.",
            "give the load as --rate (requests per second).",
        )
    longest = wl.input_len + wl.output_len
    if model.max_positions and longest > model.max_positions:
        raise InputError(
            f"{model.id} takes at most {model.max_positions} positions; input + output is {longest}.",
            "shorten --input-len/--output-len.",
        )


def check_layout(targets: Sequence[Target], tp_options: Sequence[Sequence[int]], pp: int, count: int) -> None:
    """A fixed tp x pp must fit on the units the deployment has (`legality.check_stages_fit`)."""
    for t, options in zip(targets, tp_options, strict=True):
        units = t.units_per_instance * count
        legality.check_stages_fit(options, pp, units, _unit(t), count, t.instance.id)


def tp_choices(model: ModelSpec, targets: Sequence[Target], tp: int | None) -> list[list[int]]:
    """Legal tp values per target; a tp the user fixed must be legal on every target."""
    choices = []
    for t in targets:
        options = legal_tp(model, t)
        if tp is not None:
            if tp not in options:
                problem = legality.tp_problem(
                    model.id, tp, model.n_heads, t.units_per_instance, _unit(t), t.instance.id
                )
                raise InputError(problem, f"pick --tp from {options}.")
            options = [tp]
        choices.append(options)
    return choices


def resolve_targets(
    instance_ids: Sequence[str] | None = None,
    *,
    catalog: Catalog | None = None,
    calibration: Calibration | None = None,
    option: PurchaseOption | None = None,
    region: str | None = None,
    include_announced: bool = False,
    engine: str | Mapping[str, str] | None = None,
    task: str = "inference",
) -> list[Target]:
    """The instance types to consider, each with its stack, calibration entry and price.

    `engine` None: each chip vendor's recommended stack for `task` (`data/stacks.yaml`). A named
    engine must run on every instance named; over the whole catalog, the instances it cannot run
    on are left out (and naming one that runs nowhere is an error). A mapping {vendor: stack} names
    the stack per chip vendor, the vendors it does not name keeping their default (what `advise
    --engine` uses, so naming today's stack does not hide the other vendor's options).
    """
    catalog = catalog or load_catalog()
    calibration = calibration or load_calibration()  # the user's overlay comes in through the plan context
    if instance_ids is None:
        chosen = [
            i
            for i in catalog.instances.values()
            if (include_announced or i.status == "available") and not is_reference_system(i)
        ]
    else:
        chosen = [get_instance(catalog, i) for i in instance_ids]
    targets = []
    refused: InputError | None = None
    for inst in chosen:
        chip = catalog.chips[inst.chip]
        if chip.status == "announced" and not include_announced and instance_ids is None:
            continue
        try:
            named = engine.get(chip.vendor) if isinstance(engine, Mapping) else engine
            stack = resolve_stack(named, chip.vendor, task, inst.id)
        except InputError as err:
            if instance_ids is not None:
                raise
            refused = err
            continue
        resolved = calibration.resolve(chip.family, stack.name, task)
        key = f"{chip.family}/{stack.name}"
        overlaid = calibration.overlay.params if calibration.overlay else {}  # perf/overlay.py
        params = overlaid.get(key, resolved.params)
        targets.append(
            Target(
                instance=inst,
                chip=chip,
                params=params,
                inherited_from=resolved.inherited_from,
                price=price_for(catalog, inst.id, option=option, region=region),
                calibration=calibration,
                stack=stack,
                note=f"{stack.label} ({stack.name}); "
                + (f"{stack.release_note}; " if stack.release_note else "")
                + resolved.note,
            )
        )
    if not targets and refused is not None:
        raise refused
    return targets


def price_used(target: Target) -> PriceUsed | None:
    """The price an estimate was costed at, with its provenance (None: no public price)."""
    p = target.price
    if p is None:
        return None
    return PriceUsed(p.instance, p.usd_per_hour, p.region, p.option, p.as_of, p.source)


def band(
    target: Target,
    metric: str | tuple[str, ...],
    value: float | None,
    invert: bool = False,
    *,
    floor: float | None = None,
    fastest: float | None = None,
    unmeasured: bool = False,
) -> Band | None:
    """The p10-p90 band of `value` from the validation error of the target's chip family on `metric`,
    cut at the physical bounds (`clip_band`).

    `floor`: a time metric's least possible value. `fastest`: how many times faster than predicted
    the speed that `value` measures (or, with `invert`, that a cost is derived from) could
    physically run; it caps the speed's band high (and so the cost's band low). `unmeasured`: a
    configuration no measured row covers (serving context parallelism): the band widens as an
    inherited stack's does (`INHERITED_BAND_WIDENING`), before the physical clip.
    """
    if value is None:
        return None
    low, high = target.calibration.band(target.chip.family, metric, target.engine or None)
    own = target.calibration.overlay_band(target.chip.family, metric, target.engine or None)
    if unmeasured or (own is None and target.stack is not None and target.stack.unmeasured_release):
        low, high = low**INHERITED_BAND_WIDENING, high**INHERITED_BAND_WIDENING
    if fastest is not None:
        high = min(high, max(fastest, 1.0))
    if invert:  # a cost moves opposite to the speed it is derived from
        return Band(low=value / high, high=value / low)
    lo, hi = clip_band(value, low, high, floor=floor)
    return Band(low=lo, high=hi)
