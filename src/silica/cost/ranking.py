"""How a comparison ranks deployments, decided once from the workload and carried on the result.

Training is ranked by USD per run; inference under a stated load by USD per month for the fleet the
load needs; otherwise by USD per 1M generated tokens, or per 1M prompt tokens for an encoder (it
generates none). The planner, the ranking and the CLI's columns all read this one decision.
"""

from __future__ import annotations

from dataclasses import dataclass

from silica.cost.money import HOURS_PER_DAY, HOURS_PER_MONTH, hours_per_million
from silica.results import Estimate, TrainingEstimate

__all__ = ["Ranking"]


@dataclass(frozen=True, slots=True)
class Ranking:
    training: bool
    loaded: bool  # inference with a stated load (requests/s or tokens/month)
    encoder: bool  # inference that generates nothing: judged on prompt tokens

    @property
    def by(self) -> str:
        """The `Estimate` figure the ranking sorts on (lowest first)."""
        if self.training:
            return "usd_per_run"
        if self.loaded:
            return "usd_per_month"
        return "usd_per_1m_input_tokens" if self.encoder else "usd_per_1m_output_tokens"

    def usd(self, e: Estimate) -> float | None:
        """The ranking cost of `e`, as the estimate already carries it (None when unpriced)."""
        value = getattr(e, self.by)
        return None if value is None else float(value)

    def instance_hours(self, e: Estimate) -> float | None:
        """Instance-hours per ranking unit (a run, a month, 1M tokens): the cost at $1 per instance-hour.

        Cost is linear in price, so an unpriced option ties the cheapest at cheapest / instance_hours.
        """
        if isinstance(e, TrainingEstimate):
            return e.train_days * HOURS_PER_DAY * e.count if e.train_days else None
        if self.loaded:
            return (e.instances_for_load or e.count) * HOURS_PER_MONTH
        rate = e.input_tokens_per_s if self.encoder else e.output_tokens_per_s
        return hours_per_million(e.count, rate)

    def to_dict(self) -> dict[str, object]:
        return {"by": self.by, "training": self.training, "loaded": self.loaded, "encoder": self.encoder}
