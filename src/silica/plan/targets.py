"""The instance types a plan considers, with their chip, calibration and price resolved once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from silica.catalog import get_instance, load_catalog, price_for
from silica.catalog.schema import Catalog, Chip, Instance, Price, PurchaseOption
from silica.errors import InputError
from silica.models.spec import ModelSpec
from silica.perf.calibration import (
    INHERITANCE,
    INHERITED_OVERRIDES,
    Calibration,
    FamilyParams,
    load_calibration,
)
from silica.plan.grid import divisors

__all__ = ["Target", "legal_tp", "resolve_targets", "tp_choices"]


@dataclass(frozen=True, slots=True)
class Target:
    instance: Instance
    chip: Chip
    params: FamilyParams
    inherited_from: str | None
    price: Price | None
    calibration: Calibration

    @property
    def units_per_instance(self) -> int:
        return self.chip.tp_cores_per_chip * self.instance.chips

    @property
    def is_neuron(self) -> bool:
        return self.chip.vendor == "aws"

    @property
    def calibration_note(self) -> str:
        family = self.chip.family
        if self.inherited_from is None:
            return f"fitted on {family} measurements"
        if self.inherited_from == "defaults":
            return f"{family}: no fitted parameters; uncalibrated defaults"
        rule = INHERITANCE.get(family, ("", "nearest measured family"))[1]
        note = f"{family} has no measurements: parameters inherited from {self.inherited_from} ({rule})"
        for name, (value, why) in INHERITED_OVERRIDES.get(family, {}).items():
            note += f"; {name}={value:g}: {why}"
        return note


def legal_tp(model: ModelSpec, target: Target, limit: int | None = None) -> list[int]:
    """Tensor-parallel degrees this instance can run this model at.

    GPUs split attention heads evenly, so tp must divide the head count. Neuron pads heads up to a
    multiple of tp (a cost the model charges), so any divisor of the instance's NeuronCores works.
    """
    units = target.units_per_instance if limit is None else limit
    options = divisors(units)
    if not target.is_neuron:
        options = [t for t in options if model.n_heads % t == 0]
    return options


def _tp_problem(model: ModelSpec, target: Target, tp: int) -> str:
    if tp > target.units_per_instance or target.units_per_instance % tp:
        unit = "NeuronCores" if target.is_neuron else "GPUs"
        return f"tp={tp} does not divide the {target.units_per_instance} {unit} of {target.instance.id}."
    return f"tp={tp} does not divide {model.id}'s {model.n_heads} attention heads (GPUs split heads evenly)."


def tp_choices(model: ModelSpec, targets: Sequence[Target], tp: int | None) -> list[list[int]]:
    """Legal tp values per target; a tp the user fixed must be legal on every target."""
    choices = []
    for t in targets:
        options = legal_tp(model, t)
        if tp is not None:
            if tp not in options:
                raise InputError(_tp_problem(model, t, tp), f"pick --tp from {options}.")
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
) -> list[Target]:
    catalog = catalog or load_catalog()
    calibration = calibration or load_calibration()
    if instance_ids is None:
        chosen = [i for i in catalog.instances.values() if include_announced or i.status == "available"]
    else:
        chosen = [get_instance(catalog, i) for i in instance_ids]
    targets = []
    for inst in chosen:
        chip = catalog.chips[inst.chip]
        if chip.status == "announced" and not include_announced and instance_ids is None:
            continue
        params, inherited = calibration.for_family(chip.family)
        targets.append(
            Target(
                instance=inst,
                chip=chip,
                params=params,
                inherited_from=inherited,
                price=price_for(catalog, inst.id, option=option, region=region),
                calibration=calibration,
            )
        )
    return targets
