"""What every claim check shares: the catalog, the standard workloads, a cache of planner results, and
the helpers that turn estimates into comparable figures (cost per million tokens, throughput per instance).

The helpers below `Context` build the graded figures and the one-line summaries that most checks end
with, so that every check grades and words its figures the same way.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from silica import cost
from silica.advise.claims import (
    ClaimResult,
    ClaimsFile,
    ClaimSpec,
    ClaimVerdict,
    Figure,
    HoldsAt,
    combine,
    grade,
)
from silica.catalog import load_catalog, price_for
from silica.catalog.schema import Catalog, PurchaseOption
from silica.errors import SilicaError
from silica.plan import compare
from silica.results import Estimate, InferenceEstimate, TrainingEstimate
from silica.workload import InferenceWorkload, TrainingWorkload

__all__ = [
    "CannotRun",
    "Context",
    "breakeven",
    "cannot_run",
    "divide",
    "graded_figure",
    "graded_result",
    "holds_if",
    "ratio_figure",
    "reduction",
    "result",
    "summary",
]


class CannotRun(Exception):
    """A check stops: Silica's model finds no feasible layout for `what`; `check_claims` reports it."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class Context:
    """The catalog, the standard workloads and a cache of planner results shared by all checks."""

    def __init__(self, data: ClaimsFile, catalog: Catalog | None = None) -> None:
        self.data = data
        self.catalog = catalog if catalog is not None else load_catalog()  # a user's --price applies
        self.tolerance = data.tolerance
        self._cache: dict[tuple[str, str], Estimate | None] = {}

    def workload(self, wid: str) -> tuple[str, InferenceWorkload | TrainingWorkload]:
        w = self.data.workloads[wid]
        if w["task"] == "inference":
            return w["model"], InferenceWorkload(
                input_len=w["input_len"],
                output_len=w["output_len"],
                ttft_slo_ms=w.get("ttft_ms"),
                tpot_slo_ms=w.get("tpot_ms"),
            )
        return w["model"], TrainingWorkload(
            seq_len=w["seq_len"], tokens=float(w["tokens"]), deadline_days=w["deadline_days"]
        )

    def best(self, wid: str, instance: str) -> Estimate | None:
        """The planner's best layout of `instance` for workload `wid` (None when it cannot run it)."""
        key = (wid, instance)
        if key not in self._cache:
            model, wl = self.workload(wid)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # infeasible rows carry their reason
                try:
                    found = compare(
                        model, wl, instances=[instance], catalog=self.catalog, option=self.data.prices
                    )
                    self._cache[key] = found.results[0] if found.results[0].feasible else None
                except SilicaError:
                    self._cache[key] = None
        return self._cache[key]

    def pair(self, wid: str, subject: str, reference: str) -> tuple[Estimate, Estimate]:
        """The best layouts of `subject` and `reference` on workload `wid`; `CannotRun` if either has none.

        Most checks compare two instances workload by workload and give up as soon as one cannot run.
        """
        s, r = self.best(wid, subject), self.best(wid, reference)
        if s is None or r is None:
            raise CannotRun(f"{subject} or {reference} on {wid}")
        return s, r

    def tokens(self, wid: str) -> float:
        return float(self.data.workloads[wid].get("tokens", 0.0))

    def hours_per_mtok(self, e: Estimate, wid: str) -> float | None:
        """Instance-hours per million tokens (output tokens served, or training tokens)."""
        if isinstance(e, InferenceEstimate):
            return cost.hours_per_million(e.count, e.output_tokens_per_s)
        return (
            e.count * e.train_days * cost.HOURS_PER_DAY / (self.tokens(wid) / 1e6) if e.train_days else None
        )

    def unit_cost(self, e: Estimate, wid: str) -> float | None:
        """USD per million tokens at the instance's price; None when it has none."""
        return cost.usd(e.price.usd_per_hour if e.price is not None else None, self.hours_per_mtok(e, wid))

    def per_instance(self, e: Estimate) -> float | None:
        """Tokens per second one instance contributes (output tokens, or training tokens)."""
        if isinstance(e, InferenceEstimate):
            return e.output_tokens_per_s / e.count if e.output_tokens_per_s else None
        return (e.tokens_per_s_per_chip or 0.0) * e.chips / e.count or None

    @staticmethod
    def train_speed(e: Estimate) -> float | None:
        """Training tokens/s per chip (None for an inference estimate)."""
        return e.tokens_per_s_per_chip if isinstance(e, TrainingEstimate) else None

    def cheapest(self, wid: str, instances: Sequence[str]) -> tuple[float, str] | None:
        """The lowest cost per million tokens among `instances` on `wid`, and which instance has it.

        None when none of them both runs the workload and has a price.
        """
        costs = [(c, i) for i in instances if (e := self.best(wid, i)) and (c := self.unit_cost(e, wid))]
        return min(costs) if costs else None

    def price(self, instance: str, option: PurchaseOption | None = None) -> float | None:
        found = price_for(self.catalog, instance, option=option or self.data.prices)
        return found.usd_per_hour if found else None

    def unit(self, wid: str) -> str:
        return (
            "USD per 1M output tokens"
            if self.data.workloads[wid]["task"] == "inference"
            else "USD per 1M training tokens"
        )


