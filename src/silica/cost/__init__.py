"""Cost: price x hours, $/1M tokens, $/month at a load, $/run, break-even price and payback.

Below `plan`, `advise`, `fleet` and `monitor` in the import order (DESIGN.md: perf -> cost -> plan);
it imports nothing above `silica.results`. No other module multiplies a price by hours or defines a
month.
"""

from silica.cost.money import (
    HOURS_PER_DAY,
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    SECONDS_PER_MONTH,
    breakeven_price,
    hours_per_million,
    payback_months,
    usd,
    usd_per_hour,
    usd_per_million,
    usd_per_million_tokens,
    usd_per_month,
    usd_per_run,
)
from silica.cost.ranking import Ranking

__all__ = [
    "HOURS_PER_DAY",
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "SECONDS_PER_DAY",
    "SECONDS_PER_HOUR",
    "SECONDS_PER_MONTH",
    "Ranking",
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
