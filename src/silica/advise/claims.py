"""Vendor claims, re-derived: what was claimed, what Silica's own model computes, and a verdict.

The claims are data (`data/claims.yaml`), each saying who made it and where; this module holds their
types, the loader and the grading. The checks that re-derive them, and `check_claims` that runs them,
live in `silica.advise.claim_checks` (which imports this module, never the other way round). A claim that needs a price nobody has published (Trainium2,
Trainium3, UltraServers) is "cannot check", and says at what hourly price it would hold, so a reader
can hold a quote against it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from silica.catalog.schema import PURCHASE_OPTIONS, PurchaseOption
from silica.errors import DataFileError

__all__ = [
    "CLAIMS_FILE",
    "VERDICTS",
    "ClaimResult",
    "ClaimSpec",
    "ClaimsReport",
    "Figure",
    "HoldsAt",
    "combine",
    "grade",
    "load_claims",
]

CLAIMS_FILE = Path(__file__).resolve().parent.parent / "data" / "claims.yaml"
ClaimVerdict = Literal["supported", "partly", "not supported", "cannot check"]
VERDICTS: tuple[ClaimVerdict, ...] = ("supported", "partly", "not supported", "cannot check")
Grade = Literal["supported", "partly", "not supported"]


@dataclass(frozen=True)
class Figure:
    """One number Silica computed, next to the number claimed (None when the claim gives none)."""

    name: str
    value: float | None
    claimed: float | None
    unit: str
    grade: Grade | None  # None: shown for context, not graded
    neutral: float = 0.0  # the value that means "no effect": 1 for ratios, 0 for reductions
    lower_is_better: bool = False  # a price claim: below the claimed figure is what was claimed

    @property
    def achieved(self) -> float | None:
        """How much of the claimed effect Silica finds: 1.0 is exactly as claimed."""
        if self.value is None or self.claimed is None or self.claimed == self.neutral:
            return None
        if self.lower_is_better:
            return self.claimed / self.value if self.value else None
        return (self.value - self.neutral) / (self.claimed - self.neutral)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("name", "value", "claimed", "unit", "grade", "neutral")}
        out["achieved"] = self.achieved
        return out


@dataclass(frozen=True)
class HoldsAt:
    """The hourly price (one instance or UltraServer) at or below which an unpriceable claim would hold."""

    instance: str
    usd_per_hour: float
    meaning: str

    def to_dict(self) -> dict[str, Any]:
        return {"instance": self.instance, "usd_per_hour": self.usd_per_hour, "meaning": self.meaning}


@dataclass(frozen=True)
class ClaimSpec:
    id: str
    claim: str
    made_by: str
    where: str
    check: str
    params: dict[str, Any]


@dataclass(frozen=True)
class ClaimResult:
    id: str
    claim: str
    made_by: str
    where: str
    verdict: ClaimVerdict
    computed: str  # one line: what Silica computes
    reason: str  # why this verdict
    figures: tuple[Figure, ...]
    holds_at: tuple[HoldsAt, ...]
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "claim": self.claim,
            "made_by": self.made_by,
            "where": self.where,
            "verdict": self.verdict,
            "computed": self.computed,
            "reason": self.reason,
            "figures": [f.to_dict() for f in self.figures],
            "holds_at": [h.to_dict() for h in self.holds_at],
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True)
class ClaimsReport:
    claims: tuple[ClaimResult, ...]
    workloads: dict[str, dict[str, Any]]
    prices: str
    tolerance: float
    as_of: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "claims": [c.to_dict() for c in self.claims],
            "workloads": self.workloads,
            "prices": self.prices,
            "tolerance": self.tolerance,
            "as_of": self.as_of,
        }


def grade(value: float | None, claimed: float, tolerance: float, neutral: float) -> Grade | None:
    """Grade a computed effect against a claimed one, measured from `neutral` (1 for ratios, 0 for cuts).

    Supported: reaches the claimed effect within `tolerance` of its size. Partly: at least half of it.
    """
    if value is None:
        return None
    wanted, got = claimed - neutral, value - neutral
    if got >= (1.0 - tolerance) * wanted:
        return "supported"
    if got >= 0.5 * wanted:
        return "partly"
    return "not supported"


def combine(grades: Sequence[Grade | None]) -> ClaimVerdict:
    """All graded figures supported: supported; none even partly: not supported; else partly."""
    known = [g for g in grades if g is not None]
    if not known:
        return "cannot check"
    if all(g == "supported" for g in known):
        return "supported"
    if all(g == "not supported" for g in known):
        return "not supported"
    return "partly"


@dataclass(frozen=True)
class ClaimsFile:
    claims: tuple[ClaimSpec, ...]
    workloads: dict[str, dict[str, Any]]
    prices: PurchaseOption
    tolerance: float
    as_of: str


def load_claims(path: Path | None = None) -> ClaimsFile:
    return _load(path or CLAIMS_FILE)


@functools.lru_cache(maxsize=2)
def _load(path: Path) -> ClaimsFile:
    from silica._files import read_text

    text = read_text(path, "claims file", "a claims YAML file")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise DataFileError(
            f"Cannot read claims file {path}: {err}.", "restore silica/data/claims.yaml."
        ) from None
    required = {"version", "as_of", "prices", "tolerance", "workloads", "claims"}
    if not isinstance(data, dict) or set(data) != required:
        raise DataFileError(
            f"Claims file {path} must have exactly: {', '.join(sorted(required))}.", "see the bundled file."
        )
    if data["prices"] not in PURCHASE_OPTIONS:
        raise DataFileError(
            f"Claims file {path}: prices {data['prices']!r}.", f"use one of {PURCHASE_OPTIONS}."
        )
    specs = []
    for row in data["claims"]:
        keys = {"id", "claim", "made_by", "where", "check", "params"}
        if not isinstance(row, dict) or set(row) != keys or not str(row.get("where", "")).strip():
            raise DataFileError(
                f"Claims file {path}: claim {row.get('id') if isinstance(row, dict) else row!r} needs exactly "
                f"{', '.join(sorted(keys))}, with a non-empty `where`.",
                "say who made the claim and where.",
            )
        for name in row["params"].get("workloads", []):
            if name not in data["workloads"]:
                raise DataFileError(
                    f"Claims file {path}: claim {row['id']} uses unknown workload {name!r}.", "define it."
                )
        specs.append(ClaimSpec(**row))
    return ClaimsFile(
        tuple(specs), data["workloads"], data["prices"], float(data["tolerance"]), str(data["as_of"])
    )
