"""Hardware that is not an EC2 instance type: a chip and a count, or a system a user describes.

A deployment runs on whole *domains*: the set of chips one fast link joins (an 8-GPU NVLink node, an
NVL72 rack, a Trainium instance). `--on h100x1024` means 1,024 H100s as 128 DGX-H100 nodes joined by
their InfiniBand; `--on gb300x72` is one GB300 NVL72 rack. The catalog keeps one reference domain per
chip as an instance row of kind `system` (with its source); a count smaller than one domain is a part
of it (the same links, fewer chips). A user's own systems come from a YAML file:

    systems:
      - id: my-h100-pod          # the name to pass to --on
        chip: h100               # a chip id from `silica catalog chips`
        chips: 8                 # chips per scale-up domain (node or rack)
        link_gb_per_s: 900       # per chip inside the domain, both directions (default: the chip's)
        network_gbps: 3200       # per domain, to other domains (needed for more than one domain)
        usd_per_hour: 98.0       # per domain (optional: without it Silica reports a break-even price)

Every problem in that file is one line naming the file, the line and the field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from silica._yaml import Located, load_located
from silica.catalog.schema import Catalog, Instance, Price
from silica.errors import InputError, UnknownNameError

__all__ = ["Placement", "chip_system", "is_reference_system", "load_systems", "resolve_on", "spread_system"]

USER_SOURCE = "user systems file"

_FIELDS = {
    "id": "the name to pass to --on",
    "chip": "a chip id from `silica catalog chips`",
    "chips": "chips per scale-up domain",
    "link_gb_per_s": "per-chip link bandwidth inside the domain",
    "network_gbps": "bandwidth from one domain to the others",
    "usd_per_hour": "price of one domain per hour",
    "notes": "free text",
}


@dataclass(frozen=True, slots=True)
class Placement:
    """Where `--on` puts a deployment: `count` x `instance` of `catalog` (which may hold a new row)."""

    catalog: Catalog
    instance: str
    count: int
    note: str | None  # how a chip count was turned into domains, when it was


def is_reference_system(instance: Instance) -> bool:
    """A bundled reference domain (DGX node, NVL72 rack): estimated on request, not ranked by default.

    They carry no price and are not something a cloud user can rent; `compare` ranks them only when
    named with --instance. Systems from a user's file are ranked like instances.
    """
    return instance.kind == "system" and not instance.source.startswith(USER_SOURCE)


def _system_of(catalog: Catalog, chip_id: str) -> Instance | None:
    systems = [i for i in catalog.instances.values() if i.chip == chip_id and i.kind == "system"]
    return systems[0] if systems else None


def chip_system(catalog: Catalog, chip_id: str, chips: int) -> tuple[Instance, int] | None:
    """The reference domain for `chips` chips of `chip_id`, and how many of them; None if unknown.

    A count below one domain is a part of a domain (its links, `chips` chips); a count above it must
    be a whole number of domains.
    """
    system = _system_of(catalog, chip_id)
    if system is None:
        return None
    if chips < system.chips:
        part = replace(
            system,
            id=f"{chip_id}x{chips}",
            chips=chips,
            notes=f"{chips} of the {system.chips} chips of a {system.id}",
        )
        return part, 1
    if chips % system.chips:
        raise InputError(
            f"{chips} x {chip_id} is not a whole number of {system.id} domains ({system.chips} chips each).",
            f"use a multiple of {system.chips}, or describe your own system in a --systems file.",
        )
    return system, chips // system.chips


def spread_system(catalog: Catalog, chip_id: str, chips: int) -> tuple[Instance, int] | None:
    """`chips` spread evenly over the fewest reference domains that hold them, as a measured run on
    a count that is not a whole number of domains used them (128 GB200s as two NVL72 racks of 64):
    (part of a domain, how many). None without a reference domain or when no even split exists."""
    system = _system_of(catalog, chip_id)
    if system is None:
        return None
    domains = -(-chips // system.chips)
    if chips % domains:
        return None
    found = chip_system(catalog, chip_id, chips // domains)
    return None if found is None else (found[0], domains)


def _with(catalog: Catalog, instance: Instance, prices: tuple[Price, ...] = ()) -> Catalog:
    if catalog.instances.get(instance.id) == instance and not prices:
        return catalog
    return replace(
        catalog, instances={**catalog.instances, instance.id: instance}, prices=catalog.prices + prices
    )


def resolve_on(catalog: Catalog, text: str) -> Placement:
    """`INSTANCE`, `INSTANCExCOUNT` (instances), or `CHIPxCOUNT` (chips, in reference domains).

    Ids that end in x<digits> themselves win (`u-p6e-gb200x72` is an UltraServer).
    """
    if text in catalog.instances:
        return Placement(catalog, text, 1, None)
    match = re.fullmatch(r"(.+)x(\d+)", text)
    if match and match.group(1) in catalog.instances:
        return Placement(catalog, match.group(1), _count(match.group(2), text), None)
    if match and match.group(1) in catalog.chips:
        from silica.limits import check

        chip_id, chips = match.group(1), _count(match.group(2), text)
        check("chips", chips, f"the chip count in {text[:60]}")
        found = chip_system(catalog, chip_id, chips)
        if found is None:
            instances = sorted(i.id for i in catalog.instances.values() if i.chip == chip_id)
            raise InputError(
                f"The catalog has no reference system for {chip_id} chips.",
                f"use an instance type ({', '.join(instances) or 'none known'}) or describe the system in a --systems file.",
            )
        system, count = found
        note = f"{chips} x {chip_id} as {count} x {system.id} ({system.chips} chips per domain)"
        return Placement(_with(catalog, system), system.id, count, note)
    if text in catalog.chips:
        raise InputError(f"{text!r} is a chip: say how many.", f"pass --on {text}xCOUNT, e.g. {text}x8.")
    raise UnknownNameError(
        "instance or chip", text, [*catalog.instances, *catalog.chips], "pass INSTANCE[xCOUNT] or CHIPxCOUNT."
    )


def _count(digits: str, text: str) -> int:
    count = int(digits)
    if count < 1:
        raise InputError(
            f"{text}: the count must be at least 1.", "pass INSTANCExCOUNT or CHIPxCOUNT with COUNT >= 1."
        )
    return count


def load_systems(path: Path, catalog: Catalog) -> Catalog:
    """`catalog` with the systems of a user's YAML file added (as instances of kind `system`)."""
    doc = load_located(Path(path))
    if (
        not isinstance(doc.value, dict)
        or not isinstance(doc.value.get("systems"), list)
        or not doc.value["systems"]
    ):
        raise doc.error(
            (), "expected a list under `systems:`.", "see `silica estimate --help` for the format."
        )
    extra = [k for k in doc.value if k != "systems"]
    if extra:
        raise doc.error((extra[0],), "unknown section.", "the file holds one section, `systems:`.")
    today = date.today().isoformat()
    instances = dict(catalog.instances)
    prices = list(catalog.prices)
    for i, raw in enumerate(doc.value["systems"]):
        system, price = _system(doc, i, raw, catalog, instances, today)
        instances[system.id] = system
        if price is not None:
            prices.append(price)
    return replace(catalog, instances=instances, prices=tuple(prices))


