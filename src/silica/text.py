"""How figures read in sentences, for every layer that writes them (advise reasons, reports, the CLI).

Money with the sign before the dollar ("-$226"), paybacks that never read "0.0 months", efforts in
engineer-weeks with the right plural. Presentation only: no arithmetic beyond rounding.
"""

from __future__ import annotations

__all__ = ["money", "money_short", "months", "percent", "weeks"]


def money(value: float | None) -> str:
    """Whole dollars; a value that rounds to zero reads "$0", never "-$0"."""
    if value is None:
        return "-"
    return f"-${-value:,.0f}" if round(value) < 0 else f"${abs(value) if round(value) == 0 else value:,.0f}"


def money_short(value: float | None) -> str:
    """Money sized for a chart label or a narrow cell: $3.45M, $12.3k, $1,234 is $1.23k, $0.123.

    Three significant figures, never scientific notation ("3.45e+06" reads as noise to a buyer).
    """
    if value is None:
        return "-"
    sign, mag = ("-" if round(value, 3) < 0 else ""), abs(value)
    for limit, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if mag >= limit * 0.9995:
            return f"{sign}${mag / limit:.3g}{suffix}"
    if mag >= 100:
        return f"{sign}${mag:.0f}"
    return f"{sign}${mag:.3g}" if mag else "$0"


def percent(share: float | None) -> str:
    """A share as a whole percent; one that rounds to zero reads "0%", never "-0%"."""
    if share is None:
        return "-"
    return "0%" if round(share * 100) == 0 else f"{share:.0%}"


def months(value: float | None) -> str:
    if value is None:
        return "never"
    if value < 0.1:
        return "< 0.1 months"
    return f"{value:.1f} months"


def weeks(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "none"
    return f"{value:g} engineer-week" if value == 1 else f"{value:g} engineer-weeks"
