"""The few money figures monitor needs, until the shared cost layer owns them (see issue 14)."""

from __future__ import annotations

__all__ = ["HOURS_PER_MONTH", "hourly_usd", "instance_cost", "monthly_usd", "per_million"]

HOURS_PER_MONTH = 730.0  # 8,760 hours a year / 12


def hourly_usd(instances: int, usd_per_instance_hour: float | None) -> float | None:
    return None if usd_per_instance_hour is None else instances * usd_per_instance_hour


def monthly_usd(instances: int, usd_per_instance_hour: float | None) -> float | None:
    hourly = hourly_usd(instances, usd_per_instance_hour)
    return None if hourly is None else hourly * HOURS_PER_MONTH


def instance_cost(instance_hours: float | None, usd_per_instance_hour: float | None) -> float | None:
    if instance_hours is None or usd_per_instance_hour is None:
        return None
    return instance_hours * usd_per_instance_hour


def per_million(usd: float | None, tokens: float | None) -> float | None:
    if usd is None or not tokens:
        return None
    return usd / tokens * 1e6
