"""Number and text formatting shared by the HTML and Markdown reports (formatting only, no arithmetic
beyond presentation)."""

from __future__ import annotations

import re

__all__ = ["money", "months", "offline", "pct", "price", "weeks"]

_SCHEME = re.compile(r"\bhttps?://", re.IGNORECASE)


def money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


def price(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}/h"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def months(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} months"


def weeks(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g} week" if value == 1 else f"{value:g} weeks"


def offline(text: str) -> str:
    """Source citations as plain text: the scheme is dropped so a saved report never fetches or links out."""
    return _SCHEME.sub("", text)