def _system(
    doc: Located, i: int, raw: Any, catalog: Catalog, known: dict[str, Instance], today: str
) -> tuple[Instance, Price | None]:
    where: tuple[str | int, ...] = ("systems", i)
    if not isinstance(raw, dict):
        raise doc.error(where, "each system is a mapping of fields.", f"give {', '.join(_FIELDS)}.")
    for key in raw:
        if key not in _FIELDS:
            raise doc.error((*where, key), "unknown field.", f"use only: {', '.join(_FIELDS)}.")
    for key in ("id", "chip", "chips"):
        if key not in raw:
            raise doc.error(
                where, f"missing field {key!r} ({_FIELDS[key]}).", f"add `{key}:` to this system."
            )
    ident = raw["id"]
    if not isinstance(ident, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", ident):
        raise doc.error((*where, "id"), f"{ident!r} is not a name.", "use letters, digits, '.', '_' and '-'.")
    if ident in known:
        raise doc.error((*where, "id"), f"{ident!r} is already in the catalog.", "choose another name.")
    chip = raw["chip"]
    if not isinstance(chip, str) or chip not in catalog.chips:
        err = UnknownNameError("chip", str(chip), catalog.chips)
        raise doc.error((*where, "chip"), err.problem, err.fix or "")
    chips = raw["chips"]
    if isinstance(chips, bool) or not isinstance(chips, int) or chips < 1:
        raise doc.error(
            (*where, "chips"), f"{chips!r} is not a whole number of chips.", "give an integer >= 1."
        )
    from silica.limits import check

    try:  # 10^12 chips would make every layout search run for hours
        check("chips", chips, "chips")
    except InputError as err:
        raise doc.error((*where, "chips"), err.problem, err.fix or "") from None
    numbers = {
        k: _positive(doc, (*where, k), raw[k])
        for k in ("link_gb_per_s", "network_gbps", "usd_per_hour")
        if k in raw
    }
    notes = raw.get("notes", "")
    system = Instance(
        id=ident,
        chip=chip,
        chips=chips,
        kind="system",
        vcpus=None,
        memory_gib=None,
        network_gbps=numbers.get("network_gbps"),
        link_gb_per_s=numbers.get("link_gb_per_s"),
        status="available",
        source=f"{USER_SOURCE} {doc.path.name}, line {doc.line(where)}",
        as_of=today,
        notes=str(notes),
    )
    price = None
    if "usd_per_hour" in numbers:
        price = Price(
            instance=ident,
            region="user",
            option="user",
            usd_per_hour=numbers["usd_per_hour"],
            source=system.source,
            as_of=today,
        )
    return system, price


def _positive(doc: Located, where: tuple[str | int, ...], value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise doc.error(where, f"{value!r} is not a positive number.", "give a number above 0.")
    return float(value)
