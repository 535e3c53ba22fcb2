"""Money from prices and time: the one place where a price meets hours.

Every dollar figure Silica reports is a price per instance-hour times instance-hours, or that
divided by the work it buys. Plan, advise, fleet and monitor call these functions instead of
multiplying on their own, so a month, a million tokens and a run mean the same thing everywhere.
Unknown stays unknown: a missing price (None) gives None, never zero.
"""

from __future__ import annotations

from typing import overload

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "HOURS_PER_DAY",
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "SECONDS_PER_DAY",
    "SECONDS_PER_HOUR",
    "SECONDS_PER_MONTH",
    "breakeven_price",
    "hours_per_million",
    "payback_months",
    "usd",
    "usd_per_hour",
    "usd_per_million",
    "usd_per_million_tokens",
    "usd_per_month",
    "usd_per_run",
]

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
SECONDS_PER_DAY = HOURS_PER_DAY * SECONDS_PER_HOUR
HOURS_PER_YEAR = 365 * HOURS_PER_DAY  # 8,760 h
# A month is a twelfth of a 365-day year: 730 h. It is the month cloud bills are quoted in: the AWS
# Pricing Calculator and AWS's monthly EC2 figures assume 730 hours a month, as do cost tools built
# on them (infracost's default, infracost/infracost issue 1556).
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0
SECONDS_PER_MONTH = HOURS_PER_MONTH * SECONDS_PER_HOUR
TOKENS_PER_MILLION = 1e6


@overload
def usd(usd_per_hour: float, hours: float) -> float: ...
@overload
def usd(usd_per_hour: float | None, hours: float | None) -> float | None: ...
def usd(usd_per_hour: float | None, hours: float | None) -> float | None:
    """Price x hours: what `hours` of something billed at `usd_per_hour` costs."""
    return None if usd_per_hour is None or hours is None else usd_per_hour * hours


@overload
def usd_per_hour(usd_per_instance_hour: float, instances: float) -> float: ...
@overload
def usd_per_hour(usd_per_instance_hour: float, instances: NDArray[np.float64]) -> NDArray[np.float64]: ...
@overload
def usd_per_hour(usd_per_instance_hour: float | None, instances: float) -> float | None: ...
def usd_per_hour(
    usd_per_instance_hour: float | None, instances: float | NDArray[np.float64]
) -> float | NDArray[np.float64] | None:
    """What `instances` cost per hour together (an array of counts gives a spend rate per entry)."""
    return None if usd_per_instance_hour is None else usd_per_instance_hour * instances


@overload
def usd_per_month(usd_per_hour: float, instances: float = 1.0) -> float: ...
@overload
def usd_per_month(usd_per_hour: float | None, instances: float = 1.0) -> float | None: ...
def usd_per_month(usd_per_hour: float | None, instances: float = 1.0) -> float | None:
    """`instances` deployments, each billed at `usd_per_hour`, held for a whole month."""
    return None if usd_per_hour is None else usd_per_hour * instances * HOURS_PER_MONTH


def usd_per_million_tokens(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """USD per 1M tokens for a deployment billed at `usd_per_hour` that moves `tokens_per_s`."""
    if not usd_per_hour or not tokens_per_s or tokens_per_s <= 0:
        return None
    return usd_per_hour / (tokens_per_s * SECONDS_PER_HOUR) * TOKENS_PER_MILLION


def usd_per_million(total_usd: float | None, tokens: float | None) -> float | None:
    """USD per 1M tokens for `tokens` that cost `total_usd` together."""
    if total_usd is None or not tokens:
        return None
    return total_usd / tokens * TOKENS_PER_MILLION


def hours_per_million(instances: float, tokens_per_s: float | None) -> float | None:
    """Instance-hours per 1M tokens: the price-free volume a $/1M figure multiplies by."""
    if not tokens_per_s:
        return None
    return instances / (tokens_per_s * SECONDS_PER_HOUR) * TOKENS_PER_MILLION


def usd_per_run(usd_per_hour: float | None, days: float | None) -> float | None:
    """A run of `days` on a deployment billed at `usd_per_hour`."""
    return None if usd_per_hour is None or days is None else usd_per_hour * days * HOURS_PER_DAY


def breakeven_price(budget_usd: float, instance_hours: float) -> float | None:
    """The price per instance-hour at which `instance_hours` cost exactly `budget_usd` (None if <= 0)."""
    if instance_hours <= 0:
        return None
    price = budget_usd / instance_hours
    return price if price > 0 else None


def payback_months(one_off_usd: float, monthly_saving_usd: float) -> float | None:
    """Months of saving that repay a one-off cost (None when nothing is saved)."""
    return one_off_usd / monthly_saving_usd if monthly_saving_usd > 0 else None