def result(
    spec: ClaimSpec,
    verdict: ClaimVerdict,
    computed: str,
    reason: str,
    figures: list[Figure],
    holds: list[HoldsAt] | None = None,
    notes: list[str] | None = None,
) -> ClaimResult:
    assumptions = [
        "on-demand list prices from the bundled catalog (us-east-1 where listed, as of 2026-01-21)",
        "performance from Silica's calibrated roofline model at each instance's best layout",
        *(notes or []),
    ]
    return ClaimResult(
        spec.id,
        spec.claim,
        spec.made_by,
        spec.where,
        verdict,
        computed,
        reason,
        tuple(figures),
        tuple(holds or []),
        tuple(assumptions),
    )


def graded_result(
    spec: ClaimSpec,
    figures: list[Figure],
    template: str,
    reason: str,
    notes: list[str] | None = None,
) -> ClaimResult:
    """The usual ending of a check: all figures' grades combined, and `summary(figures, template)` as
    what Silica computed."""
    verdict = combine([f.grade for f in figures])
    return result(spec, verdict, summary(figures, template), reason, figures, notes=notes)


def summary(figures: Sequence[Figure], template: str) -> str:
    """The computed figures on one line, each written by `template` (a `str.format` string with the
    fields `name` and `value`); figures Silica could not compute are left out."""
    return "; ".join(template.format(name=f.name, value=f.value) for f in figures if f.value is not None)


def breakeven(instance: str, budget_usd: float, hours: float, meaning: str) -> list[HoldsAt]:
    """The hourly price of `instance` at which `hours` instance-hours cost `budget_usd` (the claim's
    bar), as a one-item list to add to a check's `holds`; empty when no positive price meets it."""
    price = cost.breakeven_price(budget_usd, hours)
    return [] if price is None else [HoldsAt(instance, price, meaning)]


def holds_if(holds: Sequence[HoldsAt]) -> str:
    """The break-even prices on one line, for a claim that turns on a price nobody has published."""
    return "holds if " + "; ".join(f"{h.meaning}: <= ${h.usd_per_hour:,.2f}/h" for h in holds)


def graded_figure(
    name: str, value: float | None, claimed: float, unit: str, tolerance: float, neutral: float = 0.0
) -> Figure:
    """A figure graded against the claimed one; `neutral` is the value that means no effect (0 for cuts
    and gains, 1 for ratios), and the figure keeps it so that `achieved` measures from the same point."""
    return Figure(name, value, claimed, unit, grade(value, claimed, tolerance, neutral), neutral=neutral)


def ratio_figure(name: str, value: float | None, claimed: float, tolerance: float) -> Figure:
    """A graded "N times" figure: a ratio of 1 is no gain at all."""
    return graded_figure(name, value, claimed, "ratio", tolerance, neutral=1.0)


def reduction(new: float | None, old: float | None) -> float | None:
    """How much lower `new` is than `old`, as a fraction of `old`; None unless both are known and non-zero."""
    return 1.0 - new / old if new and old else None


def divide(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def cannot_run(spec: ClaimSpec, what: str) -> ClaimResult:
    return result(spec, "cannot check", "-", f"Silica's model finds no feasible layout for {what}.", [])
