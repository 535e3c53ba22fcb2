"""What `silica catalog chips|instances` list: catalog rows chosen by family, instances with their prices.

The CLI only prints these (as a table or as JSON), so a script gets the same rows as the command.
"""

from __future__ import annotations

from dataclasses import dataclass

from silica.catalog.prices import price_for
from silica.catalog.schema import Catalog, Chip, Instance, Price
from silica.errors import UnknownNameError

__all__ = ["InstanceRow", "chip_rows", "instance_rows"]


@dataclass(frozen=True, kw_only=True)
class InstanceRow:
    """One instance with its chip, every price the catalog has for it, and the one that applies."""

    instance: Instance
    chip: Chip
    prices: tuple[Price, ...]  # every row, in catalog order: on-demand, reserved, spot, capacity block, user
    price: Price | None  # what `price_for` picks with no option (user > on-demand); None = unpriced

    @property
    def hbm_gib_total(self) -> float | None:
        return None if self.chip.hbm_gib is None else self.chip.hbm_gib * self.instance.chips


def chip_rows(catalog: Catalog, family: str | None = None) -> list[Chip]:
    """The catalog's chips, or those of one vendor (nvidia, aws) or calibration family (hopper,
    neuron-v2, ...), in file order."""
    chips = list(catalog.chips.values())
    if family is None:
        return chips
    wanted = family.lower()
    chosen = [c for c in chips if wanted in (c.family, c.vendor)]
    if not chosen:
        raise UnknownNameError(
            "family", family, sorted({c.family for c in chips} | {c.vendor for c in chips})
        )
    return chosen


def instance_rows(
    catalog: Catalog, family: str | None = None, *, region: str | None = None
) -> list[InstanceRow]:
    """Every instance (or those of a vendor, chip family or id prefix: nvidia, hopper, p5, trn2) with
    chip and prices; `price` is the one that applies in `region` (None: the catalog's default)."""
    instances = list(catalog.instances.values())
    if family is not None:
        wanted = family.lower()
        instances = [
            i
            for i in instances
            if wanted in (catalog.chips[i.chip].family, catalog.chips[i.chip].vendor)
            or i.id.startswith(wanted)
        ]
        if not instances:
            known = {c.family for c in catalog.chips.values()} | {c.vendor for c in catalog.chips.values()}
            known |= {i.id.split(".")[0] for i in catalog.instances.values()}
            raise UnknownNameError(
                "family",
                family,
                sorted(known),
                "pass a vendor (nvidia, aws), a chip family (hopper, neuron-v2, ...) or an id prefix (p5, trn1).",
            )
    return [
        InstanceRow(
            instance=inst,
            chip=catalog.chips[inst.chip],
            prices=tuple(p for p in catalog.prices if p.instance == inst.id),
            price=price_for(catalog, inst.id, region=region),
        )
        for inst in instances
    ]
